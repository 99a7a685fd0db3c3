"""GFCR modules inside training: DAPO's dynamic sampling and early stopping (Control), together or
alone, and the overlong penalty (Filter)."""

from __future__ import annotations

import numpy as np
import pytest

from gfcr.core import Step, Task, TokenData, Trajectory
from gfcr.filter import EnvReward, JudgeStage, OverlongPenalty, Weighted, overlong_penalty
from gfcr.filter.signals import response_length
from gfcr.trainers import Trainer
from gfcr.trainers.batching import samples_from_groups
from gfcr.trainers.pipeline import RolloutPipeline

# 4 groups of 2 on the parity env (reward: odd action length): a group has no reward spread half
# the time, so a step without dynamic sampling sends some zero-variance groups to the update.
GROUPS = {"rollout": {"prompts_per_step": 4, "group_size": 2}, "steps": 2}


def test_without_dynamic_sampling_zero_variance_groups_reach_the_update(make_config):
    history = Trainer(make_config(**GROUPS)).train()
    assert any(m["rollout/zero_variance_share"] > 0 for m in history)
    assert all(m["rollout/rounds"] == 1 and m["rollout/episodes"] == 8 for m in history)
    assert [m["rollout/samples_total"] for m in history] == [8, 16]


def test_dynamic_sampling_keeps_zero_variance_groups_out_of_the_update(make_config):
    config = make_config(control={"dynamic_sampling": True}, checkpoint_every=1, **GROUPS)
    trainer = Trainer(config)
    history = trainer.train()
    for m in history:
        assert m["rollout/zero_variance_share"] == 0.0
        assert m["rollout/groups"] == 4 and m["rollout/rounds"] >= 1
        assert m["rollout/episodes"] >= 12  # the first round over-samples: ceil(4 × 1.5) prompts of 2
    assert trainer.last_rollout is not None and len(trainer.last_rollout.groups) == 4
    for group in trainer.last_rollout.groups.values():  # the batch itself
        assert len({t.total_reward for t in group}) > 1
    episodes = [m["rollout/episodes"] for m in history]
    assert [m["rollout/samples_total"] for m in history] == list(np.cumsum(episodes))
    last_tokens = sum(response_length(t) for t in trainer.last_rollout.generated)
    assert history[1]["rollout/tokens_total"] - history[0]["rollout/tokens_total"] == last_tokens
    resumed = Trainer(config)  # the budget counters are part of the checkpoint
    resumed.begin()
    assert (resumed.pipeline.samples_total, resumed.pipeline.tokens_total) == (
        history[-1]["rollout/samples_total"],
        history[-1]["rollout/tokens_total"],
    )


def _episode(reward: float, turns: list[int]) -> Trajectory:
    """An episode whose policy turns have these token counts, with 5 observation tokens between."""
    completion, mask = [], []
    for i, n in enumerate(turns):
        if i:
            completion, mask = completion + [9] * 5, mask + [0] * 5
        completion, mask = completion + [7] * n, mask + [1] * n
    tokens = TokenData([1, 2], completion, mask, [-0.1 if m else 0.0 for m in mask])
    return Trajectory("e", "t", "?", [Step("a", "", reward, True, False)], tokens=tokens)


def test_overlong_penalty_lowers_a_long_completions_reward_by_dapos_penalty():
    long, short = _episode(1.0, [6, 5]), _episode(1.0, [4])  # 11 and 4 policy tokens
    shaping = Weighted("overlong_penalty", OverlongPenalty(max_length=12, cache_length=4))
    JudgeStage((Weighted("verifier", EnvReward()), shaping)).judge(Task("t", "?"), [long, short])
    samples = samples_from_groups({"t": [long, short]}, "grpo", RolloutPipeline.reward)
    # observation tokens are not the policy's: 11 tokens, 3 into the 4-token ramp before 12
    assert samples[0].reward == 1.0 + overlong_penalty(11, 12, 4) == pytest.approx(0.25)
    assert samples[1].reward == 1.0
    assert samples[0].advantage < 0 < samples[1].advantage  # the shaped rewards have a spread
    unshaped = samples_from_groups({"t": [long, short]}, "grpo", lambda t: t.total_reward)
    assert [s.advantage for s in unshaped] == [0.0, 0.0]


