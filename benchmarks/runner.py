"""The runner's figures: its overhead over the policy, env throughput, and GEM's vector env beside it.

Run from the repository root (GEM lives in the peer venv, made once by `bash benchmarks/setup_peers.sh`):

    .venv/bin/python benchmarks/runner.py --json docs/bench_runner.json

1. Overhead: a policy of fixed latency per batch (it sleeps `L` seconds, then answers with the oracle's
   text, so the env checks real answers); 256 `gfcr/Math-v0` episodes at 64 concurrent. Reported: wall
   time ÷ pure policy time (the summed duration of its `generate` calls), and wall ÷ the ideal
   (256 / 64 batches × L). Goal ≤ 1.05.
2. Env throughput with scripted policies: steps/s of `scripted:oracle` and `scripted:random` through the
   runner (64 concurrent, no policy latency) on math and, where registered, code and SQL; env steps in
   threads and in worker processes.
3. GEM's vector env (`gem-llm`, `SyncVectorEnv` / `AsyncVectorEnv` of its `MathEnv`, 64 envs) on the same
   374 MMATH problems with the gold answers, against the runner with the oracle: steps/s.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import gymnasium as gym

from gfcr.agents import (
    Completion,
    OraclePolicy,
    RandomPolicy,
    Request,
    Runner,
    RunnerConfig,
    episodes_for_env,
)

BENCH_DIR = Path(__file__).resolve().parent
PEER_PYTHON = BENCH_DIR / ".venv-peers" / "bin" / "python"


@dataclass
class LatencyPolicy:
    """The oracle's answers after `latency_s` per batch: a stand-in for a model of fixed speed."""

    latency_s: float
    name: str = "latency-oracle"
    version: str = "1"
    calls: int = 0
    busy_s: float = 0.0
    sizes: list[int] = field(default_factory=list)
    spans: list[tuple[float, float]] = field(default_factory=list)  # (start, end) of each call

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        started = time.perf_counter()
        time.sleep(self.latency_s)
        completions = OraclePolicy().generate(requests)
        self.calls, self.sizes = self.calls + 1, self.sizes + [len(requests)]
        self.busy_s += time.perf_counter() - started
        self.spans.append((started, time.perf_counter()))
        return completions


