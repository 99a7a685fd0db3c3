"""Peer side of `benchmarks/sql.py`: SkyRL-gym's SQL reward and SQL env, timed in the peer venv.

Run by `sql.py` as `benchmarks/.venv-peers/bin/python benchmarks/_sql_peers.py` with a JSON job
on stdin; prints one JSON object. SkyRL-gym (`skyrl-gym` 0.4.0) as its trainer uses it:
- the reward: `skyrl_gym.envs.sql.utils.compute_score_single(completion, gold_sql, db_file)`, with the
  completion in its required format `<think>…</think><solution>SQL</solution>`; it runs both
  queries (a fresh `sqlite3` connection and a worker thread each) and compares `frozenset`s of rows;
- an exploration step: `skyrl_gym.envs.sql.env.SQLEnv(...).step("<think>…</think><sql>Q</sql>")`,
  whose observation is the result rendered by pandas.
This module imports only the standard library at the top (the timing helpers are shared).
"""

from __future__ import annotations

import contextlib
import io
import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any


def rate(
    check: Callable[[int, dict[str, Any]], object], cases: list[dict[str, Any]], min_seconds: float
) -> dict:
    """Checks per second of `check(attempt, case)` over `cases`, repeated for at least `min_seconds`.

    One untimed pass first, so a system's per-task caches (gfcr's gold results) are warm.
    """
    for case in cases:  # warm-up: imports, connections, and whatever a system caches per task
        check(0, case)
    done, attempt, started = 0, 0, time.perf_counter()
    while True:
        attempt += 1
        for case in cases:
            check(attempt, case)
        done += len(cases)
        elapsed = time.perf_counter() - started
        if elapsed >= min_seconds:
            return {"checks": done, "seconds": round(elapsed, 3), "checks_per_s": round(done / elapsed, 1)}


def latency(step: Callable[[int, dict[str, Any]], object], cases: list[dict[str, Any]], repeats: int) -> dict:
    """Median and 95th percentile of one `step(attempt, case)`, in milliseconds."""
    step(0, cases[0])
    times = []
    for attempt in range(1, repeats + 1):
        for case in cases:
            started = time.perf_counter()
            step(attempt, case)
            times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return {
        "steps": len(times),
        "median_ms": round(statistics.median(times), 3),
        "p95_ms": round(times[int(0.95 * (len(times) - 1))], 3),
    }


def unique(sql: str, attempt: int) -> str:
    """`sql` made unique per attempt by a leading comment, so no statement cache can serve it."""
    return f"/* attempt {attempt} */ {sql}"


def main() -> None:
    job = json.load(sys.stdin)
    from omegaconf import DictConfig
    from skyrl_gym.envs.sql.env import SQLEnv
    from skyrl_gym.envs.sql.utils import compute_score_single

    def reward(attempt: int, case: dict[str, Any]) -> float:
        completion = f"<think>attempt {attempt}</think><solution>{unique(case['pred'], attempt)}</solution>"
        with contextlib.redirect_stdout(io.StringIO()):  # it prints on unexpected errors
            return compute_score_single(completion, case["gold"], case["db_file"])

    agreement = [{**case, "verdict": reward(0, case) == 1.0} for case in job["labelled"]]
    throughput = rate(reward, job["throughput"], job["min_seconds"])

    envs: dict[str, Any] = {}

    def explore(attempt: int, case: dict[str, Any]) -> str:
        env = envs.get(case["db_id"])
        if env is None:
            extras = {"db_id": case["db_id"], "reward_spec": {"ground_truth": "SELECT 1"}, "data": "spider"}
            env = SQLEnv(DictConfig({"db_path": job["skyrl_db_path"]}), {**extras, "max_turns": 10**9})
            env.init([{"role": "user", "content": "question"}])
            envs[case["db_id"]] = env
        output = env.step(f"<think>attempt {attempt}</think><sql>{unique(case['query'], attempt)}</sql>")
        return output["observations"][0]["content"]

    exploration = latency(explore, job["explore"], job["explore_repeats"])
    json.dump({"agreement": agreement, "throughput": throughput, "exploration": exploration}, sys.stdout)


if __name__ == "__main__":
    main()
