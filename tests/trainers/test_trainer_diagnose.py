"""The trainer's pathology indicators: logged per step, warned about once, diagnosed from the
out_dir; a mis-set config is diagnosed, the lever the diagnosis names is applied, and it improves."""

from __future__ import annotations

import json
import logging

from typer.testing import CliRunner

from gfcr.apps.cli import app
from gfcr.apps.diagnose import diagnose, load_run
from gfcr.apps.diagnose.pathology import RANK


def test_greedy_sampling_is_diagnosed_and_raising_the_temperature_fixes_it(make_config, caplog):
    """Greedy sampling (`temperature = 0`) gives every group K identical samples: no reward spread,
    no gradient. The diagnosis says so and names `[rollout] temperature`; with it raised, groups vary."""
    from gfcr.trainers import Trainer

    greedy = make_config("greedy", rollout={"temperature": 0.0, "prompts_per_step": 4}, steps=3)
    with caplog.at_level(logging.WARNING, logger="gfcr.trainers.watch"):
        history = Trainer(greedy).train()
    assert [m["rollout/zero_variance_share"] for m in history] == [1.0, 1.0, 1.0]
    warned = [r for r in caplog.records if "rollout/zero_variance_share" in r.getMessage()]
    assert len(warned) == 1  # once, not every step, while it has not cleared
    assert "[control] dynamic_sampling = true" in warned[0].getMessage()

    before = diagnose(load_run([greedy.out_dir])).pathology("zero_variance_groups")
    assert before.severity == "high" and before.evidence["trend"]["mean"] == 1.0
    assert before.levers[0].startswith("raise `[rollout] temperature` (now 0.0)")

    fixed = make_config("fixed", rollout={"temperature": 1.0, "prompts_per_step": 4}, steps=3)  # the lever
    Trainer(fixed).train()
    after = diagnose(load_run([fixed.out_dir])).pathology("zero_variance_groups")
    assert after.evidence["trend"]["mean"] < 0.5
    assert RANK[after.severity] < RANK[before.severity]


def test_indicators_are_logged_every_step(make_config):
    from gfcr.trainers import Trainer
    from gfcr.trainers.logging import read_metrics

    config = make_config(replay={"enabled": True})
    Trainer(config).train()
    logged = read_metrics(config.out_dir)
    keys = ("diagnose/wasted_token_share", "diagnose/rewarded_incorrect_share", "diagnose/truncated_share",
            "diagnose/failed_share", "diagnose/solved_share", "diagnose/replayed_share", "diagnose/replay_lag")  # fmt: skip
    assert all(key in m for m in logged for key in keys)
    assert all(0.0 <= m["diagnose/solved_share"] <= 1.0 for m in logged)
    found = diagnose(load_run([config.out_dir]))
    assert found.criteria["card"]["train"]["model_hash"]  # the trained model's files, hashed
    assert found.criteria["reliability"]["episodes"] == sum(m["rollout/episodes"] for m in logged)
    assert "buffer" in found.pathology("stale_replay").evidence  # replay.db read back
    stages = found.criteria["pipeline"]  # each stage of the rollout pipeline, summed over the steps
    assert stages["generate/episodes"] == sum(m["rollout/episodes"] for m in logged)
    assert stages["choose/prompts"] == 2 * len(logged) and "credit/advantage_abs_mean" in stages


def test_gfcr_train_writes_the_criteria_report(train_toml, tmp_path):
    config = train_toml(steps=2)
    result = CliRunner().invoke(app, ["train", str(config)], terminal_width=200)
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "run" / "criteria.json").read_text())
    assert set(report) == {"pathologies", "criteria"}
    assert {"reliability", "coverage", "cost", "card"} <= set(report["criteria"])
    assert (tmp_path / "run" / "diagnose" / "index.html").exists()
    # a random tiny model never solves ToolUse: every group is flat, and the report says so
    assert "zero_variance_groups (high)" in result.output and "[sft] steps" in result.output


def test_groups_trained_on_length_shaping_alone_are_measured_and_warned_about(caplog):
    """Found measuring ShorterBetter: where every answer of a group is wrong its length term is the
    only spread, GRPO's std normalisation scales it up to whole advantages, and the run trained length
    (21-24 tokens grew to the 32-token cap). The trainer measures such groups and names the levers."""
    from gfcr.core import Step, Trajectory
    from gfcr.filter import group_advantages
    from gfcr.trainers.config import DiagnoseConfig
    from gfcr.trainers.pipeline import StepBatch, rollout_metrics
    from gfcr.trainers.watch import PathologyWatch

    def episode(task_id: str, outcome: float, length_term: float) -> Trajectory:
        t = Trajectory("e", task_id, "?", [Step("x", "", outcome, True, False)])
        t.reward_terms = {"verifier": outcome, "length": length_term}
        return t

    wrong = [episode("wrong", 0.0, -0.001 * n) for n in (2, 5, 9, 3)]  # spread: length alone
    mixed = [episode("mixed", r, -0.001 * n) for r, n in ((1.0, 2), (0.0, 5), (1.0, 9), (0.0, 3))]
    metrics = rollout_metrics(StepBatch({"wrong": wrong, "mixed": mixed}, generated=wrong + mixed))
    assert metrics["diagnose/shaping_only_share"] == 0.5

    lengths_only = [t.reward for t in wrong]
    assert max(abs(group_advantages(lengths_only, "grpo"))) > 1.0  # the 0.007 spread, blown up
    assert max(abs(group_advantages(lengths_only, "dr_grpo"))) < 0.01  # the lever: left at its scale
    with caplog.at_level(logging.WARNING, logger="gfcr.trainers.watch"):
        assert "diagnose/shaping_only_share" in PathologyWatch(DiagnoseConfig()).check(1, metrics)
    (warning,) = [r.getMessage() for r in caplog.records if "shaping_only_share" in r.getMessage()]
    assert "dynamic_sampling = true" in warning and "estimator = 'dr_grpo'" in warning
