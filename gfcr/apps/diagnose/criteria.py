"""The three criteria for judging a rollout pipeline: reliability (verifier agreement, flake rate,
infrastructure failures), coverage (informative groups, prompt difficulty spread, pass@k against
pass@1) and cost (tokens, seconds and env calls per solved task and per informative group); for
episodes a judge stage scored, which of its terms moved the reward ("reward").

From trajectories when the input has them, else from a training run's per-step metrics; what
neither holds is said to be "not measurable from this input", never guessed.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from gfcr.agents.runner.episode import episode_solved
from gfcr.apps.bench.metrics import pass_at_k
from gfcr.apps.diagnose.calibrate import Calibration
from gfcr.apps.diagnose.data import RunData
from gfcr.apps.diagnose.pathology import share
from gfcr.apps.diagnose.reverify import Reverification
from gfcr.apps.diagnose.signals import NOT_CALIBRATED, agreement
from gfcr.core import Trajectory
from gfcr.filter.indicators import episode_length, zero_variance

NOT_REJUDGED = "not measurable from this input: no episode was re-judged (pass --reverify)"
NO_TASKS = "not measurable from this input: per-step metrics keep no task ids to calibrate on"


def criteria(
    data: RunData, reverified: Reverification | None = None, calibration: Calibration | None = None
) -> dict[str, Any]:
    """{"reliability": …, "coverage": …, "cost": …} of `data` (see the module)."""
    if data.trajectories:
        found = _from_trajectories(data, reverified)
        # the verifier's calibration is the env's, shared by every run over it
        summary = calibration.to_dict() if calibration is not None else {}
        found["reliability"] |= {
            key: NOT_CALIBRATED
            if calibration is None
            else summary[key]
            if summary[judged]
            else (f"not measurable from this input: nothing could be played ({summary['skipped']})")
            for key, judged in (("gold_acceptance", "gold_judged"), ("junk_rejection", "junk_judged"))
        }
        return found
    if data.metrics:
        return _from_metrics(data)
    return {"note": "not measurable from this input: no trajectories and no training metrics"}


def criteria_by_run(
    data: RunData, reverified: Reverification | None = None, calibration: Calibration | None = None
) -> dict[str, dict[str, Any]]:
    """The criteria of each run of `data` alone (each agent of a bench report)."""
    out = {}
    for run in data.runs:
        mine = reverified.only(run) if reverified is not None else None
        alone = RunData(
            runs={run: data.runs[run]}, bench_results=data.bench_results, env_kwargs=data.env_kwargs
        )
        out[run] = criteria(alone, mine, calibration)
    return out


def _from_trajectories(data: RunData, reverified: Reverification | None) -> dict[str, Any]:
    groups = list(data.groups().values())
    found = {
        "reliability": _reliability(data, reverified),
        "coverage": _coverage(groups),
        "cost": _cost(data, groups),
    }
    judged = [t for t in data.trajectories if t.reward_terms]
    return found | ({"reward": reward_terms(judged)} if judged else {})


def reward_terms(judged: list[Trajectory]) -> dict[str, Any]:
    """Which term of the judge stage moved the training reward (`Trajectory.reward_terms`): each
    term's mean part, the share of episodes it moved (a part other than 0; the verifier's is the
    env's own reward), and the share whose training reward differs from the env's.

    >>> a, b = Trajectory("e", "t", "?"), Trajectory("e", "t", "?")
    >>> a.reward_terms, b.reward_terms = {"verifier": 1.0, "length": -0.5}, {"verifier": 0.0, "length": 0.0}
    >>> found = reward_terms([a, b])
    >>> found["term_means"], found["moved_share"], found["reward_changed_share"]
    ({'verifier': 0.5, 'length': -0.25}, {'length': 0.5}, 0.5)
    """
    names = dict.fromkeys(name for t in judged for name in t.reward_terms)
    parts = {n: [t.reward_terms.get(n, 0.0) for t in judged] for n in names}
    moved = {n: share(sum(p != 0.0 for p in values), len(judged)) for n, values in parts.items()}
    return {
        "judged_episodes": len(judged),
        "term_means": {n: round(float(np.mean(values)), 4) for n, values in parts.items()},
        "moved_share": {n: value for n, value in moved.items() if n != "verifier"},
        "reward_changed_share": share(sum(t.reward != t.total_reward for t in judged), len(judged)),
    }


def informative(groups: list[list[Trajectory]]) -> tuple[list[list[Trajectory]], list[list[Trajectory]]]:
    """(groups of two or more samples, those with a reward spread)."""
    multi = [g for g in groups if len(g) >= 2]
    return multi, [g for g in multi if not zero_variance([t.total_reward for t in g])]


def _reliability(data: RunData, reverified: Reverification | None) -> dict[str, Any]:
    everything = data.trajectories
    failed = [t for t in everything if t.status == "failed"]
    reliability: dict[str, Any] = {
        "episodes": len(everything),
        "infrastructure_failures": len(failed),
        "failure_share": share(len(failed), len(everything)),
        "failure_reasons": dict(Counter((t.failure or "failed").split(":", 1)[0] for t in failed)),
        "verifier_agreement": NOT_REJUDGED,
        "flake_rate": NOT_REJUDGED,
    }
    if reverified is not None and reverified.verdicts:
        reliability |= {
            "rejudged": len(reverified.verdicts),
            "verifier_agreement": agreement(data, reverified),
            "flake_rate": share(len(reverified.disagreements()), len(reverified.verdicts)),
        }
    return reliability


def _coverage(groups: list[list[Trajectory]]) -> dict[str, Any]:
    multi, spread = informative(groups)
    rates = [sum(map(episode_solved, g)) / len(g) for g in groups]  # each task's solve rate
    k = min((len(g) for g in groups), default=1)
    pass_k = [pass_at_k(len(g), sum(map(episode_solved, g)), k) for g in groups]
    return {
        "tasks": len(groups),
        "groups": len(multi),
        "informative_groups": len(spread),
        "informative_share": share(len(spread), len(multi)) if multi else _no_groups(),
        "difficulty": {
            "never_solved": sum(r == 0 for r in rates),
            "sometimes_solved": sum(0 < r < 1 for r in rates),
            "always_solved": sum(r == 1 for r in rates),
            "solve_rate_std": round(float(np.std(rates)), 4) if rates else 0.0,
        },
        "k": k,
        "pass_at_1": round(float(np.mean(rates)), 4) if rates else 0.0,
        f"pass_at_{k}": round(float(np.mean(pass_k)), 4) if pass_k else 0.0,
    }


def _cost(data: RunData, groups: list[list[Trajectory]]) -> dict[str, Any]:
    everything, ok = data.trajectories, data.ok
    multi, spread = informative(groups)
    tokens = sum(t.cost.tokens_in + t.cost.tokens_out for t in everything) or sum(map(episode_length, ok))
    seconds = sum(t.cost.policy_s + t.cost.env_s for t in everything)
    env_calls = sum(len(t.steps) for t in everything)
    solved_tasks = sum(any(map(episode_solved, g)) for g in groups)
    return {
        "tokens": tokens,
        "seconds": round(seconds, 3),
        "env_calls": env_calls,
        "solved_episodes": sum(map(episode_solved, ok)),
        "solved_tasks": solved_tasks,
        "per_solved_task": _per(tokens, seconds, env_calls, solved_tasks),
        "per_informative_group": _per(tokens, seconds, env_calls, len(spread)) if multi else _no_groups(),
        "solved_per_1k_tokens": round(1000 * sum(map(episode_solved, ok)) / tokens, 4) if tokens else None,
    }


def _from_metrics(data: RunData) -> dict[str, Any]:
    """The criteria of a training run from its per-step metrics (every RL step's generated episodes)."""
    rl = [m for m in data.metrics if "rollout/episodes" in m]
    episodes = sum(m["rollout/episodes"] for m in rl)
    failed = sum(m.get("rollout/failed", 0) for m in rl)
    groups = sum(m.get("rollout/groups", 0) + m.get("rollout/dropped_groups", 0) for m in rl)
    informative = sum(
        (m.get("rollout/groups", 0) + m.get("rollout/dropped_groups", 0))
        * (1 - m.get("rollout/frac_zero_std", 0))
        for m in rl
    )
    solved_n = sum(m.get("diagnose/solved_share", 0) * m["rollout/episodes"] for m in rl)
    tokens = rl[-1].get("rollout/tokens_total", 0) if rl else 0
    seconds = sum(m.get("perf/rollout_s", 0) for m in rl)
    env_calls = sum(m.get("rollout/turns_mean", 0) * m["rollout/episodes"] for m in rl)
    evals = [m for m in data.metrics if "eval/solved" in m]
    return {
        "reliability": {
            "episodes": episodes,
            "infrastructure_failures": failed,
            "failure_share": share(failed, episodes),
            "verifier_agreement": NOT_REJUDGED,
            "flake_rate": NOT_REJUDGED,
            "gold_acceptance": NO_TASKS,
            "junk_rejection": NO_TASKS,
        },
        "coverage": {
            "steps": len(rl),
            "groups": groups,
            "informative_groups": round(informative, 1),
            "informative_share": share(informative, groups),
            "pass_at_1": share(solved_n, episodes) if any("diagnose/solved_share" in m for m in rl) else None,
            "eval_solved_first_last": [evals[0]["eval/solved"], evals[-1]["eval/solved"]] if evals else None,
            "pass_at_k": "not measurable from this input: per-step metrics keep no per-task outcomes",
        },
        "cost": {
            "tokens": tokens,
            "rollout_seconds": round(seconds, 3),
            "env_calls": round(env_calls),
            "solved_episodes": round(solved_n),
            "per_solved_episode": _per(tokens, seconds, env_calls, solved_n),
            "per_informative_group": _per(tokens, seconds, env_calls, informative),
        },
        "pipeline": pipeline_totals(rl),
    } | _stored_reward_terms(data)


def _stored_reward_terms(data: RunData) -> dict[str, Any]:
    """The "reward" group of the samples a training run's replay buffer keeps, as they were judged."""
    judged = [s.trajectory for s in data.replay or () if s.trajectory.reward_terms]
    return {"reward": reward_terms(judged)} if judged else {}


PIPELINE_STAGES = ("choose", "allocate", "generate", "judge", "decide", "keep", "credit")


def pipeline_totals(steps: list[dict[str, Any]]) -> dict[str, float]:
    """What each stage of the rollout pipeline did over a run (its `choose/`, `generate/`, …
    metrics): counts summed over the steps, means and shares averaged.

    >>> pipeline_totals([{"generate/branches": 3, "judge/reward_mean": 0.5}, {"generate/branches": 1}])
    {'generate/branches': 4.0, 'judge/reward_mean': 0.5}
    """
    keys = dict.fromkeys(k for m in steps for k in m if k.split("/")[0] in PIPELINE_STAGES)
    totals = {}
    for key in keys:
        values = [float(m[key]) for m in steps if key in m]
        averaged = key.endswith(("_mean", "_share"))
        totals[key] = round(sum(values) / len(values) if averaged else sum(values), 4)
    return totals


def _per(tokens: float, seconds: float, env_calls: float, count: float) -> dict[str, float] | None:
    if not count:
        return None  # nothing solved / informative: the cost per one is unbounded
    return {
        "tokens": round(tokens / count, 1),
        "seconds": round(seconds / count, 4),
        "env_calls": round(env_calls / count, 2),
    }


def _no_groups() -> str:
    return "not measurable from this input: no prompt has two or more samples"
