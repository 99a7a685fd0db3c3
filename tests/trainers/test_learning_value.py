"""Learning-value signals in real `gfcr train` steps: token and semantic entropy as metrics.

The tiny model on gfcr/TestParity-v0 (see conftest.py): its answers are its raw action texts, so
a group's semantic clusters are its distinct actions (the default family: exact text).
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from gfcr.core import Trajectory
from gfcr.trainers import Trainer


def entropy_by_hand(group: list[Trajectory]) -> float:
    """The group's answers counted by their whitespace-collapsed text; an empty action alone."""
    texts = [" ".join(t.steps[-1].action.split()) for t in group]
    counts = list(Counter(text for text in texts if text).values()) + [1] * texts.count("")
    n = sum(counts)
    return -sum(c / n * math.log(c / n) for c in counts)


def test_the_step_logs_mean_token_entropy_and_semantic_entropy(make_config):
    trainer = Trainer(make_config())
    metrics = trainer.rl_step()
    rollout = trainer.last_rollout
    sampled = [
        h for t in rollout.generated for h, m in zip(t.tokens.entropies, t.tokens.loss_mask, strict=True) if m
    ]
    assert sampled and metrics["generate/entropy_mean"] == pytest.approx(np.mean(sampled))
    assert metrics["generate/entropy_mean"] > 0  # a random tiny model is far from collapsed
    by_hand = [entropy_by_hand(group) for group in rollout.groups.values()]
    assert metrics["judge/semantic_entropy_mean"] == pytest.approx(np.mean(by_hand))


def test_gfcr_diagnose_reads_the_runs_entropy_trend(make_config):
    from gfcr.apps.diagnose import diagnose, load_run

    config = make_config(steps=2)
    history = Trainer(config).train()
    found = diagnose(load_run([config.out_dir])).pathology("entropy_collapse")
    logged = [round(m["generate/entropy_mean"], 4) for m in history]
    assert [value for _, value in found.evidence["trend"]] == logged
    assert found.severity in ("none", "low", "medium", "high")  # measured, whatever two steps did


def test_seed_grpo_damps_each_groups_advantages_by_its_semantic_entropy(make_config):
    """[credit.seed_grpo]: Â = A · (1 - α · SE / ln G) per group, in the samples a real step trains on."""
    from gfcr.filter.signals import group_advantages

    alpha = 0.5
    seed = {"seed_grpo": {"enabled": True, "alpha": alpha}}
    trainer = Trainer(make_config(rollout={"prompts_per_step": 4, "group_size": 4}, credit=seed))
    trainer.rl_step()
    rollout = trainer.last_rollout
    samples = trainer.pipeline.credit(rollout)  # what the step trained on (rollouts and credit are fixed)
    expected, plain = [], []
    for group in rollout.groups.values():
        factor = 1 - alpha * entropy_by_hand(group) / math.log(len(group))
        advantages = group_advantages([t.reward for t in group], "grpo")
        plain += advantages.tolist()
        expected += (advantages * factor).tolist()
    assert [s.advantage for s in samples] == pytest.approx(expected)
    assert any(abs(e) < abs(p) for e, p in zip(expected, plain, strict=True))  # some update was damped


def test_an_uncertainty_weighted_budget_samples_the_scattered_prompt_more(make_config):
    """[control] uncertainty_weight: of two prompts with the same reward record, the one whose last
    groups' answers scattered gets more of the budget; the step's own groups are read into the history."""
    control = {"sample_budget": 10, "max_samples": 10, "uncertainty_weight": 4.0}
    trainer = Trainer(make_config(env={"num_tasks": 2}, control=control))
    scattered, agreed = trainer.pipeline.task_ids
    history = trainer.controller.history
    for _ in range(3):
        history.update(scattered, [1.0, 0.0], entropy=1.0)
        history.update(agreed, [1.0, 0.0], entropy=0.0)
    metrics = trainer.rl_step()
    groups = trainer.last_rollout.groups
    assert len(groups[scattered]) > len(groups[agreed]) and metrics["allocate/samples"] == 10
    for task, before in ((scattered, 1.0), (agreed, 0.0)):
        group = groups[task]
        read = entropy_by_hand(group) / math.log(len(group))
        assert history.get(task).semantic_entropy == pytest.approx((before + read) / 2)
