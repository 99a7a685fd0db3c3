"""Reset and step latency of `gfcr/Browser-v0` beside BrowserGym's MiniWoB envs, on the same tasks.

Run from the repository root (BrowserGym lives in its own venv; make it once with
`bash benchmarks/setup_browsergym.sh`):

    .venv/bin/python benchmarks/browser.py --json docs/bench_browser_back_to_back.json

One run plays `--episodes` seeds of each task in TASKS with every system, the systems taking
turns (`--rounds`) so that other load on the machine weighs on all alike, and times each
`reset()` and each `step()` (median and p90), and checks that every episode was solved (so both
sides did the same, real work). Each step is one action — a click or a fill aimed at the element
the task needs — so a step's time is the action plus the observation the env returns.

Systems:
- gfcr `gym.make("gfcr/Browser-v0")` as made: the page as accessibility text (and, in a second
  row, with a PNG screenshot in `info` as BrowserGym always takes); actions from the env's
  scripted solver, split to one per step;
- BrowserGym `gym.make("browsergym/miniwob.<task>")` (browsergym-miniwob 0.14.3, Playwright 1.44,
  Debian's Chromium), as shipped (`pre_observation_delay=0.5`) and with the delay set to 0. It
  extracts DOM, accessibility tree and screenshot on every step and starts a new browser on
  every reset; MiniWoB tasks run with Playwright's `slow_mo=100` (its task setting).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
PEER_VENV = BENCH_DIR / ".venv-browsergym"
PEER_SCRIPT = BENCH_DIR / "_browsergym_peer.py"
SETUP_COMMAND = "bash benchmarks/setup_browsergym.sh"
TASKS = ("click-test", "click-button", "focus-text", "enter-text", "login-user")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def summary(name: str, timings: dict[str, list[float]]) -> dict[str, Any]:
    resets, steps, rewards = timings["resets"], timings["steps"], timings["rewards"]
    return {
        "system": name,
        "episodes": len(rewards),
        "solved": sum(r >= 1.0 for r in rewards),
        "reset_median_s": statistics.median(resets),
        "reset_p90_s": percentile(resets, 0.9),
        "steps": len(steps),
        "step_median_s": statistics.median(steps),
        "step_p90_s": percentile(steps, 0.9),
    }


def run_gfcr(seeds: list[int], screenshot: bool, think_s: float) -> dict[str, list[float]]:
    """Every (task, seed) episode in one env, one action per step, timed around reset and step."""
    import gymnasium as gym

    import gfcr  # noqa: F401  (registers the envs)
    from gfcr.envs.browser import BrowserEnv

    env = gym.make("gfcr/Browser-v0", dataset=list(TASKS), num_seeds=max(seeds) + 1, screenshot=screenshot)
    resets: list[float] = []
    steps: list[float] = []
    rewards: list[float] = []
    for task in TASKS:
        for seed in seeds:
            started = time.perf_counter()
            _, info = env.reset(options={"task_id": f"miniwob/{task}/{seed}"})
            resets.append(time.perf_counter() - started)
            actions = BrowserEnv.oracle(info["task"], info["messages"]).splitlines()
            reward = 0.0
            for action in actions:
                time.sleep(think_s)  # the policy choosing its action: not timed
                started = time.perf_counter()
                _, step_reward, terminated, truncated, _ = env.step(action)
                steps.append(time.perf_counter() - started)
                reward = float(step_reward)
                if terminated or truncated:
                    break
            rewards.append(float(reward))
    env.close()
    return {"resets": resets, "steps": steps, "rewards": rewards}


def run_browsergym(seeds: list[int], pre_observation_delay: float, think_s: float) -> dict[str, list[float]]:
    from gfcr.envs.browser.server import miniwob_html

    python = PEER_VENV / "bin" / "python"
    if not python.exists():
        raise FileNotFoundError(f"{python} is missing; create it with `{SETUP_COMMAND}`")
    environment = {
        **os.environ,
        "MINIWOB_URL": (miniwob_html() / "miniwob").as_uri() + "/",
        "PLAYWRIGHT_BROWSERS_PATH": str(PEER_VENV / "ms-playwright"),
    }
    config = {
        "tasks": list(TASKS),
        "seeds": seeds,
        "pre_observation_delay": pre_observation_delay,
        "think_s": think_s,
    }
    done = subprocess.run(
        [str(python), str(PEER_SCRIPT), json.dumps(config)],
        env=environment,
        capture_output=True,
        text=True,
        timeout=3600,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the BrowserGym run failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def print_table(rows: list[dict[str, Any]]) -> None:
    gfcr_step = rows[0]["step_median_s"]
    gfcr_reset = rows[0]["reset_median_s"]
    print(
        "| system | episodes solved | reset median | reset p90 | steps | step median | step p90 "
        "| step median vs gfcr | reset median vs gfcr |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['system']} | {row['solved']}/{row['episodes']} | {row['reset_median_s'] * 1000:.0f} ms "
            f"| {row['reset_p90_s'] * 1000:.0f} ms | {row['steps']} | {row['step_median_s'] * 1000:.0f} ms "
            f"| {row['step_p90_s'] * 1000:.0f} ms | {row['step_median_s'] / gfcr_step:.1f}x "
            f"| {row['reset_median_s'] / gfcr_reset:.1f}x |"
        )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=6, help="seeds per task, for every system")
    parser.add_argument("--rounds", type=int, default=3, help="turns the systems take, sharing the seeds out")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--skip-peers", action="store_true", help="time gfcr only")
    parser.add_argument(
        "--think-s",
        type=float,
        default=0.0,
        help="untimed seconds before each step: a policy choosing its action",
    )
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    load_before = os.getloadavg()[0]  # other work on the machine slows every row; recorded with the results
    systems: list[tuple[str, Callable[[list[int]], dict[str, list[float]]]]] = [
        ("gfcr Browser-v0", lambda seeds: run_gfcr(seeds, screenshot=False, think_s=args.think_s)),
        (
            "gfcr Browser-v0, screenshot=True",
            lambda seeds: run_gfcr(seeds, screenshot=True, think_s=args.think_s),
        ),
    ]
    if not args.skip_peers:
        systems += [
            (
                "BrowserGym (pre_observation_delay=0.5, default)",
                lambda seeds: run_browsergym(seeds, 0.5, args.think_s),
            ),
            ("BrowserGym (pre_observation_delay=0)", lambda seeds: run_browsergym(seeds, 0.0, args.think_s)),
        ]
    # Systems take turns, a few seeds each, so that other work on the machine weighs on all alike.
    timings: dict[str, dict[str, list[float]]] = {
        name: {"resets": [], "steps": [], "rewards": []} for name, _ in systems
    }
    for turn in range(args.rounds):
        seeds = list(range(args.episodes))[turn :: args.rounds]
        for name, run in systems:
            print(f"[browser bench] round {turn + 1}/{args.rounds}: {name} …", file=sys.stderr, flush=True)
            for key, values in run(seeds).items():
                timings[name][key] += values
    rows = [summary(name, timings[name]) for name, _ in systems]
    print_table(rows)
    if args.json:
        record = {
            "when": datetime.now(UTC).isoformat(timespec="seconds"),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
            "load_average_1min_before_after": [round(load_before, 2), round(os.getloadavg()[0], 2)],
            "tasks": list(TASKS),
            "episodes_per_task": args.episodes,
            "think_s": args.think_s,
            "rows": rows,
        }
        args.json.write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main()
