"""A judge measured against the verifier: its verdicts on the gold and junk episodes of calibration.

`gfcr diagnose --calibrate --judge SPEC` plays each task's gold episode (`scripted:oracle`) and a
junk one (`scripted:random`), as `calibrate` does for the env's verifier, and shows the judge
both as one group (a relative judge compares them). A judge's verdict passes at `pass_at`; it
agrees with the verifier when both pass or both fail an episode. Reported, per env and overall:

- `agreement`: share of the episodes the judge scored on which it agrees with the verifier;
- `false_pass_rate`: share of the episodes the verifier rejected (the junk) that the judge passed:
  reward hacking's way in;
- `false_fail_rate`: share of the episodes the verifier accepted (the gold) that the judge failed;
- `failure_rate`: share of the episodes the judge could not score (it raised, missed its deadline
  or answered nothing parsable): counted as failures, never scored 0.

>>> from gfcr.core import Step, Task, Trajectory
>>> def episode(answer):
...     return Trajectory("e", "t", "?", [Step(answer, "", 0.0, True, False)])
>>> class Judge:  # passes "4", and cannot judge anything else
...     def scores(self, task, group):
...         return [1.0 if t.steps[-1].action == "4" else None for t in group]
>>> found = JudgeCalibration("scripted", Judge())
>>> found.add("gfcr/Math-v0", Task("t", "2+2?"), [(episode("4"), True), (episode("x"), False)])
>>> overall = found.to_dict()["overall"]
>>> overall["failures"], overall["failure_rate"], overall["agreement"], overall["false_pass_rate"]
(1, 0.5, 1.0, None)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rich import box
from rich.table import Table

from gfcr.apps.diagnose.pathology import share
from gfcr.core import Task, Trajectory
from gfcr.filter.compose import RewardTerm


@dataclass(frozen=True)
class JudgedEpisode:
    """One calibration episode: the verifier's verdict and the judge's score (None: no score)."""

    env_id: str
    task_id: str
    verifier_passed: bool
    score: float | None


@dataclass
class JudgeCalibration:
    """The judge's scores of every calibration episode, summarised per env and overall."""

    judge: str  # its name in the report
    term: RewardTerm = field(repr=False)
    pass_at: float = 0.5
    episodes: list[JudgedEpisode] = field(default_factory=list)

    def add(self, env_id: str, task: Task, played: Sequence[tuple[Trajectory, bool]]) -> None:
        """Judge one task's played episodes (each with the verifier's pass) as one group."""
        scores = self.term.scores(task, [episode for episode, _ in played])
        for (_, passed), score in zip(played, scores, strict=True):
            self.episodes.append(JudgedEpisode(env_id, task.id, passed, score))

    def summary(self, episodes: Sequence[JudgedEpisode]) -> dict[str, Any]:
        """The measures of `episodes` (see the module); a rate of nothing is None, not 0."""
        scored = [(e, e.score >= self.pass_at) for e in episodes if e.score is not None]  # (episode, passed)
        agree = [passed == e.verifier_passed for e, passed in scored]
        junk = [passed for e, passed in scored if not e.verifier_passed]
        gold = [not passed for e, passed in scored if e.verifier_passed]
        failures = len(episodes) - len(scored)
        return {
            "episodes": len(episodes),
            "scored": len(scored),
            "failures": failures,
            "failure_rate": share(failures, len(episodes)) if episodes else None,
            "agreement": share(sum(agree), len(agree)) if agree else None,
            "false_pass_rate": share(sum(junk), len(junk)) if junk else None,
            "false_fail_rate": share(sum(gold), len(gold)) if gold else None,
        }

    def to_dict(self) -> dict[str, Any]:
        envs = sorted({e.env_id for e in self.episodes})
        return {
            "judge": self.judge,
            "pass_at": self.pass_at,
            "overall": self.summary(self.episodes),
            "by_env": {env: self.summary([e for e in self.episodes if e.env_id == env]) for env in envs},
        }


def judge_table(found: dict[str, Any]) -> Table:
    """`JudgeCalibration.to_dict()` as a rich table: one row per env, then the overall one."""
    table = Table(
        title=f"judge calibration · {found['judge']} (passes at {found['pass_at']})",
        title_justify="left",
        box=box.SIMPLE_HEAD,
    )
    columns = ("episodes", "failures", "failure_rate", "agreement", "false_pass_rate", "false_fail_rate")
    table.add_column("env")
    for column in columns:
        table.add_column(column.replace("_", " "), justify="right")
    rows = [*found["by_env"].items(), ("overall", found["overall"])]
    for env, measures in rows:
        table.add_row(env, *("—" if measures[c] is None else str(measures[c]) for c in columns))
    return table
