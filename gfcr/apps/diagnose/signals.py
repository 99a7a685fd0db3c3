"""Signal pathologies: `reward_hacking` (reward the independent checks do not back) and
`noisy_signals` (verdicts that change on re-judging, rewards that differ on identical actions)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from gfcr.apps.diagnose.calibrate import Calibration
from gfcr.apps.diagnose.data import RunData
from gfcr.apps.diagnose.groups import EXAMPLES, trend
from gfcr.apps.diagnose.pathology import Pathology, share, thresholds
from gfcr.apps.diagnose.reverify import Reverification
from gfcr.core import Trajectory
from gfcr.filter.indicators import correctness, format_only, rewarded_incorrect, severity, truncated

# A final answer given on at least this many distinct prompts (and this share of them) is a
# constant answer, not a solution: legitimate answers repeat on a few prompts, not on a fifth.
REPEAT_PROMPTS, REPEAT_SHARE = 3, 0.2
NOT_CALIBRATED = (
    "not measured: `gfcr diagnose RUN --calibrate` judges each task's gold (scripted:oracle) and "
    "a junk answer (scripted:random) with the env's verifier"
)


def reward_hacking(data: RunData, reverified: Reverification | None = None) -> Pathology:
    name = "reward_hacking"
    steps = trend(data, "diagnose/rewarded_incorrect_share")
    rewarded = [t for t in data.ok if t.reward > 0]  # paid: the judge stage's reward where one ran
    if not data.ok and steps is None:
        return Pathology.unmeasurable(name, "no finished trajectories and no per-step reward indicators")
    checks: dict[str, list[Trajectory]] = {
        "rewarded_incorrect": [t for t in rewarded if rewarded_incorrect(t)],
        "format_only": [t for t in rewarded if format_only(t)],
        "rewarded_truncated": [t for t in rewarded if truncated(t)],
        "repeated_answer": _repeated_answers(data, rewarded),
    }
    if reverified is not None:
        checks["unbacked_by_reverify"] = [
            t
            for run, ts in data.runs.items()
            for t in ts
            if t.total_reward > 0 and _unbacked(run, t, reverified)
        ]
    evidence: dict[str, Any] = {
        "rewarded": len(rewarded),
        "with_correctness_signal": sum(correctness(t) is not None for t in rewarded),
        **{key: len(found) for key, found in checks.items()},
        **{f"{key}_share": share(len(found), len(rewarded)) for key, found in checks.items()},
        "examples": {key: [t.id for t in found[:EXAMPLES]] for key, found in checks.items() if found},
        "thresholds": thresholds("rewarded_incorrect_share"),
    }
    if reverified is None:
        evidence["second_verifier"] = (
            "not run: pass --reverify to re-judge every episode with its env's verifier"
        )
    value = max((len(found) / len(rewarded) for found in checks.values()), default=0.0) if rewarded else 0.0
    if steps is not None:
        evidence["trend"] = steps
        evidence["reward_trend"] = trend(data, "rollout/reward_mean")
        value = max(value, steps["last"])
    found = severity("rewarded_incorrect_share", value)
    levers = _hacking_levers(evidence, data.training) if found != "none" else []
    return Pathology(name, found, evidence, levers)


def _repeated_answers(data: RunData, rewarded: list[Trajectory]) -> list[Trajectory]:
    """Rewarded episodes whose final answer is a constant given on many distinct prompts."""
    prompts: dict[tuple[str, str], set[str]] = defaultdict(set)
    for t in data.ok:
        if t.steps:
            prompts[(t.env_id, t.steps[-1].action.strip())].add(t.task_id)
    tasks_per_env: dict[str, set[str]] = defaultdict(set)
    for t in data.ok:
        tasks_per_env[t.env_id].add(t.task_id)

    def constant(t: Trajectory) -> bool:
        seen = len(prompts[(t.env_id, t.steps[-1].action.strip())])
        return seen >= max(REPEAT_PROMPTS, REPEAT_SHARE * len(tasks_per_env[t.env_id]))

    return [t for t in rewarded if t.steps and constant(t)]


def _unbacked(run: str, t: Trajectory, reverified: Reverification) -> bool:
    """The env rewarded it, and its verifier, re-run, agrees with itself on a lower reward."""
    rewards = reverified.verdicts.get((run, t.id), [])
    return bool(rewards) and len(set(rewards)) == 1 and rewards[0] < t.total_reward - 1e-9


def _hacking_levers(evidence: dict, training: bool) -> list[str]:
    """The levers; an evaluation's name a trainer setting only as what `gfcr train` would need."""
    there = "" if training else "in `gfcr train`, "
    levers = []
    if evidence["rewarded_incorrect"] or evidence["format_only"]:
        levers.append(
            f"reward correctness, not form: {evidence['rewarded_incorrect']} rewarded episodes "
            "fail the env's "
            f"correctness signal ({evidence['format_only']} on format alone); score with the env's verifier, "
            "or a `gfcr.filter.Rubric` whose correctness criterion is a gate (a failed gate "
            "zeroes the reward)"
        )
    if evidence["rewarded_truncated"]:
        levers.append(
            f"{evidence['rewarded_truncated']} rewarded episodes were cut off by a limit: {there}enable "
            "`[overlong_penalty] enabled = true`, which makes running into the limit cost reward (DAPO)"
        )
    if evidence["repeated_answer"]:
        levers.append(
            f"{evidence['repeated_answer']} rewarded episodes give one constant answer across many "
            "prompts: check "
            "the verifier accepts only each task's gold (scripted:random must score 0) and "
            "de-duplicate gold answers"
        )
    if evidence.get("unbacked_by_reverify"):
        levers.append(
            "the env's reward and its own verifier re-run offline disagree on "
            f"{evidence['unbacked_by_reverify']} "
            "episodes: train on the verifier's verdict (`gfcr.filter.Rubric` over the env's "
            "verifier) and fix the env"
        )
    return levers or ["rewarded-incorrect share is rising over training: inspect the examples"]


