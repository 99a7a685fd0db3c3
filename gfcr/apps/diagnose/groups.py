"""Group pathologies: `zero_variance_groups` (groups whose rewards are all equal: all-fail and
all-pass apart, per env and per prompt) and `wasted_compute` (tokens and seconds on groups that
carry no gradient, stragglers, infrastructure failures)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from gfcr.apps.diagnose.data import GroupKey, RunData
from gfcr.apps.diagnose.pathology import Pathology, share, thresholds, worst
from gfcr.core import Trajectory, solved
from gfcr.filter.indicators import episode_length, severity, zero_variance

EXAMPLES = 5  # example trajectory ids / prompts listed per finding
MIN_EPISODES, MIN_TAIL_S = 20, 1.0  # stragglers are measured over this many episodes, this slow
MIN_IDLE_S = 1.0  # idle time under this many seconds in all is bookkeeping, not worth a lever


def flat_groups(data: RunData) -> tuple[dict[GroupKey, list[Trajectory]], dict[GroupKey, list[Trajectory]]]:
    """(groups of at least two samples, those whose rewards are all equal)."""
    groups = data.groups(min_size=2)
    flat = {key: g for key, g in groups.items() if zero_variance([t.total_reward for t in g])}
    return groups, flat


def trend(data: RunData, *keys: str) -> dict[str, Any] | None:
    """A metric over the training steps (the first key logged): first, last, mean, per step."""
    for key in keys:
        values = data.steps(key)
        if values:
            series = [v for _, v in values]
            return {
                "metric": key,
                "first": round(series[0], 4),
                "last": round(series[-1], 4),
                "mean": round(float(np.mean(series)), 4),
                "steps": [[s, round(v, 4)] for s, v in values],
            }
    return None


def zero_variance_groups(data: RunData) -> Pathology:
    name = "zero_variance_groups"
    groups, flat = flat_groups(data)
    steps = trend(data, "rollout/zero_variance_share")  # the groups trained on (dropped ones apart)
    if not groups and steps is None:
        return Pathology.unmeasurable(
            name, "no prompt has two or more samples (run with -k >= 2 or a group size >= 2)"
        )
    evidence: dict[str, Any] = {"thresholds": thresholds("zero_variance_share")}
    value = steps["mean"] if steps else 0.0
    if groups:
        evidence |= _group_evidence(groups, flat)
        value = len(flat) / len(groups)
    if steps is not None:
        evidence["trend"] = steps
    found = severity("zero_variance_share", value)
    levers = _zero_variance_levers if data.training else _zero_variance_eval_levers
    return Pathology(name, found, evidence, levers(data, evidence, value) if found != "none" else [])


def _group_evidence(
    groups: dict[GroupKey, list[Trajectory]], flat: dict[GroupKey, list[Trajectory]]
) -> dict[str, Any]:
    all_pass = [k for k, g in flat.items() if solved(g[0].total_reward)]
    spent = [t for g in flat.values() for t in g]
    everything = [t for g in groups.values() for t in g]
    return {
        "groups": len(groups),
        "zero_variance": len(flat),
        "share": share(len(flat), len(groups)),
        "all_fail": len(flat) - len(all_pass),
        "all_pass": len(all_pass),
        "by_env": _by_env(groups, flat),
        "tokens_on_them": sum(episode_length(t) for t in spent),
        "token_share": share(sum(map(episode_length, spent)), sum(map(episode_length, everything))),
        "seconds_on_them": round(sum(_seconds(t) for t in spent), 3),
        # flat groups whose K samples took the very same actions: greedy or deterministic sampling
        "identical_share": share(sum(len({_actions(t) for t in g}) == 1 for g in flat.values()), len(flat)),
        "prompts": [
            {"run": run, "env": env, "task": task, "samples": len(g), "reward": g[0].total_reward}
            for (run, env, task), g in list(flat.items())[:EXAMPLES]
        ],
        "examples": [g[0].id for g in list(flat.values())[:EXAMPLES]],
    }


def _by_env(
    groups: dict[GroupKey, list[Trajectory]], flat: dict[GroupKey, list[Trajectory]]
) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for key in groups:
        entry = out.setdefault(key[1], {"groups": 0, "zero_variance": 0})
        entry["groups"] += 1
        entry["zero_variance"] += key in flat
    for entry in out.values():
        entry["share"] = share(entry["zero_variance"], entry["groups"])
    return out


def _zero_variance_levers(data: RunData, evidence: dict[str, Any], value: float) -> list[str]:
    """The levers, most direct first: sampling that cannot differ, a task set never solved, then
    Control's and Replay's fixes."""
    levers = []
    temperature = (data.train_config or {}).get("rollout", {}).get("temperature")
    if temperature == 0 or evidence.get("identical_share", 0) >= 0.5:
        evidence["temperature"] = temperature
        why = (
            f"{evidence['identical_share']:.0%} of the flat groups repeat one answer K times"
            if "identical_share" in evidence
            else "greedy sampling gives every sample of a group the same answer"
        )
        now = f"(now {temperature})" if temperature is not None else "(`--temperature` on gfcr run/bench)"
        levers.append(f"raise `[rollout] temperature` {now}: {why}; a group needs samples that differ")
    rewards = trend(data, "rollout/reward_mean")
    never = (data.ok and not any(t.total_reward > 0 for t in data.ok)) or (rewards and not data.ok and
             max(v for _, v in rewards["steps"]) == 0)  # fmt: skip
    if never:
        levers.append(
            "no episode earned any reward, so no resampling can find a spread: start with a warm start "
            '(`[sft] steps = 50`, `teacher = "scripted:oracle"`) or a task set the model solves sometimes '
            "(an easier `[env] kwargs` split or difficulty)"
        )
    levers += [
        f"enable `[control] dynamic_sampling = true`: {value:.0%} of groups had zero variance; "
        "each step then resamples until its groups have a reward spread (DAPO)",
        'set `[control] selector = "vcrl"` (or "greso"): prompts whose last groups varied are sampled '
        "first, prompts predicted to give zero-variance groups are skipped",
    ]
    all_fail, all_pass = evidence.get("all_fail", 0), evidence.get("all_pass", 0)
    if all_fail >= all_pass:
        levers.append(
            "enable `[replay] enabled = true` (rescue = true): an all-fail group gets a stored correct "
            f"response (AR3PO){f'; {all_fail} groups were all-fail' if all_fail else ''}"
        )
    else:
        levers.append(
            f"make the task set harder: {all_pass} all-pass groups; pick a harder `[env] kwargs` split"
        )
    levers.append("raise `[rollout] group_size`: more samples per prompt make a reward spread likelier")
    return levers


def _zero_variance_eval_levers(data: RunData, evidence: dict[str, Any], value: float) -> list[str]:
    """An evaluation's levers: what its flat groups say about the agent and the task set, and what
    training this agent on those prompts would waste."""
    levers = []
    if evidence.get("identical_share", 0) >= 0.5:
        levers.append(
            f"sample with `--temperature` above 0 (gfcr run/bench): {evidence['identical_share']:.0%} of "
            "the flat groups repeat one answer K times, so pass@k measures no more than pass@1"
        )
    all_fail, all_pass, groups = evidence["all_fail"], evidence["all_pass"], evidence["groups"]
    if all_pass:
        levers.append(
            f"{all_pass} of {groups} prompts were solved by every sample: they do not tell this agent "
            "from a better one; add harder tasks (a harder `-e split=...` or suite entries) to compare on"
        )
    if all_fail:
        levers.append(
            f"{all_fail} of {groups} prompts were never solved: raise `-k` to tell never from rarely, "
            "and leave them out of a training set for this agent (or warm-start it in `gfcr train`, "
            "`[sft] steps`)"
        )
    levers.append(
        f"trained on these prompts, {value:.0%} of this agent's groups would carry no gradient; in "
        "`gfcr train`, enable `[control] dynamic_sampling = true` (DAPO) or set "
        '`[control] selector = "greso"`'
    )
    return levers


def _actions(t: Trajectory) -> tuple[str, ...]:
    return tuple(step.action for step in t.steps)


def _seconds(t: Trajectory) -> float:
    return t.cost.policy_s + t.cost.env_s


def wasted_compute(data: RunData) -> Pathology:
    name = "wasted_compute"
    everything = data.trajectories
    if not everything:
        steps = trend(data, "diagnose/wasted_token_share")
        if steps is None:
            return Pathology.unmeasurable(name, "no trajectories and no per-step compute indicators")
        found = severity("wasted_token_share", steps["mean"])
        levers = _wasted_levers(steps["mean"], 0.0, 0.0, training=True) if found != "none" else []
        return Pathology(
            name, found, {"trend": steps, "thresholds": thresholds("wasted_token_share")}, levers
        )
    groups, flat = flat_groups(data)
    failed = [t for t in everything if t.status == "failed"]
    tokens = sum(episode_length(t) for t in data.ok)
    wasted = sum(episode_length(t) for g in flat.values() for t in g)
    seconds = np.array([_seconds(t) for t in everything])
    ratio = straggler_ratio(seconds)
    wasted_share = wasted / tokens if tokens and groups else 0.0
    failed_share = len(failed) / len(everything)
    idle, idle_share = idle_time(everything)
    evidence: dict[str, Any] = {
        "episodes": len(everything),
        "tokens": tokens,
        "wasted_tokens": wasted,
        "wasted_token_share": round(wasted_share, 4),
        "seconds": round(float(seconds.sum()), 3),
        "wasted_seconds": round(sum(_seconds(t) for g in flat.values() for t in g), 3),
        "failed": len(failed),
        "failed_share": round(failed_share, 4),
        "failure_reasons": _reasons(failed),
        "straggler_ratio": round(ratio, 2),  # p95 / median seconds
        "slowest": [t.id for t in sorted(everything, key=_seconds, reverse=True)[:EXAMPLES]],
        "idle_time": idle,
        "thresholds": {
            k: thresholds(k) for k in ("wasted_token_share", "failed_share", "straggler_ratio", "idle_share")
        },
    }
    if not groups:
        evidence["wasted_token_share"] = "not measurable from this input: no prompt has two or more samples"
    if steps := trend(data, "diagnose/wasted_token_share"):
        evidence["trend"] = steps
    found = worst(
        severity("wasted_token_share", wasted_share),
        severity("failed_share", failed_share),
        severity("straggler_ratio", ratio),
        severity("idle_share", idle_share),
    )
    levers = _wasted_levers(wasted_share, failed_share, ratio, training=data.training)
    levers += _idle_levers(idle_share)
    return Pathology(name, found, evidence, levers if found != "none" else [])


def idle_time(trajectories: Sequence[Trajectory]) -> tuple[dict[str, Any] | str, float]:
    """(evidence, share graded) of the episodes' wall time spent neither in the policy nor the env:
    waiting for a runner slot (`concurrency`). The share is 0.0 under `MIN_IDLE_S` idle seconds.

    Only finished episodes that record their wall time (`cost.wall_s`) count (a failed one's hung
    call is in no busy seconds; failures are their own finding); without any it is not measurable.
    """
    timed = [t for t in trajectories if t.status == "ok" and t.cost.wall_s is not None]
    if not timed:
        return "not measurable from this input: no trajectory records its wall time (`cost.wall_s`)", 0.0
    idle = {t.id: _idle(t) for t in timed}
    wall, waited = sum(t.cost.wall_s or 0.0 for t in timed), sum(idle.values())
    worst_first = sorted(timed, key=lambda t: idle[t.id], reverse=True)[:EXAMPLES]
    evidence = {
        "episodes_timed": len(timed),
        "wall_seconds": round(wall, 3),
        "idle_seconds": round(waited, 3),
        "idle_share": share(waited, wall),
        "worst": [
            {"id": t.id, "wall_s": round(t.cost.wall_s or 0.0, 4), "idle_s": round(idle[t.id], 4)}
            for t in worst_first
        ],
    }
    return evidence, (waited / wall if wall and waited >= MIN_IDLE_S else 0.0)


def _idle(t: Trajectory) -> float:
    """Wall seconds neither in the policy nor the env (clock jitter can make it a hair negative)."""
    return max(0.0, (t.cost.wall_s or 0.0) - t.cost.policy_s - t.cost.env_s)


def _idle_levers(idle_share: float) -> list[str]:
    if severity("idle_share", idle_share) == "none":
        return []
    return [
        f"raise `[rollout] concurrency` (`--concurrency` on gfcr run): episodes spent {idle_share:.0%} "
        "of their wall time waiting for a slot, neither in the policy nor the env",
        'for a CPU-heavy env or verifier (Code-v0, SQL-v0), set `[rollout] env_workers = "process"` '
        "(`--env-workers process`): in threads it holds the GIL and slows the loop every episode waits on",
    ]


def straggler_ratio(seconds: np.ndarray) -> float:
    """The long tail of episode latency: the 95th percentile's seconds over the median's.

    0.0 where it cannot cost anything worth a lever: under `MIN_EPISODES` episodes, or a tail
    under `MIN_TAIL_S` seconds (a first episode's warm-up of a few milliseconds is not a straggler).
    """
    if len(seconds) < MIN_EPISODES or np.median(seconds) <= 0:
        return 0.0
    tail = float(np.percentile(seconds, 95))
    return tail / float(np.median(seconds)) if tail >= MIN_TAIL_S else 0.0


def _reasons(failed: Sequence[Trajectory]) -> dict[str, int]:
    reasons: dict[str, int] = {}
    for t in failed:
        reason = (t.failure or "failed").split(":", 1)[0]
        reasons[reason] = reasons.get(reason, 0) + 1
    return reasons


def _wasted_levers(wasted_share: float, failed_share: float, ratio: float, *, training: bool) -> list[str]:
    levers = []
    if severity("wasted_token_share", wasted_share) != "none" and not training:
        levers.append(
            f"{wasted_share:.0%} of tokens went to prompts whose samples all got one reward: here they "
            "measure pass^k, but in training they would be wasted; in `gfcr train`, enable "
            "`[control] early_stopping = true` (AR3PO)"
        )
    elif severity("wasted_token_share", wasted_share) != "none":
        levers += [
            f"enable `[control] early_stopping = true`: {wasted_share:.0%} of tokens went to groups with no "
            "reward spread; a prompt whose first samples agree stops early (AR3PO)",
            'set `[control] selector = "greso"`: skips prompts predicted to give zero-variance '
            "groups (GRESO)",
        ]
    if severity("failed_share", failed_share) != "none":
        levers.append(
            f"fix the infrastructure failures ({failed_share:.0%} of episodes; see failure_reasons), then "
            "`gfcr run ... --resume` reruns them; `[rollout] retries` retries transient ones"
        )
    if severity("straggler_ratio", ratio) != "none":
        levers.append(
            f"cap stragglers: the slowest 5% of episodes took {ratio:.0f}x the median; set `[rollout] "
            "max_episode_tokens` or `episode_timeout_s` (`--episode-tokens` / "
            "`--episode-timeout-s` on gfcr run)"
        )
    return levers
