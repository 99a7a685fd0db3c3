"""The judge stage inside a real TRL `GRPOTrainer` step: the recipe's `[judge]` terms are the
reward TRL's advantages see, and an episode a judge could not score reaches TRL as reward None
(left out of its group's baseline), not as a 0 and not as a crash of the step."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

pytest.importorskip("trl", reason="the trl extra is not installed: pip install -e '.[trl]'")

from test_trl import ENV, KWARGS, SpreadOracle, _quiet_trl, logged  # noqa: E402, F401  (autouse fixture)
from test_trl_pipeline import train, trl_prompts  # noqa: E402

from gfcr.core import Task, Trajectory  # noqa: E402
from gfcr.filter import EnvReward, JudgeStage, Weighted  # noqa: E402
from gfcr.integrations import trl as gfcr_trl  # noqa: E402


def test_a_recipes_judge_terms_are_the_reward_trl_trains_on(tiny_model, tmp_path):
    tasks = set(gfcr_trl.dataset(ENV, n=2, **KWARGS)["task_id"])
    config = {"judge": {"length": {"kind": "kimi", "weight": 0.5}}}
    trainer, rollout = train(tiny_model, tmp_path, SpreadOracle(tiny_model, tasks), config)
    trainer.train()
    episodes = [t for group in rollout.last_batch.groups.values() for t in group]
    assert all(set(t.reward_terms) == {"verifier", "length"} for t in episodes)
    assert any(t.reward_terms["length"] for t in episodes)  # the oracle's answer and the junk differ in length
    assert logged(trainer, "reward") == pytest.approx(np.mean([t.reward for t in episodes]))


class FailsFirst:
    """A judge that cannot score the first member of every group."""

    def scores(self, task: Task, group: Sequence[Trajectory]) -> list[float | None]:
        return [None, *([1.0] * (len(group) - 1))]


def test_an_episode_the_judge_failed_reaches_trl_as_reward_none(tiny_model, tmp_path):
    tasks = set(gfcr_trl.dataset(ENV, n=2, **KWARGS)["task_id"])
    trainer, rollout = train(tiny_model, tmp_path, SpreadOracle(tiny_model, tasks), {})
    rollout(trl_prompts(trainer), trainer)  # builds the pipeline for TRL's batch shape
    rollout.pipeline.judge = JudgeStage((Weighted("verifier", EnvReward()), Weighted("llm", FailsFirst())))
    fields = rollout(trl_prompts(trainer), trainer)
    assert len(fields["gfcr_reward"]) == 4  # TRL's 2 prompts x 2 generations, the failed ones included
    assert fields["gfcr_reward"].count(None) == 2 == rollout.last_batch.metrics["judge/failures"]
    trainer.train()  # a step with judge failures trains on the rest
    assert np.isfinite(logged(trainer, "loss"))
