"""`length_inflation`: responses growing without reward, truncation, overlong episodes."""

from __future__ import annotations

from typing import Any

import numpy as np

from gfcr.apps.diagnose.data import RunData
from gfcr.apps.diagnose.groups import EXAMPLES, trend
from gfcr.apps.diagnose.pathology import Pathology, share, thresholds, worst
from gfcr.core import solved
from gfcr.filter.indicators import cut_turns, episode_length, severity, truncated

REWARD_RISE = 0.05  # a mean-reward gain below this over training counts as "without reward"


def length_inflation(data: RunData) -> Pathology:
    name = "length_inflation"
    ok = data.ok
    lengths = trend(data, "rollout/completion_tokens_mean")
    if not ok and lengths is None:
        return Pathology.unmeasurable(name, "no finished trajectories and no per-step response lengths")
    evidence: dict[str, Any] = {
        "thresholds": {k: thresholds(k) for k in ("truncated_share", "length_growth")}
    }
    severities = []
    if ok:
        cut = [t for t in ok if truncated(t)]
        turns_cut = [cut_turns(t) for t in ok]  # actions cut at the token cap, per episode
        cut_short = [t for t, n in zip(ok, turns_cut, strict=True) if n]
        solved_lengths = [episode_length(t) for t in ok if solved(t.total_reward)]
        unsolved = [episode_length(t) for t in ok if not solved(t.total_reward)]
        has_tokens = any(t.tokens is not None or t.cost.tokens_out for t in ok)
        evidence |= {
            "episodes": len(ok),
            "truncated": len(cut),
            "truncated_share": share(len(cut), len(ok)),
            "truncated_by_env": _by_env(data, cut),
            "length_unit": "tokens" if has_tokens else "characters",
            "mean_length_solved": round(float(np.mean(solved_lengths)), 1) if solved_lengths else None,
            "mean_length_unsolved": round(float(np.mean(unsolved)), 1) if unsolved else None,
            "truncated_turns_mean": round(float(np.mean([len(t.steps) for t in cut])), 2) if cut else None,
            "turns_cut_at_max_tokens": sum(turns_cut),
            "turns_cut_share": share(sum(turns_cut), sum(len(t.steps) for t in ok)),
            "episodes_cut_at_max_tokens": len(cut_short),
            "examples": list(dict.fromkeys(t.id for t in cut + cut_short))[:EXAMPLES],
        }
        severities.append(severity("truncated_share", len(cut) / len(ok)))
        severities.append(severity("truncated_share", len(cut_short) / len(ok)))
    if (steps := trend(data, "diagnose/truncated_share")) is not None:
        evidence["truncated_trend"] = steps
        severities.append(severity("truncated_share", steps["last"]))
    if lengths is not None and lengths["first"] > 0:
        rewards = trend(data, "rollout/reward_mean")
        growth = lengths["last"] / lengths["first"]
        gain = rewards["last"] - rewards["first"] if rewards else 0.0
        evidence |= {
            "length_trend": lengths,
            "length_growth": round(growth, 3),
            "reward_gain": round(gain, 4),
        }
        if gain < REWARD_RISE:  # longer answers that earn more are not inflation
            severities.append(severity("length_growth", growth))
    else:
        evidence["length_growth"] = "not measurable from this input: no training steps"
    found = worst(*severities)
    levers = _training_levers() if data.training else _eval_levers()
    return Pathology(name, found, evidence, levers if found != "none" else [])


def _training_levers() -> list[str]:
    return [
        "enable `[overlong_penalty] enabled = true` (max_length, cache_length): episodes near the "
        "token budget lose reward (DAPO's soft overlong punishment)",
        'set `[loss] name = "dr_grpo"`: no per-response length normalisation, which favours long '
        "wrong answers",
        "lower `[rollout] max_tokens` or `max_episode_tokens` (`--episode-tokens` on gfcr run/bench); "
        "or, if answers are cut at the cap before they end (turns_cut_share), raise `max_tokens`",
        "if the cut episodes hit the turn limit instead (see truncated_turns_mean), the agent "
        "never answered: raise `[rollout] max_turns`, or teach the answer format first (`[sft] steps`)",
    ]


def _eval_levers() -> list[str]:
    """An evaluation's levers: a cut episode scores as a failure, so say whether the limit or the
    agent is at fault."""
    return [
        "read the cut episodes (examples): an agent that never gives a final answer fails on format, "
        "not on the task; check its prompt or tool-call format",
        "if they were cut while still working, raise the limit that cut them (`--max-turns` or "
        "`--episode-tokens` on gfcr run/bench; see truncated_turns_mean) so the score measures the task",
        "answers cut at the token cap (turns_cut_share) are judged unfinished: raise `--max-tokens` "
        "if they were still going",
    ]


def _by_env(data: RunData, cut: list) -> dict[str, dict[str, float]]:
    per_env: dict[str, dict[str, float]] = {}
    for t in data.ok:
        entry = per_env.setdefault(t.env_id, {"episodes": 0, "truncated": 0})
        entry["episodes"] += 1
    for t in cut:
        per_env[t.env_id]["truncated"] += 1
    for entry in per_env.values():
        entry["share"] = share(entry["truncated"], entry["episodes"])
    return per_env
