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

from dataclasses import dataclass, field
from typing import Any

from gfcr.apps.diagnose.calibrate import Calibration, calibrate
from gfcr.apps.diagnose.card import card
from gfcr.apps.diagnose.criteria import criteria, criteria_by_run
from gfcr.apps.diagnose.data import RunData, load_run
from gfcr.apps.diagnose.drift import proposal_drift
from gfcr.apps.diagnose.entropy import entropy_collapse
from gfcr.apps.diagnose.groups import wasted_compute, zero_variance_groups
from gfcr.apps.diagnose.length import length_inflation
from gfcr.apps.diagnose.pathology import PATHOLOGIES, Pathology, worst
from gfcr.apps.diagnose.reverify import Reverification, reverify
from gfcr.apps.diagnose.signals import noisy_signals, reward_hacking
from gfcr.apps.diagnose.staleness import stale_replay
from gfcr.filter.compose import RewardTerm

__all__ = ["Diagnosis", "diagnose", "load_run"]


@dataclass
class Diagnosis:
    """The pathologies (in the index's order) and the criteria, the card among them.

    An evaluation of several runs (a bench report's agents) is diagnosed run by run: `runs` holds
    each run's pathologies, and `pathologies` each one's worst severity over the runs (evidence
    `by_run`: run -> severity), for `--fail-on`.
    """

    pathologies: list[Pathology]
    criteria: dict[str, Any]
    sources: list[str]
    runs: dict[str, list[Pathology]] = field(default_factory=dict)

    def pathology(self, name: str) -> Pathology:
        return next(p for p in self.pathologies if p.name == name)

    @property
    def found(self) -> list[Pathology]:
        return [p for p in self.pathologies if p.found]

    def to_dict(self) -> dict[str, Any]:
        """What `gfcr diagnose --json` prints: {"pathologies": [...], "criteria": {...}}, and with
        several runs `"runs": {run: [...]}`."""
        out: dict[str, Any] = {"pathologies": [p.to_dict() for p in self.pathologies]}
        out["criteria"] = self.criteria
        if self.runs:
            out["runs"] = {run: [p.to_dict() for p in found] for run, found in self.runs.items()}
        return out


def diagnose(
    data: RunData,
    *,
    reverify_repeats: int = 0,
    calibrate_tasks: int = 0,
    judge: RewardTerm | None = None,
    judge_name: str = "judge",
    suite_fingerprint: str | None = None,
) -> Diagnosis:
    """Grade every pathology of `data`; with `reverify_repeats` > 0 every finished episode is first
    re-judged that many times by its env's verifier (a second verifier over the same work); with
    `calibrate_tasks` > 0 that verifier judges the gold and a junk episode of up to that many
    tasks per env (`calibrate`), and so does `judge` if given (its agreement with the verifier,
    false passes and failures: `criteria["judge_calibration"]`).

    Several runs of an evaluation (a bench report's agents, several files) are diagnosed each
    alone: an oracle's all-pass groups say nothing about a random agent's. A training out_dir is
    one run, its saved rollouts included."""
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
        calibrated = calibrate(
            data.runs,
            max_tasks=calibrate_tasks,
            env_kwargs=data.env_kwargs,
            judge=judge,
            judge_name=judge_name,
        )
    runs: dict[str, list[Pathology]] = {}
    if len(data.runs) > 1 and not data.training:
        for run in data.runs:
            runs[run] = _pathologies(data.only(run), rejudged and rejudged.only(run), calibrated)
        pathologies = [_worst_of_runs(name, runs) for name in PATHOLOGIES]
    else:
        pathologies = _pathologies(data, rejudged, calibrated)
    report = criteria(data, rejudged, calibrated)
    if len(data.runs) > 1:  # several agents or files: each alone too, since pooled scores mix them
        report["by_run"] = criteria_by_run(data, rejudged, calibrated)
    if calibrated is not None and calibrated.judge is not None:
        report["judge_calibration"] = calibrated.judge.to_dict()
    if data.proposals is not None:  # a run with [propose]: its generated tasks over training
        report["proposals"] = proposal_drift(data.proposals, data.metrics)
    report["card"] = card(data, suite_fingerprint=suite_fingerprint)
    return Diagnosis(pathologies, report, data.sources, runs)


def _pathologies(
    data: RunData, rejudged: Reverification | None, calibrated: Calibration | None
) -> list[Pathology]:
    return [
        zero_variance_groups(data),
        reward_hacking(data, rejudged),
        length_inflation(data),
        noisy_signals(data, rejudged, calibrated),
        wasted_compute(data),
        stale_replay(data),
        entropy_collapse(data),
    ]


def _worst_of_runs(name: str, runs: dict[str, list[Pathology]]) -> Pathology:
    by_run = {run: next(p.severity for p in found if p.name == name) for run, found in runs.items()}
    return Pathology(name, worst(*by_run.values()), {"by_run": by_run})