def test_training_with_the_overlong_penalty_uses_and_logs_it(make_config):
    config = make_config(overlong_penalty={"enabled": True, "max_length": 4, "cache_length": 2}, steps=1)
    trainer = Trainer(config)
    history = trainer.train()
    assert trainer.pipeline.judge.terms[-1] == Weighted("overlong_penalty", OverlongPenalty(4, 2))
    assert trainer.last_rollout is not None
    trained = [t for group in trainer.last_rollout.groups.values() for t in group]
    penalties = [overlong_penalty(response_length(t), 4, 2) for t in trained]
    assert min(penalties) < 0  # completions of up to 6 tokens pass the 2 free ones
    assert history[-1]["judge/overlong_penalty_mean"] == pytest.approx(np.mean(penalties))
    shaped = [
        [t.total_reward + overlong_penalty(response_length(t), 4, 2) for t in g]
        for g in trainer.last_rollout.groups.values()
    ]
    zero = np.mean([len(set(rewards)) == 1 for rewards in shaped])
    assert history[-1]["rollout/zero_variance_share"] == pytest.approx(zero)


def test_early_stopping_stops_decided_prompts_and_trains_on_full_groups(make_config):
    # 2 prompts of a 2-task pool, groups of 6 in waves of 2: prompts come back every step, so their
    # posteriors grow sure and decided prompts stop after a wave (the parity env is random, so some
    # prompts agree by chance: the confidence is set low enough that they are stopped).
    config = make_config(
        env={"num_tasks": 2},
        rollout={"prompts_per_step": 2, "group_size": 6},
        control={"early_stopping": True, "wave": 2, "confidence": 0.05},
        steps=3,
    )
    trainer = Trainer(config)
    history = trainer.train()
    for m in history:
        assert m["rollout/episodes"] <= 12 and m["rollout/rounds"] >= 1
        assert m["rollout/groups"] + m["rollout/dropped_groups"] == 2  # a stopped prompt is dropped
        assert m["decide/saved_samples"] == 12 - m["rollout/episodes"]
    assert sum(m["rollout/stopped_groups"] for m in history) >= 1
    assert sum(m["rollout/episodes"] for m in history) < 3 * 12  # stopped prompts saved samples
    assert history[-1]["rollout/samples_total"] == sum(m["rollout/episodes"] for m in history)
    assert trainer.last_rollout is not None
    assert all(len(group) == 6 for group in trainer.last_rollout.groups.values())  # only full groups


def test_dynamic_sampling_refills_what_early_stopping_drops_in_one_step(make_config):
    # Without over-sampling, a step that needs a second round kept fewer than 2 groups from its first
    # (a prompt stopped early, or a full group without a spread): what it ends with beyond those is
    # refilled. Checked on 20 seeds: every one stops a prompt and refills it in some step.
    control = {"early_stopping": True, "wave": 2, "confidence": 0.05, "dynamic_sampling": True}
    config = make_config(
        env={"num_tasks": 16},
        rollout={"prompts_per_step": 2, "group_size": 4},
        control={**control, "oversample": 1.0, "max_rounds": 8},
        steps=3,
    )
    trainer = Trainer(config)
    history = trainer.train()
    for m in history:
        assert m["rollout/zero_variance_share"] == 0.0  # stopped and uninformative groups never train
        assert m["decide/runs"] >= 2  # waves of 2 in every round
    assert any(m["decide/stopped_prompts"] >= 1 for m in history)  # early stopping acted…
    refilled = [m for m in history if m["decide/rounds"] >= 2 and m["rollout/groups"] == 2]
    assert refilled and all(m["decide/refilled_groups"] >= 1 for m in refilled)  # …and dynamic sampling refilled
    for group in trainer.last_rollout.groups.values():
        assert len(group) == 4 and len({t.total_reward for t in group}) > 1


def test_early_stopping_waves_fit_in_a_group(make_config):
    from gfcr.errors import ConfigError

    with pytest.raises(ConfigError, match=r"wave must be <= \[rollout\] group_size \(3\), got 4"):
        make_config(control={"early_stopping": True, "wave": 4})
