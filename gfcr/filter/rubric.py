"""Rubrics: verifiers composed by weighted sums and gates (a group's terms: `gfcr.filter.compose`).

A `Rubric` is itself a `Verifier`, so rubrics nest. A gate that fails zeroes the reward
(`gate_reward`), whatever the other criteria say: a malformed answer earns nothing even when
a lenient checker would accept its content.
"""

from __future__ import annotations

from dataclasses import dataclass

from gfcr.core import Task, Trajectory
from gfcr.core.verdict import Verdict, Verifier
from gfcr.errors import ConfigError


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
