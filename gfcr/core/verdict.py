"""The `Verifier` protocol and its one `Verdict`: what every checker in gfcr speaks.

A verifier judges a trajectory as an attempt at a task against the task's gold data. Each env
family ships one that re-judges a saved trajectory offline (`gfcr.envs.math.MathVerifier`,
`CodeVerifier`, `SQLVerifier`, `BrowserVerifier`, `DialogueVerifier`); the GFCR modules (rubrics,
judges, replay, control) only ever see this protocol.

`solved(reward)` is the one definition of a solved episode's reward (`SUCCESS_REWARD`, less
float error), shared by every verifier, the runner, control, replay and the reports.

>>> Verdict(1.0, True, {"correct": True}).passed
True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from gfcr.core.task import Task
from gfcr.core.trajectory import Signals, Trajectory

SUCCESS_REWARD = 1.0  # a reward that reaches this solves the task
REWARD_TOLERANCE = 1e-9  # summed partial rewards (0.1 * 10) land a hair below 1.0: still solved


def solved(reward: float, threshold: float = SUCCESS_REWARD) -> bool:
    """Whether `reward` reaches `threshold` (`SUCCESS_REWARD` unless a component sets its own).

    >>> solved(1.0), solved(sum([0.1] * 10)), solved(0.99), solved(0.5, threshold=0.5)
    (True, True, False, True)
    """
    return reward >= threshold - REWARD_TOLERANCE


@dataclass(frozen=True)
class Verdict:
    """A verifier's judgement: the reward, whether the work passed, and the signals behind it."""

    reward: float
    passed: bool
    signals: Signals = field(default_factory=dict)


@runtime_checkable
class Verifier(Protocol):
    """Judges `trajectory` as an attempt at `task`; must never raise on malformed work."""

    def verify(self, task: Task, trajectory: Trajectory) -> Verdict: ...
