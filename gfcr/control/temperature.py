"""Sampling settings per prompt: a temperature chosen from what the posterior knows of the prompt.

A group teaches only when its rewards differ, and a prompt of success rate p gives the most spread
at p = 1/2 (the variance p(1-p) of a binary reward). Temperature moves p: sampling hotter makes a
policy err more often on a prompt it solves (Polaris, An et al. 2025, raises the temperature as
the policy sharpens, to keep its rollouts diverse), while sampling cooler concentrates on the
policy's likeliest answer, which on a prompt it rarely solves is right more often than a hot
sample (why pass@1 is measured cool). So prompts the posterior calls solved sample hotter, to find a failure,
and prompts it calls unsolved sample cooler, to find a success; the rest keep the runner's
temperature. Prompts never seen have the prior's mean (1/2 by default) and keep it too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gfcr.control.posterior import PromptStats
from gfcr.errors import ConfigError


@dataclass(frozen=True)
class TemperatureBySuccess:
    """`solved` temperature where the posterior mean success is >= `solved_above`, `unsolved`
    where it is <= `unsolved_below` (None: the runner's temperature).

    >>> rule = TemperatureBySuccess(solved=1.2, unsolved=0.6)
    >>> rule.sampling(PromptStats(alpha=9.0, beta=1.0)), rule.sampling(PromptStats(1.0, 9.0))
    ({'temperature': 1.2}, {'temperature': 0.6})
    >>> rule.sampling(PromptStats(alpha=1.0, beta=1.0))  # unseen, or in between: no override
    {}
    """

    solved: float | None = None
    unsolved: float | None = None
    solved_above: float = 0.8
    unsolved_below: float = 0.2

    def __post_init__(self) -> None:
        for name in ("solved", "unsolved"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ConfigError(f"temperature_{name} must be >= 0 (0 is greedy), got {value}")
        if not 0.0 <= self.unsolved_below < self.solved_above <= 1.0:
            raise ConfigError(
                f"need 0 <= unsolved_below < solved_above <= 1, got {self.unsolved_below} and "
                f"{self.solved_above}; move them apart"
            )

    def sampling(self, stats: PromptStats) -> dict[str, Any]:
        """The `SamplingParams` fields to override for a prompt with these stats."""
        if self.solved is not None and stats.mean >= self.solved_above:
            return {"temperature": self.solved}
        if self.unsolved is not None and stats.mean <= self.unsolved_below:
            return {"temperature": self.unsolved}
        return {}
