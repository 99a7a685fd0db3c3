"""`SignalVerifier`: the verdict an env already gave, read back from a trajectory's signals.

The `Verifier` protocol and its `Verdict` live in `gfcr.core.verdict` .
"""

from __future__ import annotations

from dataclasses import dataclass

from gfcr.core import Task, Trajectory
from gfcr.core.verdict import Verdict
from gfcr.errors import ConfigError


@dataclass(frozen=True)
class SignalVerifier:
    """The verdict the env already gave: the last step's signal `key` (bool or number).

    Use it where the env's check needs the env's state (a database, a page) and cannot be
    re-run from the trajectory alone.

    >>> from gfcr.core import Step
    >>> t = Trajectory("gfcr/Math-v0", "t", "1+1?", [Step("2", "ok", 1.0, True, False, {"correct": True})])
    >>> SignalVerifier("correct").verify(Task("t", "1+1?"), t)
    Verdict(reward=1.0, passed=True, signals={'correct': True})
    """

    key: str = "correct"
    threshold: float = 1.0  # a numeric signal passes at or above this

    def __post_init__(self) -> None:
        if not self.key:
            raise ConfigError("SignalVerifier needs a signal key, e.g. 'correct'; got ''")

    def verify(self, task: Task, trajectory: Trajectory) -> Verdict:
        value = float(trajectory.signals.get(self.key, 0.0))
        return Verdict(value, value >= self.threshold, dict(trajectory.signals))