def overhead(latency_s: float, episodes: int = 256, concurrency: int = 64) -> dict:
    policy = LatencyPolicy(latency_s)
    specs = episodes_for_env("gfcr/Math-v0", episodes)
    started = time.perf_counter()
    result = Runner(policy, RunnerConfig(concurrency=concurrency)).run(specs)
    assert result.solved == episodes, "the oracle must solve every episode"
    ideal = -(-episodes // concurrency) * latency_s
    spans = policy.spans
    gaps = [later[0] - earlier[1] for earlier, later in zip(spans, spans[1:], strict=False)]
    return {
        "start_s": spans[0][0] - started,  # envs made and reset until the first batch goes out
        "mean_gap_s": sum(gaps) / max(len(gaps), 1),  # between batches: steps, refills
        "end_s": started + result.seconds - spans[-1][1],  # after the last batch
        "load_average": os.getloadavg()[0],
        "latency_s": latency_s,
        "episodes": episodes,
        "concurrency": concurrency,
        "wall_s": result.seconds,
        "policy_s": policy.busy_s,
        "batches": policy.calls,
        "batch_sizes": policy.sizes,
        "wall_over_policy": result.seconds / policy.busy_s,
        "wall_over_ideal": result.seconds / ideal,
    }


def throughput(env_id: str, kwargs: dict, agent: str, episodes: int, env_workers: str) -> dict:
    policy = OraclePolicy() if agent == "scripted:oracle" else RandomPolicy()
    specs = episodes_for_env(env_id, episodes, kwargs=kwargs)
    config = RunnerConfig(concurrency=64, env_workers=env_workers, num_env_workers=os.cpu_count() or 2)
    Runner(policy, config).run(specs[: min(16, episodes)])  # warm-up: data loaded, workers started
    result = Runner(policy, config).run(specs)
    steps = sum(len(t.steps) for t in result.trajectories)
    return {
        "env": env_id,
        "kwargs": kwargs,
        "agent": agent,
        "env_workers": env_workers,
        "episodes": result.episodes,
        "steps": steps,
        "seconds": result.seconds,
        "steps_per_s": steps / result.seconds,
        "episodes_per_s": result.episodes / result.seconds,
        "mean_reward": result.mean_reward,
        "failed": result.failed,
    }


def gem_peer(num_envs: int, steps_per_env: int) -> dict:
    """GEM's vector env in the peer venv (see `_runner_peers.py`); {} with a note if the venv is missing."""
    if not PEER_PYTHON.exists():
        print(
            f"no peer venv at {PEER_PYTHON}: run `bash benchmarks/setup_peers.sh` for the GEM rows",
            file=sys.stderr,
        )
        return {}
    from gfcr.envs.math.data import load_source

    source = load_source("mmath")
    problems = [{"question": source[i].prompt, "gold": str(source[i].gold)} for i in range(len(source))]
    configs = [
        {"vector": "sync", "use_mp": True},
        {"vector": "async", "use_mp": True},
        {"vector": "sync", "use_mp": False},
    ]
    job = {"problems": problems, "num_envs": num_envs, "steps_per_env": steps_per_env, "configs": configs}
    done = subprocess.run(
        [str(PEER_PYTHON), str(BENCH_DIR / "_runner_peers.py")],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        check=True,
        timeout=1800,
    )
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--latencies", type=float, nargs="+", default=[0.25, 1.0, 4.0])
    parser.add_argument("--repeats", type=int, default=3, help="overhead runs per latency")
    args = parser.parse_args()
    results: dict = {
        "time": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "load_average_at_start": os.getloadavg(),
    }
    results["overhead"] = [overhead(latency) for latency in args.latencies for _ in range(args.repeats)]
    rows = [
        ("gfcr/Math-v0", {"dataset": "mmath"}, "scripted:oracle", 1496),
        ("gfcr/Math-v0", {"dataset": "mmath"}, "scripted:random", 256),
    ]
    rows += [
        (env, {}, agent, 256)
        for env in ("gfcr/Code-v0", "gfcr/SQL-v0")
        if env in gym.registry
        for agent in ("scripted:oracle", "scripted:random")
    ]
    results["throughput"] = [throughput(*row, workers) for row in rows for workers in ("thread", "process")]
    results["gem"] = gem_peer(num_envs=64, steps_per_env=24)
    results["load_average_at_end"] = os.getloadavg()
    print_tables(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


def print_tables(results: dict) -> None:
    print("| latency per batch | episodes @ concurrent | batches | wall s | policy s |", end="")
    print(" wall ÷ policy | wall ÷ ideal | start s | mean gap s | load |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in results["overhead"]:
        cells = [f"{r['latency_s']} s", f"{r['episodes']} @ {r['concurrency']}", str(r["batches"])]
        cells += [f"{r[key]:.2f}" for key in ("wall_s", "policy_s")]
        cells += [f"{r[key]:.3f}" for key in ("wall_over_policy", "wall_over_ideal", "start_s", "mean_gap_s")]
        cells.append(f"{r['load_average']:.1f}")
        print("| " + " | ".join(cells) + " |")
    print("\n| env | agent | env steps in | episodes | steps/s | mean reward | failed |")
    print("|---|---|---|---|---|---|---|")
    for r in results["throughput"]:
        env = r["env"] + "".join(f" {k}={v}" for k, v in r["kwargs"].items())
        print(
            f"| {env} | {r['agent']} | {r['env_workers']} | {r['episodes']} | {r['steps_per_s']:,.0f} | "
            f"{r['mean_reward']:.3f} | {r['failed']} |"
        )
    if results["gem"]:
        print("\n| system | steps | steps/s | mean reward |")
        print("|---|---|---|---|")
        for name, r in results["gem"].items():
            print(f"| {name} | {r['steps']} | {r['steps_per_s']:,.0f} | {r['reward_mean']:.3f} |")


if __name__ == "__main__":
    main()
