"""`entropy_collapse`: the token entropy's drop over training, graded against its thresholds."""

from __future__ import annotations

import pytest

from gfcr.apps.diagnose import RunData, diagnose, load_run
from gfcr.apps.diagnose.entropy import entropy_collapse
from gfcr.core import TokenData
from gfcr.filter.indicators import THRESHOLDS


def steps(*entropies: float) -> RunData:
    """A training run's per-step metrics with these mean token entropies."""
    return RunData(metrics=[{"step": i + 1, "generate/entropy_mean": h} for i, h in enumerate(entropies)])


@pytest.mark.parametrize(
    ("entropies", "drop", "severity"),
    [
        ((2.0, 2.1, 1.9, 2.0), 0.0, "none"),  # first quarter 2.0, last 2.0
        ((2.0, 1.5, 1.2, 0.9), 0.55, "low"),
        ((2.0, 2.0, 1.0, 0.8, 0.6, 0.5, 0.4, 0.2), 1 - 0.3 / 2.0, "medium"),  # quarters of two steps
        ((1.6, 0.5, 0.1, 0.08), 0.95, "high"),
    ],
)
def test_the_drop_between_the_first_and_last_quarter_is_graded(entropies, drop, severity):
    found = entropy_collapse(steps(*entropies))
    assert found.evidence["entropy_drop"] == pytest.approx(drop, abs=1e-4)
    assert found.severity == severity
    assert tuple(found.evidence["thresholds"].values()) == THRESHOLDS["entropy_drop"]
    assert bool(found.levers) == (severity != "none")


def test_saved_rollouts_are_read_per_policy_version(episode, write):
    def with_entropy(version: str, h: float):
        t = episode("t", 1.0, version=version)
        t.tokens = TokenData([1], [2, 3], [1, 1], [0.0, 0.0], [h, h])
        return t

    path = write([with_entropy("1", 1.2), with_entropy("1", 0.8), with_entropy("2", 0.1)])
    found = diagnose(load_run([path])).pathology("entropy_collapse")
    assert found.evidence["trend"] == [[1, 1.0], [2, 0.1]] and found.evidence["entropy_drop"] == 0.9
    assert found.severity == "high"


def test_without_token_entropies_it_is_not_measurable(clean, write):
    assert diagnose(load_run([write(clean)])).pathology("entropy_collapse").severity == "not_measurable"
    assert entropy_collapse(steps(1.0)).severity == "not_measurable"  # one step: no trend
