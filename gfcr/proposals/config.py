"""`[propose]`: the trainer's propose stage (tasks the policy proposes), off by default."""

from __future__ import annotations

from dataclasses import dataclass

from gfcr.core.config import setting
from gfcr.errors import ConfigError
from gfcr.proposals.learnability import learnability


@dataclass(frozen=True)
class ProposeConfig:
    """How many tasks the policy proposes each step, from what, and which it keeps.

    >>> ProposeConfig(enabled=True, band_low=0.0, band_high=0.9).band
    (0.0, 0.9)
    """

    enabled: bool = setting(
        False, "Each step the policy proposes tasks, verified by execution (Absolute Zero)."
    )
    family: str = setting(
        "",
        "Env id whose tasks are proposed and solved (gfcr/Code-v0, gfcr/Math-v0, gfcr/SQL-v0); "
        "empty: the first env of the task pool that takes proposals.",
    )
    proposals_per_step: int = setting(4, "Proposer episodes per step: one group on one prompt.")
    parents: int = setting(2, "Pool tasks of the family the proposer prompt shows as examples (its parents).")
    solver_attempts: int = setting(
        4, "Solver episodes per valid proposal: its success rate, and a group trained on."
    )
    blind_attempts: int = setting(
        4,
        "Episodes per valid proposal with its question withheld (not trained on): the policy's guess "
        "rate on its answer. 0 turns the check off, and a task whose answer is guessed (yes/no, "
        "always 0) pays its proposer as if it were learnable.",
    )
    min_gain: float = setting(
        0.25,
        "A proposal whose solver success beats its guess rate by less than this is guessable (reward 0).",
    )
    band_low: float = setting(0.0, "A task is learnable when solver success is above this …")
    band_high: float = setting(
        1.0, "… and below this; the proposer's reward is 1 − success inside the band, else 0."
    )
    max_similarity: float = setting(
        0.6, "Word n-gram Jaccard similarity to a known task at which a proposal is a duplicate."
    )
    ngram: int = setting(3, "n of the word n-grams novelty compares.")
    max_age: int = setting(20, "Steps a generated task stays in the choose pool at most.")

    def __post_init__(self) -> None:
        if min(self.proposals_per_step, self.parents, self.solver_attempts, self.max_age, self.ngram) < 1:
            raise ConfigError(
                "[propose] proposals_per_step, parents, solver_attempts, max_age and ngram must be >= 1, "
                f"got {self.proposals_per_step}, {self.parents}, {self.solver_attempts}, {self.max_age}, "
                f"{self.ngram}"
            )
        if self.blind_attempts < 0:
            raise ConfigError(
                f"[propose] blind_attempts must be >= 0 (0: no guess check), got {self.blind_attempts}"
            )
        if not 0.0 <= self.min_gain <= 1.0:
            raise ConfigError(f"[propose] min_gain must be in [0, 1], got {self.min_gain}")
        if not 0.0 < self.max_similarity <= 1.0:
            raise ConfigError(f"[propose] max_similarity must be in (0, 1], got {self.max_similarity}")
        learnability(0.5, self.band)  # a bad band fails here, not in the first step

    @property
    def band(self) -> tuple[float, float]:
        """The solver-success band (exclusive) of a learnable task."""
        return (self.band_low, self.band_high)
