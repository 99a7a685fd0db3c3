"""Rubrics: verifiers composed by weighted sums and gates, and rubrics over a whole group.

A `Rubric` is itself a `Verifier`, so rubrics nest. A gate that fails zeroes the reward
(`gate_reward`), whatever the other criteria say: a malformed answer earns nothing even when
a lenient checker would accept its content.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from gfcr.core import Task, Trajectory
from gfcr.core.verdict import Verdict, Verifier
from gfcr.errors import ConfigError
from gfcr.filter.signals import response_length


@dataclass(frozen=True)
class Criterion:
    """One part of a rubric: a named verifier, its weight in the sum, and whether it gates."""

    name: str
    verifier: Verifier
    weight: float = 1.0
    gate: bool = False


@dataclass(frozen=True)
class Rubric:
    """reward = Σ weight_i · reward_i if every gate passes, else `gate_reward`.

    `passed` is True when every gate and every weighted criterion passed. The signals of each
    criterion come back prefixed with its name (`correct/…`), plus `<name>` = its reward.

    >>> from gfcr.core import Step
    >>> from gfcr.filter import SignalVerifier
    >>> signals = {"format_ok": False, "correct": True}
    >>> t = Trajectory("e", "t", "?", [Step("x", "", 1.0, True, False, signals)])
    >>> rubric = Rubric((Criterion("format", SignalVerifier("format_ok"), 0.0, gate=True),
    ...                  Criterion("correct", SignalVerifier("correct"), 1.0)))
    >>> rubric.verify(Task("t", "?"), t).reward
    0.0
    """

    criteria: tuple[Criterion, ...]
    gate_reward: float = 0.0

    def __post_init__(self) -> None:
        names = [c.name for c in self.criteria]
        if not names or len(set(names)) != len(names):
            raise ConfigError(f"a rubric needs criteria with distinct names, got {names}")

    def verify(self, task: Task, trajectory: Trajectory) -> Verdict:
        signals: dict[str, float | bool] = {}
        total, gates_ok, all_ok = 0.0, True, True
        for criterion in self.criteria:
            verdict = criterion.verifier.verify(task, trajectory)
            signals[criterion.name] = verdict.reward
            signals.update({f"{criterion.name}/{k}": v for k, v in verdict.signals.items()})
            if criterion.gate:
                gates_ok = gates_ok and verdict.passed
            if criterion.weight:
                all_ok = all_ok and verdict.passed
                total += criterion.weight * verdict.reward
        if not gates_ok:
            return Verdict(self.gate_reward, False, signals)
        return Verdict(total, all_ok, signals)


@runtime_checkable
class GroupRubric(Protocol):
    """Scores a group of K attempts at one task together; returns K rewards."""

    def score_group(
        self, task: Task, trajectories: Sequence[Trajectory], rewards: Sequence[float]
    ) -> list[float]:
        """`rewards` are the per-trajectory rewards so far (e.g. a `Rubric`'s); same order out."""
        ...


@dataclass(frozen=True)
class MajorityVote:
    """Label-free reward: 1.0 for the group's most common answer, 0.0 otherwise (TTRL, Zuo et al. 2025).

    `extract` reads the answer from a trajectory (None: no answer, never the majority).
    The incoming rewards are ignored: the vote is the label.

    >>> from gfcr.core import Step
    >>> group = [Trajectory("e", "t", "?", [Step(a, "", 0.0, True, False)]) for a in "4 4 5".split()]
    >>> MajorityVote(lambda t: t.steps[-1].action).score_group(Task("t", "?"), group, [0, 0, 0])
    [1.0, 1.0, 0.0]
    """

    extract: Callable[[Trajectory], str | None]

    def score_group(
        self, task: Task, trajectories: Sequence[Trajectory], rewards: Sequence[float]
    ) -> list[float]:
        answers = [self.extract(t) for t in trajectories]
        counts = Counter(a for a in answers if a is not None)
        if not counts:
            return [0.0] * len(trajectories)
        majority = counts.most_common(1)[0][0]
        return [1.0 if a == majority else 0.0 for a in answers]


@dataclass(frozen=True)
class LengthPenalty:
    """Kimi k1.5's group length reward (Kimi Team 2025, §2.3.3), added with weight `coef`.

    λ_i = 0.5 - (len_i - min_len) / (max_len - min_len) over the group; a correct response
    (reward >= `correct_at`) gets λ_i, a wrong one min(0, λ_i): short correct answers are
    preferred and long wrong ones punished. All lengths equal: no change.

    >>> from gfcr.core import Step
    >>> group = [Trajectory("e", "t", "?", [Step("x" * n, "", 0.0, True, False)]) for n in (10, 20, 30)]
    >>> LengthPenalty(coef=1.0).score_group(Task("t", "?"), group, [1.0, 1.0, 0.0])
    [1.5, 1.0, -0.5]
    """

    coef: float = 1.0
    correct_at: float = 1.0

    def score_group(
        self, task: Task, trajectories: Sequence[Trajectory], rewards: Sequence[float]
    ) -> list[float]:
        lengths = [response_length(t) for t in trajectories]
        shortest, longest = min(lengths), max(lengths)
        if longest == shortest:
            return [float(r) for r in rewards]
        out = []
        for reward, length in zip(rewards, lengths, strict=True):
            lam = 0.5 - (length - shortest) / (longest - shortest)
            bonus = lam if reward >= self.correct_at else min(0.0, lam)
            out.append(float(reward) + self.coef * bonus)
        return out
