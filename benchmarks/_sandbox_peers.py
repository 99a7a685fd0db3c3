"""GEM's sandbox, timed inside the peer venv (run by benchmarks/sandbox.py; prints one JSON line).

benchmarks/.venv-peers/bin/python benchmarks/_sandbox_peers.py RUNS
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time

from gem.utils.sandbox import run_python  # gem-llm: run_python(code, sandbox_type, stdin, timeout)


def timed(sandbox_type: str, runs: int) -> dict[str, object]:
    latencies, outputs = [], []
    before = os.times()
    for _ in range(runs):
        started = time.perf_counter()
        ok, stdout, stderr = run_python("print(1)", sandbox_type)
        latencies.append(time.perf_counter() - started)
        outputs.append((ok, stdout.strip(), stderr.strip()[-200:]))
    cpu = sum(os.times()[:4]) - sum(before[:4])  # user and system time, own and children's
    latencies.sort()
    ok_runs = sum(1 for ok, stdout, _ in outputs if ok and stdout == "1")
    return {
        "median_ms": statistics.median(latencies) * 1000,
        "p90_ms": latencies[int(0.9 * (len(latencies) - 1))] * 1000,
        "cpu_ms": cpu * 1000 / runs,
        "ok": ok_runs,
        "runs": runs,
        "error": next((stderr for ok, _, stderr in outputs if not ok), ""),
    }


if __name__ == "__main__":
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    print(json.dumps({mode: timed(mode, runs) for mode in ("none", "bwrap")}))
