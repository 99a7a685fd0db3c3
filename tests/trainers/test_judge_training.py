"""The judge stage inside real `gfcr train` steps: each `[judge]` term changes the rewards the
advantages use exactly as declared, a label-free run decides on votes, and an episode a judge could
not score is left out of training (issue 33's proof). TRL's side: tests/integrations/test_trl_judge.py.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from gfcr.core import Task, Trajectory
from gfcr.filter import EnvReward, JudgeStage, Weighted, group_advantages
from gfcr.filter.signals import response_length
from gfcr.trainers import Trainer

# the tiny model never ends a response by itself: stopping at an "e" gives a group varied lengths
VARIED_LENGTHS = {"max_tokens": 16, "stop": ["e"]}


def trained_groups(trainer: Trainer) -> list[list[Trajectory]]:
    assert trainer.last_rollout is not None
    return list(trainer.last_rollout.groups.values())


def test_shorter_better_rewards_the_distance_to_the_groups_shortest_correct_length(make_config):
    judge = {"length": {"kind": "shorter_better", "weight": 0.1}}
    trainer = Trainer(make_config(judge=judge, rollout=VARIED_LENGTHS, steps=1))
    history = trainer.train()
    parts = []
    for group in trained_groups(trainer):
        lengths = [response_length(t) for t in group]
        correct = [n for n, t in zip(lengths, group, strict=True) if t.total_reward >= 1.0]
        optimal = min(correct) if correct else np.mean(lengths)
        for t, n in zip(group, lengths, strict=True):
            assert t.reward_terms == {
                "verifier": t.total_reward,
                "length": pytest.approx(-0.1 * abs(n - optimal)),
            }
            parts.append(t.reward_terms["length"])
    assert history[-1]["judge/length_mean"] == pytest.approx(np.mean(parts)) and min(parts) < 0
    samples = trainer.pipeline.credit(trainer.last_rollout)
    expected = [a for g in trained_groups(trainer) for a in group_advantages([t.reward for t in g], "grpo")]
    assert [s.advantage for s in samples] == pytest.approx(expected)  # the advantages use the judged reward


def test_a_failed_gate_zeroes_the_reward_whatever_the_other_terms_say(make_config):
    judge = {"gates": ["correct"], "length": {"kind": "kimi", "weight": 1.0}}
    trainer = Trainer(make_config(judge=judge, rollout={"prompts_per_step": 4}, steps=1))
    history = trainer.train()
    trained = [t for g in trained_groups(trainer) for t in g]
    wrong = [t for t in trained if not t.signals["correct"]]
    assert wrong and all(t.reward == 0.0 for t in wrong)  # Kimi's bonus cannot lift an ungated answer
    assert all(t.reward == 1.0 + t.reward_terms["length"] for t in trained if t.signals["correct"])
    assert history[-1]["judge/gated_share"] == pytest.approx(len(wrong) / len(trained))


def test_a_label_free_run_is_rewarded_and_decided_by_its_majority_vote(make_config):
    judge = {"verifier": 0.0, "majority": {"weight": 1.0}}
    trainer = Trainer(make_config(judge=judge, rollout={"group_size": 4}, steps=1))
    history = trainer.train()
    paid = [t for t in trainer.last_rollout.generated if t.status == "ok" and t.reward > 0]
    wrong = [t for t in paid if not t.signals["correct"]]  # the vote paid them; the env says wrong
    assert history[-1]["diagnose/rewarded_incorrect_share"] == len(wrong) / max(len(paid), 1)
    for group in trained_groups(trainer):
        answers = [" ".join(t.steps[-1].action.split()) or None for t in group]
        counts = Counter(a for a in answers if a is not None)
        majority = max(counts, key=lambda a: (counts[a], -answers.index(a))) if counts else None
        votes = [float(a is not None and a == majority) for a in answers]
        assert [t.reward_terms for t in group] == [{"majority": v} for v in votes]  # no gold label in it
        assert trainer.controller.history.get(group[0].task_id).last_rewards == tuple(votes)


class FailsFirst:
    """A judge that cannot score the first member of every group (a timeout, an unreadable reply)."""

    def scores(self, task: Task, group: Sequence[Trajectory]) -> list[float | None]:
        return [None, *([1.0] * (len(group) - 1))]


def test_an_episode_the_judge_could_not_score_is_left_out_of_training_not_scored_zero(make_config):
    trainer = Trainer(make_config(steps=1))
    trainer.pipeline.judge = JudgeStage((Weighted("verifier", EnvReward()), Weighted("llm", FailsFirst())))
    metrics = trainer.rl_step()
    batch = trainer.last_rollout
    assert batch is not None
    failed = [t for t in batch.generated if t.status == "failed"]
    assert len(failed) == metrics["judge/failures"] == len(batch.groups) == 2
    assert all(t.failure == "judge_failure: no score from llm" and t.signals["judge_failure"] for t in failed)
    trained = {t.id for g in trained_groups(trainer) for t in g}
    assert trained.isdisjoint(t.id for t in failed) and len(trained) == 2 * 2  # groups of 3, one failed
    assert metrics["credit/samples"] == len(trained)


def test_an_envs_own_judge_table_replaces_the_runs_for_its_episodes(make_config, parity_env):
    judge = {"length": {"kind": "kimi", "weight": 1.0}, "envs": {parity_env: {"gates": ["correct"]}}}
    trainer = Trainer(make_config(judge=judge, rollout={"prompts_per_step": 4}, steps=1))
    trainer.train()
    trained = [t for g in trained_groups(trainer) for t in g]
    assert all("length" not in t.reward_terms for t in trained)  # the env's table has no length term
    assert all(t.reward == float(t.signals["correct"]) for t in trained)
    assert {k for t in trained for k in t.reward_terms} == {"verifier", "gate"}


def test_gfcr_diagnose_shows_which_term_moved_the_reward_of_a_training_run(make_config):
    from typer.testing import CliRunner

    from gfcr.apps.cli import app
    from gfcr.apps.diagnose.data import read_replay

    judge = {"length": {"kind": "shorter_better", "weight": 0.1}}
    config = make_config(judge=judge, replay={"enabled": True}, rollout=VARIED_LENGTHS, steps=1)
    Trainer(config).train()
    result = CliRunner().invoke(app, ["diagnose", config.out_dir, "--json"])
    assert result.exit_code == 0, result.output
    reward = json.loads(result.output)["criteria"]["reward"]
    saved = [s.trajectory for s in read_replay(Path(config.out_dir) / "replay.db")]  # as judged
    assert reward["judged_episodes"] == len(saved) > 0 and all(t.reward_terms for t in saved)
    moved = sum(t.reward_terms["length"] != 0 for t in saved) / len(saved)
    assert reward["moved_share"] == {"length": pytest.approx(moved, abs=1e-4)} and moved > 0
