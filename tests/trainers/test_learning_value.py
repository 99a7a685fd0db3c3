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