def noisy_signals(
    data: RunData, reverified: Reverification | None = None, calibration: Calibration | None = None
) -> Pathology:
    name = "noisy_signals"
    clusters = _identical_actions(data)
    calibrated = calibration is not None and calibration.total("gold_judged") > 0
    if reverified is None and not calibrated and not clusters:
        why = f" (calibration skipped: {calibration.skipped})" if calibration is not None else ""
        return Pathology.unmeasurable(
            name,
            "no episode was re-judged (pass --reverify), no verifier calibrated against gold (pass "
            f"--calibrate){why} and no two episodes of a prompt took identical actions",
        )
    spread = [c for c in clusters if len({t.total_reward for t in c}) > 1]
    evidence: dict[str, Any] = {
        "identical_action_sets": len(clusters),
        "with_reward_spread": len(spread),
        "identical_spread_share": share(len(spread), len(clusters)),
        "thresholds": thresholds("flake_share"),
        "gold_calibration": NOT_CALIBRATED,
    }
    value = len(spread) / len(clusters) if clusters else 0.0
    examples = [t.id for c in spread[:EXAMPLES] for t in c[:2]]
    if reverified is not None:
        flaky = reverified.disagreements()
        judged = len(reverified.verdicts)
        evidence |= {
            "rejudged": judged,
            "repeats": reverified.repeats,
            "flaky": len(flaky),
            "flake_share": share(len(flaky), judged),
            "agreement_with_recorded": agreement(data, reverified),
            "skipped": reverified.skipped,
        }
        examples += [tid for _, tid in flaky[:EXAMPLES]]
        value = max(value, len(flaky) / judged if judged else 0.0)
    evidence["examples"] = examples
    levers = []
    if value > 0:
        levers += [
            f"make the verifier deterministic: {value:.0%} of re-judged or identical actions got "
            "different verdicts; "
            "fix its seeds, run an LLM judge at temperature 0, raise time limits that verdicts hit "
            "(e.g. Code-v0 `-e timeout_s=...`)",
            "raise `[rollout] group_size`: a group's mean averages over label noise"
            if data.training
            else "raise `-k` (gfcr bench): pass@k over more samples averages over label noise",
        ]
    if calibration is not None:  # a calibration that judged nothing still says why (its skips)
        evidence["gold_calibration"] = calibration.to_dict()
        levers = _calibration_levers(calibration) + levers
        value = max(value, *calibration.rejection_shares())
    found = severity("flake_share", value)
    return Pathology(name, found, evidence, levers if found != "none" else [])


def _calibration_levers(calibration: Calibration) -> list[str]:
    """One lever per env whose verifier rejects gold (false negatives) or accepts junk (false positives)."""
    levers = []
    for env_id, found in calibration.envs.items():
        if found.gold_rejected:
            levers.append(
                f"the verifier rejects gold on {len(found.gold_rejected)}/{found.gold_judged} tasks of "
                f"{env_id} ({', '.join(found.gold_rejected[:EXAMPLES])}): fix the env's answer checking "
                f"(or its gold data); see `gfcr check {env_id}`"
            )
        if found.junk_accepted:
            levers.append(
                f"the verifier accepts junk (scripted:random) on {len(found.junk_accepted)}/"
                f"{found.junk_judged} tasks of {env_id} ({', '.join(found.junk_accepted[:EXAMPLES])}): "
                f"tighten the env's answer checking, a policy can earn reward without solving; see "
                f"`gfcr check {env_id}`"
            )
    return levers


def _identical_actions(data: RunData) -> list[list[Trajectory]]:
    """Sets of two or more episodes of one prompt in one run that took exactly the same actions."""
    sets: dict[tuple, list[Trajectory]] = defaultdict(list)
    for (run, env, task), group in data.groups(min_size=2).items():
        for t in group:
            sets[(run, env, task, tuple(s.action for s in t.steps))].append(t)
    return [c for c in sets.values() if len(c) >= 2]


def agreement(data: RunData, reverified: Reverification) -> float:
    """Share of re-judged episodes whose first re-judged reward equals the recorded one."""
    recorded = {(run, t.id): t.total_reward for run, ts in data.runs.items() for t in ts}
    same = [abs(r[0] - recorded[key]) < 1e-9 for key, r in reverified.verdicts.items() if key in recorded]
    return share(sum(same), len(same))
