"""What Control knows about each prompt: a Beta posterior over its success rate, and its history.

Rewards at or above `success_at` count as successes. `decay` < 1 forgets old evidence
geometrically toward the prior before each update (the policy moves, so old outcomes say less;
VADE's prior decay, Hu et al. 2025).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from gfcr.core import solved
from gfcr.errors import ConfigError

EQUAL_TOL = 1e-9  # rewards closer than this are equal (a group without spread carries no signal)


def is_informative(rewards: Sequence[float]) -> bool:
    """Whether a group's rewards differ, so group-normalised advantages are not all zero.

    >>> is_informative([1.0, 1.0, 1.0]), is_informative([0.0, 1.0])
    (False, True)
    """
    return len(rewards) > 1 and max(rewards) - min(rewards) > EQUAL_TOL


def beta_moment(a: float, b: float, n: int) -> float:
    """E[p^n] for p ~ Beta(a, b): Π_{i<n} (a+i)/(a+b+i).

    >>> beta_moment(1.0, 1.0, 2)  # E[p^2] for p uniform
    0.3333333333333333
    """
    return math.prod((a + i) / (a + b + i) for i in range(n))


def p_informative(a: float, b: float, n: int) -> float:
    """Probability that n Bernoulli(p) samples are not all equal, p ~ Beta(a, b).

    >>> round(p_informative(1.0, 1.0, 2), 4)  # 1 - 1/3 - 1/3
    0.3333
    """
    if n < 2:
        return 0.0
    return 1.0 - beta_moment(a, b, n) - beta_moment(b, a, n)


@dataclass
class PromptStats:
    """One prompt's record: posterior counts, groups seen, zero-variance streaks, lengths."""

    alpha: float
    beta: float
    groups: int = 0
    samples: int = 0
    last_rewards: tuple[float, ...] = ()
    zero_variance_streak: int = 0  # consecutive groups with all rewards equal
    mean_length: float | None = None  # mean response length over every sample seen
    best_length: int | None = None  # shortest successful response seen
    # normalised semantic entropy (gfcr.filter.semantic) of its last groups, each older one at half
    # the weight of the next; None before a group's answers were read
    semantic_entropy: float | None = None

    @property
    def mean(self) -> float:
        """Posterior mean success rate."""
        return self.alpha / (self.alpha + self.beta)


@dataclass
class PromptHistory:
    """Per-prompt statistics, updated with each group's rewards.

    >>> h = PromptHistory()
    >>> h.update("q1", [1.0, 0.0, 1.0, 1.0])
    >>> s = h.get("q1")
    >>> (s.alpha, s.beta, s.zero_variance_streak, round(s.mean, 3))
    (4.0, 2.0, 0, 0.667)
    """

    prior: tuple[float, float] = (1.0, 1.0)  # Beta(a, b) before any evidence
    decay: float = 1.0  # weight kept by old evidence at each update (1.0: never forget)
    success_at: float = 1.0  # rewards >= this are successes
    stats: dict[str, PromptStats] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if min(self.prior) <= 0:
            raise ConfigError(f"prior Beta parameters must be > 0, got {self.prior}")
        if not 0.0 < self.decay <= 1.0:
            raise ConfigError(f"decay must be in (0, 1], got {self.decay}")

    def state_dict(self) -> dict[str, Any]:
        """What the history has learnt, as plain data (for a checkpoint); the prior, decay and
        success threshold are configuration, not state.

        >>> h = PromptHistory()
        >>> h.update("q1", [1.0, 0.0])
        >>> again = PromptHistory()
        >>> again.load_state_dict(h.state_dict())
        >>> again.get("q1") == h.get("q1")
        True
        """
        return {"stats": {task_id: asdict(s) for task_id, s in self.stats.items()}}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Hold exactly what `state_dict()` returned (in place: holders of this history see it)."""
        self.stats.clear()
        for task_id, s in state["stats"].items():
            self.stats[task_id] = PromptStats(**{**s, "last_rewards": tuple(s["last_rewards"])})

    def get(self, task_id: str) -> PromptStats:
        """The prompt's stats (the prior alone for a prompt never seen)."""
        return self.stats.get(task_id) or PromptStats(*self.prior)

    def seen(self, task_id: str) -> bool:
        return task_id in self.stats

    def update(
        self,
        task_id: str,
        rewards: Sequence[float],
        lengths: Sequence[int] = (),
        entropy: float | None = None,
    ) -> None:
        """Add one group's rewards (and, optionally, its response lengths in the same order and the
        normalised semantic entropy of its answers)."""
        if not rewards:
            return
        s = self.stats.setdefault(task_id, PromptStats(*self.prior))
        a0, b0 = self.prior
        successes = sum(solved(r, self.success_at) for r in rewards)
        s.alpha = a0 + self.decay * (s.alpha - a0) + successes
        s.beta = b0 + self.decay * (s.beta - b0) + len(rewards) - successes
        s.groups += 1
        s.last_rewards = tuple(float(r) for r in rewards)
        s.zero_variance_streak = 0 if is_informative(rewards) else s.zero_variance_streak + 1
        if lengths:
            total = (s.mean_length or 0.0) * s.samples + sum(lengths)
            s.mean_length = total / (s.samples + len(lengths))
            good = [n for n, r in zip(lengths, rewards, strict=True) if solved(r, self.success_at)]
            if good:
                s.best_length = min(good + ([s.best_length] if s.best_length is not None else []))
        s.samples += len(rewards)
        if entropy is not None:
            s.semantic_entropy = entropy if s.semantic_entropy is None else (s.semantic_entropy + entropy) / 2
