"""Process scores: a score for every prefix of an episode, written into each step's signals.

A `ProcessScorer` (a process reward model, a heuristic, a partial verifier) scores the
trajectory so far. `ProcessScoreHook` is the runner's Filter hook (`on_step`): it stores the
score as the step's signal `process_score`, where Control (`PrefixStop`) and the trainer read it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from gfcr.core import Step, Trajectory
from gfcr.errors import ConfigError


@runtime_checkable
class ProcessScorer(Protocol):
    """Scores a partial trajectory (no gold data needed): higher is more promising."""

    def score(self, trajectory: Trajectory) -> float: ...


@dataclass(frozen=True)
class ProcessScoreHook:
    """Runner hook: `Runner(..., filters=[ProcessScoreHook(scorer)])`.

    >>> class Short:
    ...     def score(self, trajectory):
    ...         return 1.0 if len(trajectory.steps[-1].action) < 10 else 0.0
    >>> t = Trajectory("e", "t", "?", [Step("a very long step", "", 0.0, False, False)])
    >>> ProcessScoreHook(Short()).on_step(t, t.steps[-1])
    >>> t.steps[-1].signals
    {'process_score': 0.0}

    A plain function of the trajectory works too: `ProcessScoreHook(lambda t: 1.0)`.
    """

    scorer: ProcessScorer | Callable[[Trajectory], float]
    key: str = "process_score"

    def __post_init__(self) -> None:
        if not self.key:
            raise ConfigError("ProcessScoreHook needs a signal key, got ''")
        if not isinstance(self.scorer, ProcessScorer) and not callable(self.scorer):
            raise ConfigError(
                f"ProcessScoreHook needs a scorer with score(trajectory) -> float or a function "
                f"trajectory -> float, got {type(self.scorer).__name__}"
            )

    def on_step(self, trajectory: Trajectory, step: Step) -> None:
        scorer = self.scorer
        score = scorer.score(trajectory) if isinstance(scorer, ProcessScorer) else scorer(trajectory)
        step.signals[self.key] = float(score)
