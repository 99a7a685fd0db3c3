"""Process scores that train under TRL: `TreeGRPOTrainer` adds each step's process advantage to its
tokens' outcome advantage, as `gfcr train`'s credit stage does.

Real TRL steps of the tiny model on a three-turn env whose rule scores every step (`steps_env`,
tests/conftest.py): the advantages that reach TRL's `_compute_loss` are, token by token, the outcome
advantage (TRL's own group estimator; with trees, the tree's) plus weight · the step's process
advantage, both computed here by hand from the rows' own trajectories.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl", reason="the trl extra is not installed: pip install -e '.[trl]'")

from test_trl import _quiet_trl, grpo_trainer  # noqa: E402, F401  (autouse fixture)
from test_trl_trees import BRANCHES, per_row, row_trajectories  # noqa: E402

from gfcr.agents.runner import RunnerConfig  # noqa: E402
from gfcr.core import SamplingParams  # noqa: E402
from gfcr.errors import ConfigError  # noqa: E402
from gfcr.filter.process_credit import sampled_runs  # noqa: E402
from gfcr.generate import token_tree_advantages  # noqa: E402
from gfcr.integrations import trl as gfcr_trl  # noqa: E402
from gfcr.trainers.config import PipelineConfig  # noqa: E402

WEIGHT = 0.5
PROCESS = {"judge": {"process": {"weight": WEIGHT}}}
# 4 tokens a turn, so an episode plays all three turns within TRL's completion budget
RUNNER = RunnerConfig(sampling=SamplingParams(temperature=1.0, max_tokens=4))


def recording_trainer():
    """A TreeGRPOTrainer that keeps the inputs of each `_compute_loss` call, and its loss."""

    class Recording(gfcr_trl.TreeGRPOTrainer):
        seen: list = []

        def _compute_loss(self, model, inputs):
            loss = super()._compute_loss(model, inputs)
            self.seen.append((inputs, loss.detach()))
            return loss

    return Recording


def trl_outcome(rewards: list[float]) -> list[float]:
    """TRL's group advantage (scale_rewards = "group"): (r - mean) / (unbiased std + 1e-4)."""
    r = np.array(rewards)
    return list((r - r.mean()) / (r.std(ddof=1) + 1e-4))


def process_by_hand(group) -> dict[str, list[float]]:
    """DeepSeekMath §4.1.3 by hand: the group's step scores normalised together, each turn's tokens
    given the sum of its own and every later step's normalised score."""
    scores = [[s.signals.get("process_score") for s in t.steps] for t in group]
    flat = np.array([v for member in scores for v in member if v is not None])
    out = {}
    for trajectory, member in zip(group, scores, strict=True):
        normalised = [0.0 if v is None else (v - flat.mean()) / flat.std() for v in member]
        tokens = [0.0] * len(trajectory.tokens.completion_ids)
        for k, (start, end) in enumerate(sampled_runs(trajectory.tokens.loss_mask)):
            tokens[start:end] = [sum(normalised[k:])] * (end - start)
        out[trajectory.id] = tokens
    return out


@pytest.mark.parametrize("tree", [False, True], ids=["trl_outcome", "tree_outcome"])
def test_each_steps_process_advantage_reaches_trls_loss(tiny_model, tmp_path, steps_env, tree):
    config = PipelineConfig.from_dict(PROCESS | (BRANCHES if tree else {}))
    rollout = gfcr_trl.rollout_func(steps_env, config=config, runner_config=RUNNER)
    trainer = grpo_trainer(
        tiny_model, tmp_path, rows=2, generations=4, completion_tokens=64, env=(steps_env, {}),
        trainer_class=recording_trainer(), rollout_func=rollout, reward_funcs=gfcr_trl.env_reward,
    )  # fmt: skip
    trainer.train()
    [(inputs, loss)] = trainer.seen
    batch = rollout.last_batch
    assert batch.metrics["judge/process_scored"] > 0
    assert (batch.metrics["generate/branches"] > 0) == tree
    outcome, process = {}, {}
    for group in batch.groups.values():
        assert all(len(t.steps) == 3 for t in group) and len(group) == 4
        process |= process_by_hand(group)
        if tree:
            outcome |= token_tree_advantages(group, "treerl", outcome=rollout.pipeline.reward)
        else:
            outcome |= dict(zip((t.id for t in group), trl_outcome([t.reward for t in group]), strict=True))
    rows = row_trajectories(rollout, inputs)
    expected = per_row(
        inputs, [np.add(outcome[t.id], WEIGHT * np.array(process[t.id])).tolist() for t in rows]
    )
    advantages = inputs["advantages"]
    mask = inputs["completion_mask"] * inputs["tool_mask"]  # the sampled tokens
    assert advantages.shape == inputs["completion_ids"].shape  # (B, T): one per token
    torch.testing.assert_close(advantages * mask, expected * mask)
    # the turns of one completion are credited apart, which no per-sequence advantage does
    turns = [
        {round(float(advantages[i, start]), 5) for start, _ in sampled_runs(mask[i].int().tolist())}
        for i in range(len(rows))
    ]
    assert any(len(values) > 1 for values in turns)
    # on-policy (ratio 1) TRL's loss is minus the mean loss-token advantage: it trains on these
    torch.testing.assert_close(loss, -(expected * mask).sum() / mask.sum())


def test_groups_that_top_a_step_up_are_process_scored_too(tiny_model, tmp_path, steps_env):
    """No episode pays: dynamic sampling drops every group and TRL's batch is topped up with them,
    unscored by the step; the rollout scores their steps, so their tokens still train on weight ·
    process advantage (TRL's outcome advantage is 0 in a group without spread)."""
    config = PipelineConfig.from_dict(PROCESS | {"control": {"dynamic_sampling": True, "max_rounds": 1}})
    rollout = gfcr_trl.rollout_func(steps_env, config=config, runner_config=RUNNER, pays=False)
    trainer = grpo_trainer(
        tiny_model, tmp_path, rows=2, generations=4, completion_tokens=64, env=(steps_env, {"pays": False}),
        trainer_class=recording_trainer(), rollout_func=rollout, reward_funcs=gfcr_trl.env_reward,
    )  # fmt: skip
    trainer.train()
    [(inputs, _)] = trainer.seen
    batch = rollout.last_batch
    assert batch.groups == {} and batch.metrics["decide/dropped_groups"] == 2
    rows = row_trajectories(rollout, inputs, batch.generated)
    process = {}
    for task_id in {t.task_id for t in rows}:
        process |= process_by_hand([t for t in rows if t.task_id == task_id])
    expected = per_row(inputs, [(WEIGHT * np.array(process[t.id])).tolist() for t in rows])
    mask = inputs["completion_mask"] * inputs["tool_mask"]
    torch.testing.assert_close(inputs["advantages"] * mask, expected * mask)
    assert (expected * mask).abs().sum() > 0


def test_process_scores_under_trls_own_grpo_trainer_ask_for_tree_grpo_trainer(
    tiny_model, tmp_path, steps_env
):
    rollout = gfcr_trl.rollout_func(steps_env, config=PipelineConfig.from_dict(PROCESS), runner_config=RUNNER)
    trainer = grpo_trainer(
        tiny_model, tmp_path, generations=4, env=(steps_env, {}), rollout_func=rollout,
        reward_funcs=gfcr_trl.env_reward,
    )  # fmt: skip
    match = r"\[judge.process\] adds .* GRPOTrainer trains every completion on one advantage.*TreeGRPOTrainer"
    with pytest.raises(ConfigError, match=match):
        trainer.train()
