"""`stale_replay`: replayed samples' policy-version lag and age, and the off-policy share."""

from __future__ import annotations

from typing import Any

import numpy as np

from gfcr.apps.diagnose.data import RunData
from gfcr.apps.diagnose.groups import EXAMPLES, trend
from gfcr.apps.diagnose.pathology import Pathology, share, thresholds, worst
from gfcr.core import Trajectory
from gfcr.filter.indicators import lag, replayed, severity


def stale_replay(data: RunData) -> Pathology:
    name = "stale_replay"
    injected = _replayed_lags(data)
    steps = trend(data, "diagnose/replay_lag")
    offpolicy = trend(data, "diagnose/replayed_share")
    never = steps is None or offpolicy is None or max(v for _, v in offpolicy["steps"]) == 0
    if data.replay is None and not injected and never:
        return Pathology(
            name, "none", {"replayed": 0, "note": "no replayed samples and no replay buffer in this input"}
        )
    evidence: dict[str, Any] = {"thresholds": thresholds("replay_lag"), "replayed": len(injected)}
    severities = []
    if injected:
        lags = [v for _, v in injected]
        evidence |= {
            "lag_mean": round(float(np.mean(lags)), 3),
            "lag_max": max(lags),
            "off_policy_share": share(len(injected), len(data.ok)),
            "examples": [t.id for t, _ in injected[:EXAMPLES]],
        }
        severities.append(severity("replay_lag", float(np.mean(lags))))
    if steps is not None:
        evidence["lag_trend"] = steps
        evidence["off_policy_trend"] = offpolicy
        severities.append(severity("replay_lag", steps["mean"]))
    if data.replay is not None:
        evidence["buffer"] = _buffer(data)
    found = worst(*severities) if severities else "none"
    staleness = (data.train_config or {}).get("replay", {}).get("max_staleness")
    levers = [
        f"lower `[replay] max_staleness` (now {staleness}): replayed samples lag "
        f"{evidence.get('lag_mean', '?')} "
        "policy versions on average; older ones are evicted",
        "set `[replay] rescue = false` if the rescued samples' old logprobs make the update off-policy",
    ]
    return Pathology(name, found, evidence, levers if found != "none" else [])


def _replayed_lags(data: RunData) -> list[tuple[Trajectory, int]]:
    """Replayed samples with their lag behind the newest policy version of their run."""
    out = []
    for trajectories in data.runs.values():
        versions = [
            int(v) for t in trajectories if not replayed(t) and (v := t.provenance.policy_version).isdigit()
        ]
        if not versions:
            continue
        for t in trajectories:
            if replayed(t) and (behind := lag(t, max(versions))) is not None:
                out.append((t, behind))
    return out


def _buffer(data: RunData) -> dict[str, Any]:
    """What the buffer holds: its size, the stored rows' version lag and age at the run's end."""
    rows = data.replay or []
    steps = [int(m["step"]) for m in data.metrics if "step" in m]
    versions = [v for r in rows if (v := r.trajectory.provenance.policy_version).isdigit()]
    current = max(steps) if steps else max((int(v) for v in versions), default=0)
    lags = [current - int(v) for v in versions]
    newest = max((r.stored_at for r in rows), default=0.0)
    return {
        "stored": len(rows),
        "tasks": len({r.trajectory.task_id for r in rows}),
        "current_version": current,
        "stored_lag_mean": round(float(np.mean(lags)), 3) if lags else None,
        "stored_lag_max": max(lags) if lags else None,
        "age_s_max": round(newest - min((r.stored_at for r in rows), default=newest), 3),
    }
