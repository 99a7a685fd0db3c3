"""The `Verifier` protocol and its one `Verdict`: what every checker in gfcr speaks.

A verifier judges a trajectory as an attempt at a task against the task's gold data. Each env
family ships one that re-judges a saved trajectory offline (`gfcr.envs.math.MathVerifier`,
`CodeVerifier`, `SQLVerifier`, `BrowserVerifier`, `DialogueVerifier`); the GFCR modules (rubrics,
judges, replay, control) only ever see this protocol.

>>> Verdict(1.0, True, {"correct": True}).passed
True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from gfcr.core.task import Task
from gfcr.core.trajectory import Signals, Trajectory


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
