"""Each pathology found in a set built to hold it, with evidence and levers; clean sets come out clean."""

from __future__ import annotations

import json

import pytest

from gfcr.apps.diagnose import PATHOLOGIES, diagnose, load_run
from gfcr.replay import ReplayBuffer, ReplayConfig


def severities(found) -> dict[str, str]:
    return {p.name: p.severity for p in found.pathologies}


def test_a_clean_set_raises_no_alarm(write, clean):
    found = diagnose(load_run([write(clean)]))
    assert [p.name for p in found.pathologies] == list(PATHOLOGIES)
    assert set(severities(found).values()) <= {"none"} | {"not_measurable"}
    assert severities(found)["zero_variance_groups"] == "none"  # measurable here, and clean
    assert all(not p.levers for p in found.pathologies)
    assert found.criteria["coverage"]["informative_share"] == 1.0


def test_zero_variance_groups_all_fail_and_all_pass_per_env_and_prompt(write, clean, episode):
    flat = [episode(f"hard{i}", 0.0) for i in range(6) for _ in range(4)]
    flat += [
        episode(f"easy{i}", 1.0, env="gfcr/SQL-v0", signals={"match": True})
        for i in range(2)
        for _ in range(4)
    ]
    found = diagnose(load_run([write(clean[:16] + flat)])).pathology("zero_variance_groups")
    assert found.severity == "medium"  # 8 of 12 groups: 0.67, under the 0.7 of "high"
    assert (found.evidence["zero_variance"], found.evidence["groups"]) == (8, 12)
    assert (found.evidence["all_fail"], found.evidence["all_pass"]) == (6, 2)
    assert found.evidence["by_env"]["gfcr/SQL-v0"] == {"groups": 2, "zero_variance": 2, "share": 1.0}
    assert {p["task"] for p in found.evidence["prompts"]} <= {f"hard{i}" for i in range(6)} | {
        "easy0",
        "easy1",
    }
    assert found.evidence["tokens_on_them"] == 32 * 10
    assert any(
        "[control] dynamic_sampling = true" in lever and "67%" in lever for lever in found.levers
    )


def test_reward_hacking_format_only_truncated_and_constant_answers(write, clean, episode):
    hacked = [episode(f"f{i}", 1.0, correct=False) for i in range(3)]  # format-only: rewarded, not correct
    hacked += [episode(f"c{i}", 1.0, action="\\boxed{0}") for i in range(5)]  # one answer, many prompts
    hacked += [episode("cut", 1.0, truncated=True)]
    found = diagnose(load_run([write(clean + hacked)])).pathology("reward_hacking")
    assert found.severity == "medium"  # the worst check: 5 constant answers of 33 rewarded, 15%
    e = found.evidence
    assert (e["rewarded_incorrect"], e["format_only"], e["repeated_answer"], e["rewarded_truncated"]) == (
        3,
        3,
        5,
        1,
    )
    assert len(e["examples"]["format_only"]) == 3
    assert any("Rubric" in lever for lever in found.levers)
    assert any("in `gfcr train`, enable `[overlong_penalty] enabled = true`" in lever for lever in found.levers)


def test_reward_hacking_seen_by_a_second_verifier(write, episode):
    """The env's recorded reward says solved; Math-v0's verifier, re-run on the same answer, says not."""
    right = episode("mmath/AIME2024/0", 1.0, action="\\boxed{204}")
    wrong = episode("mmath/AIME2024/1", 1.0, action="\\boxed{1}")  # a reward the env should not have paid
    data = load_run([write([right, wrong])], {"split": "AIME2024"})
    found = diagnose(data, reverify_repeats=2)
    hacking = found.pathology("reward_hacking")
    assert hacking.evidence["unbacked_by_reverify"] == 1 and hacking.severity == "high"
    assert hacking.evidence["examples"]["unbacked_by_reverify"] == [wrong.id]
    assert found.criteria["reliability"]["verifier_agreement"] == 0.5
    assert found.criteria["reliability"]["flake_rate"] == 0.0  # wrong, but not flaky
    assert "second_verifier" not in hacking.evidence


def test_length_inflation_from_truncation(write, clean, episode):
    cut = [episode(f"t{i}", 0.0, truncated=True, length=64) for i in range(10)]
    found = diagnose(load_run([write(clean + cut)])).pathology("length_inflation")
    assert found.severity == "medium" and found.evidence["truncated"] == 10  # 10 of 58 episodes: 17%
    assert found.evidence["length_growth"].startswith("not measurable from this input")
    assert any("--max-turns" in lever for lever in found.levers)  # an evaluation: no trainer lever
    assert not any("[overlong_penalty]" in lever for lever in found.levers)


