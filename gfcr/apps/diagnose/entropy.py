"""`entropy_collapse`: the policy's token entropy falling away over training.

RL on verifiable rewards sharpens the policy; when its token entropy collapses (Cui et al. 2025,
"The Entropy Mechanism of Reinforcement Learning for Reasoning Language Models") it stops
exploring and its groups stop differing. The measure is the entropy's drop, 1 - late / early,
between the mean of the first and of the last quarter of the run: of each step's
`generate/entropy_mean` for a training run, of the saved rollouts' mean token entropy per policy
version otherwise. Graded against `THRESHOLDS["entropy_drop"]`; not measurable without token
entropies (a backend that reports none) or with a single step or version.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gfcr.apps.diagnose.data import RunData
from gfcr.apps.diagnose.groups import trend
from gfcr.apps.diagnose.pathology import Pathology, thresholds
from gfcr.core import Trajectory
from gfcr.filter.entropy import mean_token_entropy
from gfcr.filter.indicators import severity


def entropy_collapse(data: RunData) -> Pathology:
    name = "entropy_collapse"
    steps = trend(data, "generate/entropy_mean")
    if steps is not None and len(steps["steps"]) >= 2:
        points, source = steps["steps"], "generate/entropy_mean per step"
    else:
        points, source = _by_version(data), "token entropy per policy version of the saved rollouts"
    if len(points) < 2:
        return Pathology.unmeasurable(
            name, "no token entropies over two or more steps (or policy versions); the hf:, vllm: and "
            "openai: backends record them where the engine returns logits or top logprobs",
        )  # fmt: skip
    series = [value for _, value in points]
    quarter = max(1, len(series) // 4)
    early, late = float(np.mean(series[:quarter])), float(np.mean(series[-quarter:]))
    drop = 1 - late / early if early > 0 else 0.0
    evidence: dict[str, Any] = {
        "thresholds": thresholds("entropy_drop"),
        "source": source,
        "early_entropy": round(early, 4),
        "late_entropy": round(late, 4),
        "entropy_drop": round(drop, 4),
        "trend": [[at, round(value, 4)] for at, value in points],  # (step or version, nats)
    }
    found = severity("entropy_drop", drop)
    temperature = (data.train_config or {}).get("rollout", {}).get("temperature")
    levers = [
        f"raise `[rollout] temperature` (now {temperature}): the policy's token entropy fell "
        f"{drop:.0%}, from {early:.3f} to {late:.3f} nats, so its samples explore less",
        "raise `[loss] epsilon_high` (DAPO's clip-higher): low-probability tokens may then grow, "
        "which keeps entropy up",
        "lower `[optim] lr`: a sharper step collapses entropy faster",
    ]
    return Pathology(name, found, evidence, levers if found != "none" else [])


def _by_version(data: RunData) -> list[tuple[int, float]]:
    """(version, mean token entropy of its rollouts) of each numbered policy version, in order."""
    by_version: dict[int, list[Trajectory]] = {}
    for t in data.ok:
        if t.provenance.policy_version.isdigit():
            by_version.setdefault(int(t.provenance.policy_version), []).append(t)
    means = {version: mean_token_entropy(by_version[version]) for version in sorted(by_version)}
    return [(version, mean) for version, mean in means.items() if mean is not None]
