"""Prompt selection: which prompts get rolled out next, from what their history predicts.

Every selector picks `num` distinct prompts from `task_ids` given the shared `PromptHistory`:

- `UniformSelector`: uniformly at random (the baseline).
- `GresoSelector`: skips prompts predicted to give zero-variance groups, from how many groups
  in a row they did (GRESO, Zheng et al. 2025, "Act Only When It Pays").
- `VarianceSelector`: prefers prompts whose last group had a high normalised reward variance
  (VCRL, Jiang et al. 2025, "Variance-based Curriculum RL").
- `ThompsonSelector`: Thompson sampling over per-prompt Beta posteriors, ranking by the sampled
  probability that a group is informative (VADE, Hu et al. 2025).
- `SecSelector`: a bandit over task categories, rewarded by the absolute advantage their groups
  yield (SEC, Chen et al. 2025, "Self-Evolving Curriculum for LLM Reasoning").

A selector that also learns from outcomes (`LearningSelector`: SEC) is told every group's rewards
by `gfcr.control.observe`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from gfcr.control.posterior import PromptHistory
from gfcr.core import solved
from gfcr.errors import ConfigError
from gfcr.filter.signals import group_advantages


@runtime_checkable
class PromptSelector(Protocol):
    """Picks `num` distinct prompts (fewer only if fewer exist)."""

    def select(
        self, task_ids: Sequence[str], num: int, history: PromptHistory, rng: np.random.Generator
    ) -> list[str]: ...


@runtime_checkable
class LearningSelector(Protocol):
    """A selector that learns from what the groups it chose yielded (task id -> the group's rewards)."""

    def learn(self, rewards: Mapping[str, Sequence[float]]) -> None: ...


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
    this way fill the batch only when too few remain. `metrics()` says what the last call did:
    how many prompts it skipped (rollouts saved on groups predicted to have no reward spread) and
    the tuned probabilities.

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
    _skipped: int = field(default=0, repr=False)

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
        self._last, self._skipped = chosen, int((~kept).sum())
        return chosen

    def metrics(self) -> dict[str, float]:
        """The last call's skipped prompts and the keep probabilities it used.

        >>> h = PromptHistory()
        >>> h.update("solved", [1.0] * 4)
        >>> selector = GresoSelector(p_easy=0.0, p_min=0.0)
        >>> _ = selector.select(["solved", "open"], 1, h, np.random.default_rng(0))
        >>> selector.metrics()["choose/greso/skipped"]
        1.0
        """
        return {
            "choose/greso/skipped": float(self._skipped),
            "choose/greso/p_easy": self.p_easy,
            "choose/greso/p_hard": self.p_hard,
        }

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


def task_category(task_id: str) -> str:
    """A task's category from its id: the part before its last '/' or ':' (the id if it has none).

    Bundled ids name their family that way: the MMATH split, the reasoning-gym generator, the SQL
    database, the MiniWoB page, the tau2 domain.

    >>> [task_category(t) for t in ("mmath/AIME2024/3", "rg/chain_sum/12", "tau2_airline/009",
    ...                             "miniwob/click-button/0", "airline:7", "q1")]
    ['mmath/AIME2024', 'rg/chain_sum', 'tau2_airline', 'miniwob/click-button', 'airline', 'q1']
    """
    cut = max(task_id.rfind("/"), task_id.rfind(":"))
    return task_id[:cut] if cut > 0 else task_id


@dataclass
class SecSelector:
    """SEC's curriculum (Chen et al. 2025, "Self-Evolving Curriculum for LLM Reasoning", §3): a
    non-stationary multi-armed bandit with one arm per task category.

    Each prompt of a batch is drawn by sampling a category from the Boltzmann distribution over
    the arms' values, softmax(Q / `temperature`), then a prompt of it uniformly (without
    replacement). `learn` rewards each category with the mean absolute GRPO advantage its groups
    yielded (a proxy of the learning gain: 0 for a group without spread) and moves its value by
    TD(0) with step size `step_size`, Q ← Q + α (r − Q), so recent rounds weigh most as the
    policy moves. `category` maps a task id to its category (default `task_category`).

    >>> sec = SecSelector(temperature=0.1)
    >>> sec.learn({"easy/0": [1.0, 1.0, 1.0, 1.0], "mixed/0": [1.0, 0.0, 1.0, 0.0]})
    >>> {c: round(q, 3) for c, q in sec.values.items()}
    {'easy': 0.0, 'mixed': 0.433}
    >>> pool = ["easy/1", "easy/2", "mixed/1", "mixed/2"]
    >>> sorted(sec.select(pool, 2, PromptHistory(), np.random.default_rng(0)))
    ['mixed/1', 'mixed/2']
    """

    temperature: float = 1.0
    step_size: float = 0.5
    category: Callable[[str], str] = task_category
    values: dict[str, float] = field(default_factory=dict)  # Q per category seen (0 before any reward)
    _chosen: dict[str, int] = field(default_factory=dict, repr=False)  # the last call's prompts by category

    def __post_init__(self) -> None:
        if self.temperature <= 0:
            raise ConfigError(f"SEC temperature must be > 0, got {self.temperature}")
        if not 0.0 < self.step_size <= 1.0:
            raise ConfigError(f"SEC step_size must be in (0, 1], got {self.step_size}")

    def select(
        self, task_ids: Sequence[str], num: int, history: PromptHistory, rng: np.random.Generator
    ) -> list[str]:
        pools: dict[str, list[str]] = {}
        for task_id in task_ids:
            pools.setdefault(self.category(task_id), []).append(task_id)
        chosen: list[str] = []
        self._chosen = dict.fromkeys(pools, 0)
        while len(chosen) < num and pools:
            names = list(pools)
            q = np.array([self.values.get(c, 0.0) for c in names]) / self.temperature
            p = np.exp(q - q.max())  # softmax, shifted against overflow
            category = names[rng.choice(len(names), p=p / p.sum())]
            chosen.append(pools[category].pop(int(rng.integers(len(pools[category])))))
            self._chosen[category] += 1
            pools = {c: ids for c, ids in pools.items() if ids}
        return chosen

    def metrics(self) -> dict[str, float]:
        """Each category's value and its share of the last call's prompts: where the bandit sends
        the batch, and why.

        >>> sec = SecSelector(temperature=0.1, values={"easy": 0.0, "mixed": 0.4})
        >>> pool = ["easy/1", "easy/2", "mixed/1", "mixed/2"]
        >>> _ = sec.select(pool, 2, PromptHistory(), np.random.default_rng(0))
        >>> sec.metrics()["choose/sec/share/mixed"], sec.metrics()["choose/sec/value/mixed"]
        (1.0, 0.4)
        """
        total = max(sum(self._chosen.values()), 1)
        values = {f"choose/sec/value/{c}": q for c, q in self.values.items()}
        return values | {f"choose/sec/share/{c}": n / total for c, n in self._chosen.items()}

    def learn(self, rewards: Mapping[str, Sequence[float]]) -> None:
        """Reward each category with the mean |advantage| of its groups; TD(0) update of its value."""
        gains: dict[str, list[float]] = {}
        for task_id, group in rewards.items():
            if group:
                gain = float(np.abs(group_advantages(group)).mean())
                gains.setdefault(self.category(task_id), []).append(gain)
        for c, g in gains.items():
            q = self.values.get(c, 0.0)
            self.values[c] = q + self.step_size * (float(np.mean(g)) - q)

    def state_dict(self) -> dict[str, Any]:
        """The arms' values (the bandit's state; temperature, step size and categories are config)."""
        return {"values": dict(self.values)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.values = {c: float(q) for c, q in state["values"].items()}


SELECTORS = {
    "uniform": UniformSelector,
    "greso": GresoSelector,
    "vcrl": VarianceSelector,
    "thompson": ThompsonSelector,
    "sec": SecSelector,
}
