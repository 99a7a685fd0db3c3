"""Prompt selection: which prompts get rolled out next, from what their history predicts.

Every selector picks `num` distinct prompts from `task_ids` given the shared `PromptHistory`:

- `UniformSelector`: uniformly at random (the baseline).
- `GresoSelector`: skips prompts predicted to give zero-variance groups, from how many groups
  in a row they did (GRESO, Zheng et al. 2025, "Act Only When It Pays").
- `VarianceSelector`: prefers prompts whose last group had a high normalised reward variance
  (VCRL, Jiang et al. 2025, "Variance-based Curriculum RL").
- `ThompsonSelector`: Thompson sampling over per-prompt Beta posteriors, ranking by the sampled
  probability that a group is informative (VADE, Hu et al. 2025).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from gfcr.control.posterior import PromptHistory
from gfcr.core import solved
from gfcr.errors import ConfigError


@runtime_checkable
class PromptSelector(Protocol):
    """Picks `num` distinct prompts (fewer only if fewer exist)."""

    def select(
        self, task_ids: Sequence[str], num: int, history: PromptHistory, rng: np.random.Generator
    ) -> list[str]: ...


def _top(task_ids: Sequence[str], scores: np.ndarray, num: int, rng: np.random.Generator) -> list[str]:
    """The `num` highest-scoring ids; ties broken at random."""
    order = np.lexsort((rng.random(len(task_ids)), -scores))  # last key sorts first
    return [task_ids[i] for i in order[:num]]


@dataclass(frozen=True)
class UniformSelector:
    """Uniform sampling without replacement.

    >>> sorted(UniformSelector().select(["a", "b", "c"], 2, PromptHistory(), np.random.default_rng(0)))
    ['b', 'c']
    """

    def select(
        self, task_ids: Sequence[str], num: int, history: PromptHistory, rng: np.random.Generator
    ) -> list[str]:
        chosen = rng.choice(len(task_ids), size=min(num, len(task_ids)), replace=False)
        return [task_ids[i] for i in chosen]


@dataclass
class GresoSelector:
    """GRESO's probabilistic pre-rollout filter (Zheng et al. 2025, §4).

    A prompt whose last z groups in a row were zero-variance is rolled out with probability
    p^z, where p is `p_easy` after all-correct groups and `p_hard` after all-wrong ones. Each
    call adapts each p by `step` toward keeping the share of all-correct (and of all-wrong)
    groups among the prompts it chose last time at half of `target_zero_share`. Prompts skipped
    this way fill the batch only when too few remain.

    >>> h = PromptHistory()
    >>> for _ in range(5):
    ...     h.update("solved", [1.0] * 4)
    >>> h.update("open", [1.0, 0.0, 0.0, 1.0])
    >>> GresoSelector(p_easy=0.1).select(["solved", "open"], 1, h, np.random.default_rng(0))
    ['open']
    """

    p_easy: float = 0.5
    p_hard: float = 0.5
    target_zero_share: float = 0.25
    step: float = 0.01
    p_min: float = 0.05
    _last: list[str] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        for name in ("p_easy", "p_hard", "target_zero_share", "p_min"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ConfigError(f"{name} must be in [0, 1], got {getattr(self, name)}")

    def select(
        self, task_ids: Sequence[str], num: int, history: PromptHistory, rng: np.random.Generator
    ) -> list[str]:
        self._adapt(history)
        keep_p = np.array([self._keep_probability(history, t) for t in task_ids])
        kept = rng.random(len(task_ids)) < keep_p
        # kept prompts first (in random order), then the skipped ones by keep probability
        chosen = _top(task_ids, np.where(kept, 2.0, keep_p), num, rng)
        self._last = chosen
        return chosen

    def state_dict(self) -> dict[str, Any]:
        """The adapted keep probabilities and the last choice (GRESO's auto-tuning state)."""
        return {"p_easy": self.p_easy, "p_hard": self.p_hard, "last": list(self._last)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.p_easy, self.p_hard, self._last = state["p_easy"], state["p_hard"], list(state["last"])

    def _keep_probability(self, history: PromptHistory, task_id: str) -> float:
        s = history.get(task_id)
        if s.zero_variance_streak == 0:
            return 1.0
        p = self.p_easy if s.last_rewards and solved(min(s.last_rewards), history.success_at) else self.p_hard
        return p**s.zero_variance_streak

    def _adapt(self, history: PromptHistory) -> None:
        """Move p_easy/p_hard toward the target share of zero-variance groups (GRESO's auto-tuning)."""
        seen = [history.get(t) for t in self._last if history.seen(t)]
        if not seen:
            return
        zero = [s for s in seen if s.zero_variance_streak > 0]
        easy = sum(bool(s.last_rewards) and solved(min(s.last_rewards), history.success_at) for s in zero)
        for name, count in (("p_easy", easy), ("p_hard", len(zero) - easy)):
            share = count / len(seen)
            delta = -self.step if share > self.target_zero_share / 2 else self.step
            setattr(self, name, min(1.0, max(self.p_min, getattr(self, name) + delta)))


@dataclass(frozen=True)
class VarianceSelector:
    """VCRL-style curriculum: prompts with high normalised variance of their last group first.

    The score is the last group's unbiased reward variance over its maximum for that group
    size, k(G-k)/(G(G-1)) ÷ G/(4(G-1)) for binary rewards (1.0 at half right); prompts never
    seen score `unseen_score` (1.0: explore them first).

    >>> h = PromptHistory()
    >>> h.update("easy", [1.0, 1.0, 1.0, 0.0]); h.update("mid", [1.0, 0.0, 1.0, 0.0])
    >>> VarianceSelector().select(["easy", "mid"], 1, h, np.random.default_rng(0))
    ['mid']
    """

    unseen_score: float = 1.0

    def select(
        self, task_ids: Sequence[str], num: int, history: PromptHistory, rng: np.random.Generator
    ) -> list[str]:
        scores = np.array([self.score(history, t) for t in task_ids])
        return _top(task_ids, scores, num, rng)

    def score(self, history: PromptHistory, task_id: str) -> float:
        rewards = np.asarray(history.get(task_id).last_rewards)
        if not history.seen(task_id) or rewards.size < 2:
            return self.unseen_score
        g = rewards.size
        spread = max(float(np.ptp(rewards)), 1e-12)
        max_var = g / (4 * (g - 1)) * spread**2  # two-point rewards split half and half
        return float(rewards.var(ddof=1) / max_var)


@dataclass(frozen=True)
class ThompsonSelector:
    """Thompson sampling (VADE, Hu et al. 2025): draw p̃ ~ Beta(α, β) per prompt and take the
    prompts with the highest sampled P(a group of `group_size` is informative) = 1 - p̃^K - (1-p̃)^K.

    >>> h = PromptHistory()
    >>> h.update("solved", [1.0] * 32); h.update("open", [1.0, 0.0] * 4)
    >>> ThompsonSelector(group_size=8).select(["solved", "open"], 1, h, np.random.default_rng(0))
    ['open']
    """

    group_size: int = 8

    def __post_init__(self) -> None:
        if self.group_size < 2:
            raise ConfigError(f"group_size must be >= 2, got {self.group_size}")

    def select(
        self, task_ids: Sequence[str], num: int, history: PromptHistory, rng: np.random.Generator
    ) -> list[str]:
        stats = [history.get(t) for t in task_ids]
        p = rng.beta([s.alpha for s in stats], [s.beta for s in stats])  # (N,)
        k = self.group_size
        return _top(task_ids, 1.0 - p**k - (1.0 - p) ** k, num, rng)


SELECTORS = {
    "uniform": UniformSelector,
    "greso": GresoSelector,
    "vcrl": VarianceSelector,
    "thompson": ThompsonSelector,
}
