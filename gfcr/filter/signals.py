"""Training signals from rewards: group-normalised advantages, DAPO's soft overlong penalty and the
outcome it leaves alone.

Everything here is plain arithmetic on numbers; no optimizer is involved (the trainer decides
how to use the advantages).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from gfcr.core import Trajectory
from gfcr.errors import ConfigError, UnknownNameError

ADVANTAGE_ESTIMATORS = ("grpo", "dr_grpo", "rloo")


def group_advantages(rewards: Sequence[float], estimator: str = "grpo", *, eps: float = 1e-6) -> np.ndarray:
    """Advantages of one group of K samples of the same prompt, shape (K,).

    - "grpo" (Shao et al. 2024, DeepSeekMath): (r_i - mean) / (std + eps), std with Bessel's
      correction (as TRL and veRL compute it);
    - "dr_grpo" (Liu et al. 2025, "Understanding R1-Zero-Like Training"): r_i - mean, no std
      division (it up-weights too-easy and too-hard prompts);
    - "rloo" (Ahmadian et al. 2024, after Kool et al. 2019): r_i minus the mean of the *other*
      K-1 rewards, which equals K/(K-1) * (r_i - mean).

    A group whose rewards are all equal gets all-zero advantages (no signal); a group of one
    sample gets a zero advantage.

    >>> group_advantages([1.0, 0.0, 0.0, 0.0], "rloo").round(4).tolist()
    [1.0, -0.3333, -0.3333, -0.3333]
    >>> group_advantages([1.0, 1.0], "grpo").tolist()
    [0.0, 0.0]
    """
    if estimator not in ADVANTAGE_ESTIMATORS:
        raise UnknownNameError("advantage estimator", estimator, ADVANTAGE_ESTIMATORS)
    r = np.asarray(rewards, dtype=np.float64)  # (K,)
    if r.ndim != 1 or r.size == 0:
        raise ConfigError(f"rewards must be a non-empty 1-d sequence, got shape {r.shape}")
    k = r.size
    if k == 1:
        return np.zeros(1)
    centred = r - r.mean()
    if estimator == "dr_grpo":
        return centred
    if estimator == "rloo":
        return centred * k / (k - 1)
    return centred / (r.std(ddof=1) + eps)


def overlong_penalty(length: int, max_length: int, cache_length: int) -> float:
    """DAPO's soft overlong punishment (Yu et al. 2025, eq. 13), added to the task reward.

    0 up to `max_length - cache_length` tokens, then a linear ramp down to -1 at `max_length`,
    and -1 beyond it.

    >>> [overlong_penalty(n, 100, 20) for n in (80, 90, 100, 120)]
    [0.0, -0.5, -1.0, -1.0]
    """
    if not 0 < cache_length <= max_length:
        raise ConfigError(f"need 0 < cache_length <= max_length, got {cache_length} and {max_length}")
    free = max_length - cache_length
    if length <= free:
        return 0.0
    if length <= max_length:
        return (free - length) / cache_length
    return -1.0


OVERLONG_TERM = "overlong_penalty"  # the judge stage's name for DAPO's penalty in `reward_terms`
LENGTH_TERM = "length"  # and for a group length term's (ShorterBetter's, Kimi's)
SHAPING_TERMS = (OVERLONG_TERM, LENGTH_TERM)  # terms that shape length, not judge the work


def outcome_reward(trajectory: Trajectory) -> float:
    """The episode's reward without its length shaping (`SHAPING_TERMS`: DAPO's overlong penalty,
    a group length term): its outcome, which dynamic sampling judges a group's spread by (DAPO,
    eq. 11: neither every answer right nor every one wrong). Lengths differ in nearly every group,
    so counting the shaping would keep all-wrong groups as informative and train length alone.

    >>> from gfcr.core import Step
    >>> t = Trajectory("e", "t", "?", [Step("x", "", 0.0, True, False)])
    >>> t.reward_terms = {"verifier": 0.0, OVERLONG_TERM: -0.5, LENGTH_TERM: -0.01}
    >>> t.reward, outcome_reward(t)
    (-0.51, 0.0)
    """
    if not trajectory.reward_terms:
        return trajectory.reward
    return math.fsum(part for term, part in trajectory.reward_terms.items() if term not in SHAPING_TERMS)


def response_length(trajectory: Trajectory) -> int:
    """The policy's own output length: sampled tokens where token data exists, else characters."""
    if trajectory.tokens is not None and trajectory.tokens.loss_mask:
        return sum(trajectory.tokens.loss_mask)
    return sum(len(step.action) for step in trajectory.steps)
