"""Calibration against gold: does the verifier the re-judging uses accept each task's gold and
reject junk?

For each env of the input with an oracle (`scripted:oracle`, built from the task's gold data),
the gold episode of each distinct task is played offline and judged by the env's verifier (the
one `reverify` uses), and so is a junk episode (`scripted:random`). A rejected gold is a false
negative (the verifier fails correct work), an accepted junk a false positive. At most
`max_tasks` tasks per env are played, so a large run stays fast; envs or tasks that cannot be
played offline are skipped and counted with the reason. Given a `judge` (any `RewardTerm`, e.g.
an LLM judge), each task's gold and junk episodes are also shown to it as one group, and its
verdicts are measured against the verifier's (`judge_calibration`).

>>> from gfcr.core import Trajectory
>>> found = calibrate({"run": [Trajectory("gfcr/Math-v0", "mmath/AIME2024/0", "?")]})
>>> math = found.envs["gfcr/Math-v0"].to_dict()
>>> math["gold_acceptance"], math["junk_rejection"], math["gold_rejected_tasks"]
(1.0, 1.0, [])
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gfcr.agents import make_policy
from gfcr.agents.runner.rollout import rollout
from gfcr.apps.diagnose.judge_calibration import JudgeCalibration
from gfcr.apps.diagnose.pathology import share
from gfcr.apps.diagnose.reverify import find_task, open_verifiers
from gfcr.core import Trajectory, Verifier, solved
from gfcr.filter.compose import RewardTerm

logger = logging.getLogger(__name__)

GOLD, JUNK = "scripted:oracle", "scripted:random"


@dataclass
class EnvCalibration:
    """One env's gold and junk verdicts: the tasks played and those judged wrongly."""

    tasks_in_input: int = 0
    gold_judged: int = 0
    junk_judged: int = 0
    gold_rejected: list[str] = field(default_factory=list)  # task ids: false negatives
    junk_accepted: list[str] = field(default_factory=list)  # task ids: false positives

    def to_dict(self) -> dict[str, Any]:
        return {
            "tasks_in_input": self.tasks_in_input,
            "gold_judged": self.gold_judged,
            "gold_acceptance": _rate(self.gold_judged, len(self.gold_rejected)),
            "gold_rejected_tasks": self.gold_rejected,
            "junk_judged": self.junk_judged,
            "junk_rejection": _rate(self.junk_judged, len(self.junk_accepted)),
            "junk_accepted_tasks": self.junk_accepted,
        }


@dataclass
class Calibration:
    """Each env's calibration, and why the rest was skipped (reason -> tasks)."""

    envs: dict[str, EnvCalibration] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    max_tasks: int = 0
    judge: JudgeCalibration | None = None  # the judge's verdicts on the same episodes, if one was given

    def total(self, key: str) -> int:
        """Summed over envs: "gold_judged", "junk_judged", "gold_rejected" or "junk_accepted"."""
        values = [getattr(found, key) for found in self.envs.values()]
        return sum(len(v) if isinstance(v, list) else v for v in values)

    def rejection_shares(self) -> tuple[float, float]:
        """(share of gold rejected, share of junk accepted), over every env judged."""
        gold, junk = self.total("gold_judged"), self.total("junk_judged")
        return share(self.total("gold_rejected"), gold), share(self.total("junk_accepted"), junk)

    def to_dict(self) -> dict[str, Any]:
        gold, junk = self.total("gold_judged"), self.total("junk_judged")
        return {
            "max_tasks_per_env": self.max_tasks,
            "gold_judged": gold,
            "gold_acceptance": _rate(gold, self.total("gold_rejected")),
            "junk_judged": junk,
            "junk_rejection": _rate(junk, self.total("junk_accepted")),
            "by_env": {env_id: found.to_dict() for env_id, found in self.envs.items()},
            "skipped": self.skipped,
        } | ({"judge": self.judge.to_dict()} if self.judge is not None else {})


def _rate(judged: int, wrong: int) -> float | None:
    """The share judged rightly; None when nothing was judged (not a rate of 0)."""
    return share(judged - wrong, judged) if judged else None


def calibrate(
    runs: Mapping[str, Sequence[Trajectory]],
    *,
    max_tasks: int = 20,
    env_kwargs: Mapping[str, Sequence[dict[str, Any]]] | None = None,
    judge: RewardTerm | None = None,
    judge_name: str = "judge",
) -> Calibration:
    """Judge the gold and a junk episode of up to `max_tasks` distinct tasks per env of `runs`
    with the env's verifier (and `judge`, named `judge_name` in the report); an env id with
    several keyword sets is tried with each."""
    tasks: dict[str, list[str]] = {}
    for trajectories in runs.values():
        for t in trajectories:
            if t.task_id and t.task_id not in tasks.setdefault(t.env_id, []):
                tasks[t.env_id].append(t.task_id)
    result, skipped = Calibration(max_tasks=max_tasks), Counter[str]()
    if judge is not None:
        result.judge = JudgeCalibration(judge_name, judge, getattr(judge, "pass_at", 0.5))
    for env_id, task_ids in tasks.items():
        opened = open_verifiers(env_id, (env_kwargs or {}).get(env_id) or [{}])
        if not opened:
            skipped[f"{env_id}: no offline verifier"] += len(task_ids)
            continue
        try:
            found = _calibrate_env(env_id, task_ids[:max_tasks], opened, skipped, result.judge)
        finally:
            for env, _ in opened:
                env.close()
        if found.gold_judged or found.junk_judged:
            found.tasks_in_input = len(task_ids)
            result.envs[env_id] = found
    result.skipped = dict(skipped)
    return result


def _calibrate_env(
    env_id: str,
    task_ids: Sequence[str],
    opened: list[tuple[Any, Verifier]],
    skipped: Counter[str],
    judged: JudgeCalibration | None = None,
) -> EnvCalibration:
    found = EnvCalibration()
    gold, junk = make_policy(GOLD), make_policy(JUNK)  # the junk policy is seeded: the same junk each time
    for task_id in task_ids:
        where = find_task(opened, task_id)
        if where is None:
            skipped[f"{env_id}: task not found (pass the run's env keywords with -e)"] += 1
            continue
        env, task, verifier = where
        right = _judge(env, env_id, task, verifier, gold)
        if isinstance(right, str):  # no oracle, or it cannot run offline: junk alone proves little
            skipped[right] += 1
            continue
        found.gold_judged += 1
        if not right[1]:
            found.gold_rejected.append(task_id)
        wrong = _judge(env, env_id, task, verifier, junk)
        if isinstance(wrong, str):
            skipped[wrong] += 1
            continue
        found.junk_judged += 1
        if wrong[1]:
            found.junk_accepted.append(task_id)
        if judged is not None:
            judged.add(env_id, task, [right, wrong])
    return found


def _judge(
    env: Any, env_id: str, task: Any, verifier: Verifier, policy: Any
) -> tuple[Trajectory, bool] | str:
    """`policy`'s episode of `task` and whether the verifier passed it, or why it could not be played."""
    try:
        episode = rollout(env, policy, env_id=env_id, task_id=task.id, seed=0)
    except Exception as e:  # the env itself cannot run offline (a browser, a simulated user)
        logger.warning("calibration: %s cannot play %s (%s)", policy.name, task.id, e)
        return f"{env_id}: {policy.name} episode cannot run offline ({type(e).__name__})"
    if episode.status != "ok":  # e.g. an env without an oracle: the policy raised
        return f"{env_id}: {policy.name} episode failed ({(episode.failure or '')[:120]})"
    return episode, solved(float(verifier.verify(task, episode).reward))
