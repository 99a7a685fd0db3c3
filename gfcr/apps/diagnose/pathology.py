"""What a diagnosis says about one pathology: its name, severity, evidence and levers.

Severity is one of `SEVERITIES`, graded by `gfcr.filter.indicators.severity` against each
indicator's (low, medium, high) boundaries in `THRESHOLDS`; "not_measurable" says the input holds
nothing to judge it by (and the evidence says why), never a guessed value.

>>> p = Pathology("zero_variance_groups", "high", {"share": 0.8}, ["enable [control] dynamic_sampling"])
>>> p.found, Pathology.unmeasurable("stale_replay", "no replay").evidence
(True, {'not_measurable': 'not measurable from this input: no replay'})
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from gfcr.filter.indicators import THRESHOLDS

SEVERITIES = ("none", "low", "medium", "high", "not_measurable")
PATHOLOGIES = (
    "zero_variance_groups",
    "reward_hacking",
    "length_inflation",
    "noisy_signals",
    "wasted_compute",
    "stale_replay",
    "entropy_collapse",
)
RANK = {"none": 0, "low": 1, "medium": 2, "high": 3, "not_measurable": -1}


@dataclass
class Pathology:
    """One pathology's finding; `levers` are concrete gfcr config changes, with the reason."""

    name: str
    severity: str
    evidence: dict[str, Any] = field(default_factory=dict)
    levers: list[str] = field(default_factory=list)

    @property
    def found(self) -> bool:
        return RANK[self.severity] > 0

    @classmethod
    def unmeasurable(cls, name: str, why: str) -> Pathology:
        return cls(name, "not_measurable", {"not_measurable": f"not measurable from this input: {why}"})

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def worst(*severities: str) -> str:
    """The most severe of `severities` (a measured one over "not_measurable")."""
    return max(severities, key=lambda s: RANK[s]) if severities else "none"


def thresholds(indicator: str) -> dict[str, float]:
    """An indicator's boundaries as evidence: {"low": …, "medium": …, "high": …}."""
    return dict(zip(("low", "medium", "high"), THRESHOLDS[indicator], strict=True))


def share(part: float, whole: float) -> float:
    return round(part / whole, 4) if whole else 0.0
