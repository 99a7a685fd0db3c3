"""`diagnose`: every pathology of the rollout pathology index, graded, with the criteria report.

>>> import tempfile
>>> from gfcr.core import Step, Trajectory, write_jsonl
>>> fail = lambda: Trajectory("e", "hard", "?", [Step("x", "", 0.0, True, False, {"correct": False})])
>>> path = tempfile.mkdtemp() + "/run.jsonl"
>>> _ = write_jsonl([fail() for _ in range(4)], path)
>>> found = diagnose(load_run([path]))
>>> found.pathology("zero_variance_groups").severity, found.criteria["coverage"]["informative_share"]
('high', 0.0)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gfcr.apps.diagnose.base import Pathology
from gfcr.apps.diagnose.calibrate import Calibration, calibrate
from gfcr.apps.diagnose.card import card
from gfcr.apps.diagnose.criteria import criteria, criteria_by_run
from gfcr.apps.diagnose.data import RunData, load_run
from gfcr.apps.diagnose.groups import wasted_compute, zero_variance_groups
from gfcr.apps.diagnose.length import length_inflation
from gfcr.apps.diagnose.reverify import Reverification, reverify
from gfcr.apps.diagnose.signals import noisy_signals, reward_hacking
from gfcr.apps.diagnose.staleness import stale_replay

__all__ = ["Diagnosis", "diagnose", "load_run"]


@dataclass
class Diagnosis:
    """The six pathologies (in the index's order) and the criteria, the card among them."""

    pathologies: list[Pathology]
    criteria: dict[str, Any]
    sources: list[str]

    def pathology(self, name: str) -> Pathology:
        return next(p for p in self.pathologies if p.name == name)

    @property
    def found(self) -> list[Pathology]:
        return [p for p in self.pathologies if p.found]

    def to_dict(self) -> dict[str, Any]:
        """What `gfcr diagnose --json` prints: {"pathologies": [...], "criteria": {...}}."""
        return {"pathologies": [p.to_dict() for p in self.pathologies], "criteria": self.criteria}


def diagnose(
    data: RunData,
    *,
    reverify_repeats: int = 0,
    calibrate_tasks: int = 0,
    suite_fingerprint: str | None = None,
) -> Diagnosis:
    """Grade every pathology of `data`; with `reverify_repeats` > 0 every finished episode is first
    re-judged that many times by its env's verifier (a second verifier over the same work); with
    `calibrate_tasks` > 0 that verifier judges the gold and a junk episode of up to that many
    tasks per env (`calibrate`)."""
    rejudged: Reverification | None = None
    calibrated: Calibration | None = None
    if reverify_repeats > 0 and data.trajectories:
        rejudged = reverify(
            data.runs,
            repeats=reverify_repeats,
            env_kwargs=data.env_kwargs,
            episode_kwargs=data.episode_kwargs,
        )
    if calibrate_tasks > 0 and data.trajectories:
        calibrated = calibrate(data.runs, max_tasks=calibrate_tasks, env_kwargs=data.env_kwargs)
    pathologies = [
        zero_variance_groups(data),
        reward_hacking(data, rejudged),
        length_inflation(data),
        noisy_signals(data, rejudged, calibrated),
        wasted_compute(data),
        stale_replay(data),
    ]
    report = criteria(data, rejudged, calibrated)
    if len(data.runs) > 1:  # several agents or files: each alone too, since pooled scores mix them
        report["by_run"] = criteria_by_run(data, rejudged, calibrated)
    report["card"] = card(data, suite_fingerprint=suite_fingerprint)
    return Diagnosis(pathologies, report, data.sources)