def test_length_inflation_over_training_steps_without_reward(tmp_path):
    pytest.importorskip(
        "torch", reason="training out_dirs are read by the trainer: pip install -e '.[hf,train]'"
    )
    from gfcr.trainers.logging import MetricLogger

    log = MetricLogger(tmp_path, tensorboard=False)
    for step, length in enumerate((10, 14, 19, 25), 1):  # length x2.5, reward flat
        log.log(
            step,
            {"rollout/completion_tokens_mean": length, "rollout/reward_mean": 0.2, "rollout/episodes": 8},
        )
    log.close()
    found = diagnose(load_run([tmp_path])).pathology("length_inflation")
    assert found.severity == "high" and found.evidence["length_growth"] == 2.5
    assert any("[overlong_penalty]" in lever for lever in found.levers)  # training: trainer levers
    assert found.evidence["length_trend"]["steps"][0] == [1, 10.0]


def test_noisy_signals_identical_actions_with_different_rewards(write, clean, episode):
    noisy = [episode(f"n{i}", float(j % 2), action=f"same answer {i}") for i in range(4) for j in range(2)]
    found = diagnose(load_run([write(clean + noisy)])).pathology("noisy_signals")
    assert found.severity == "high"
    assert (found.evidence["with_reward_spread"], found.evidence["identical_action_sets"]) == (4, 4)
    assert found.levers


def test_noisy_signals_not_measurable_without_a_second_look(write, clean):
    found = diagnose(load_run([write(clean)])).pathology("noisy_signals")
    assert found.severity == "not_measurable"
    assert found.evidence["not_measurable"].startswith("not measurable from this input")


def test_wasted_compute_failures_stragglers_and_flat_groups(write, clean, episode):
    slow = [episode(f"s{i}", float(i % 2), seconds=3.0, action=f"slow {i}") for i in range(4)]
    failed = [episode(f"x{i}", 0.0, status="failed") for i in range(4)]
    found = diagnose(load_run([write(clean + slow + failed)])).pathology("wasted_compute")
    assert found.severity == "high"  # 4 of 56 episodes failed: 7%, and a slow tail
    assert found.evidence["failure_reasons"] == {"env_error": 4}
    assert found.evidence["straggler_ratio"] > 30 and found.evidence["slowest"][0].startswith(slow[0].id[:4])
    assert any("--resume" in lever for lever in found.levers) and any(
        "episode_timeout_s" in v for v in found.levers
    )


def test_stale_replay_from_replayed_samples_and_the_buffer(tmp_path, write, episode):
    current = [
        episode(f"t{i}", float(j % 2), version="10", action=f"{i}{j}") for i in range(4) for j in range(3)
    ]
    old = [episode(f"t{i}", 1.0, version="2", signals={"replayed": True}) for i in range(4)]
    found = diagnose(load_run([write(current + old)])).pathology("stale_replay")
    assert found.severity == "high" and found.evidence["lag_mean"] == 8.0
    assert found.evidence["off_policy_share"] == 0.25

    pytest.importorskip(
        "torch", reason="training out_dirs are read by the trainer: pip install -e '.[hf,train]'"
    )
    run = tmp_path / "train"
    run.mkdir()
    (run / "metrics.jsonl").write_text(json.dumps({"step": 12, "rollout/episodes": 4}) + "\n")
    buffer = ReplayBuffer(ReplayConfig(url=str(run / "replay.db")))
    buffer.store_many(old)
    buffer.close()
    stored = diagnose(load_run([run])).pathology("stale_replay").evidence["buffer"]
    assert stored["stored"] == 4 and stored["stored_lag_mean"] == 10.0 and stored["current_version"] == 12


def test_stale_replay_clean_when_nothing_is_replayed(write, clean):
    found = diagnose(load_run([write(clean)])).pathology("stale_replay")
    assert found.severity == "none" and "no replayed samples" in found.evidence["note"]


@pytest.mark.parametrize("repeats", [1, 3])
def test_a_real_oracle_run_is_clean_and_its_verifier_agrees(tmp_path, repeats):
    """A real run of Math-v0 with the oracle, re-judged: nothing to report, verifier agreement 1."""
    from gfcr.agents import Runner, episodes_for_env, make_policy

    path = tmp_path / "oracle.jsonl"
    Runner(make_policy("scripted:oracle")).run(episodes_for_env("gfcr/Math-v0", 12, seed=0), path)
    found = diagnose(load_run([path]), reverify_repeats=repeats)
    measured = {name: s for name, s in severities(found).items() if s != "not_measurable"}
    assert measured and set(measured.values()) == {"none"}, found.to_dict()["pathologies"]
    assert found.criteria["reliability"]["verifier_agreement"] == 1.0
    assert found.criteria["reliability"]["rejudged"] == 12
    assert found.pathology("zero_variance_groups").severity == "not_measurable"  # one sample per task


def test_an_unknown_input_is_named(tmp_path):
    from gfcr.errors import DataError

    with pytest.raises(DataError, match="not a trajectory file, bench report or training out_dir"):
        load_run([tmp_path])
