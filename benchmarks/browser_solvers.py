"""Which MiniWoB pages the scripted oracle solves: every page, seeds 0..N-1, and the docs table.

Run from the repository root:

    .venv/bin/python benchmarks/browser_solvers.py --seeds 10 --json docs/bench_browser_solvers.json

Plays `OraclePolicy` on `--seeds` episodes of every MiniWoB page that has a solver (the runner's
threads share one Chromium), and prints the per-page table of docs/browser.md: each page with
its solved share, or the reason it has no solver (`WHY_UNSOLVED`). The text solvers read only the
observation, as an agent does, so a page they solve is doable from the accessibility text; the
pages whose task is drawn run with `observation="screenshot"`, whose solvers plan on a replica of
the page (`gfcr.envs.browser.miniwob_oracle.screenshot`). `--group vision` runs those alone.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

from gfcr.agents import OraclePolicy, Runner, RunnerConfig
from gfcr.agents.runner.specs import env_config
from gfcr.core import solved
from gfcr.core.episode import EpisodeSpec
from gfcr.envs.browser.miniwob import miniwob_pages
from gfcr.envs.browser.miniwob_oracle import SCREENSHOT_PAGES, SOLVED_PAGES, WHY_UNSOLVED
from gfcr.envs.browser.miniwob_oracle.screenshot import SCREENSHOT_SOLVERS

ENV_ID = "gfcr/Browser-v0"
GROUPS = {  # dataset -> (its pages, the env's keywords)
    "solvable": (SOLVED_PAGES, {}),
    "vision": (SCREENSHOT_PAGES, {"observation": "screenshot"}),
}


def solved_seeds(seeds: int, concurrency: int, groups: list[str]) -> dict[str, list[float]]:
    """Page -> the oracle's reward on seeds 0..seeds-1, for every page of `groups`."""
    specs = []
    for group in groups:
        pages, kwargs = GROUPS[group]
        env = env_config(ENV_ID, {"dataset": group, "num_seeds": seeds, **kwargs})
        specs += [EpisodeSpec(env, f"miniwob/{p}/{seed}", seed) for p in pages for seed in range(seeds)]
    runs = Runner(OraclePolicy(), RunnerConfig(concurrency=concurrency)).run(specs)
    rewards: dict[str, list[float]] = defaultdict(list)
    for trajectory in sorted(runs.trajectories, key=lambda t: t.task_id):
        rewards[trajectory.task_id.split("/")[1]].append(trajectory.total_reward)
    return dict(rewards)


def table(rewards: dict[str, list[float]], seeds: int) -> str:
    """The markdown table of the pages run, and of those without a solver: solved seeds, or why
    there is no solver."""
    rows = ["| page | oracle | notes |", "|---|---|---|"]
    for page in miniwob_pages():
        if page in rewards:
            wins = sum(map(solved, rewards[page]))
            if page in SCREENSHOT_SOLVERS:
                rows.append(f"| {page} | {wins}/{seeds} | screenshot: {SCREENSHOT_SOLVERS[page].shows} |")
            else:
                rows.append(f"| {page} | {wins}/{seeds} | |")
        elif page in WHY_UNSOLVED:
            rows.append(f"| {page} | no solver | {WHY_UNSOLVED[page]} |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, default=10, help="episodes per page (seeds 0..N-1)")
    parser.add_argument("--concurrency", type=int, default=3, help="episodes in flight (threads)")
    parser.add_argument("--json", type=Path, help="write the per-page rewards here")
    parser.add_argument("--group", choices=["all", *GROUPS], default="all", help="which solvers to run")
    args = parser.parse_args()

    start = time.perf_counter()
    rewards = solved_seeds(
        args.seeds, args.concurrency, list(GROUPS) if args.group == "all" else [args.group]
    )
    seconds = time.perf_counter() - start
    episodes = sum(len(r) for r in rewards.values())
    wins = sum(solved(reward) for r in rewards.values() for reward in r)
    pages = len(miniwob_pages())
    print(table(rewards, args.seeds))
    print(
        f"\n{len(SOLVED_PAGES)} of {pages} pages have a text solver, {len(SCREENSHOT_PAGES)} a screenshot "
        f"solver; {wins}/{episodes} episodes solved in {seconds:.0f} s; oracle over every page, one seed "
        f"each, in text mode: {len(SOLVED_PAGES) / pages:.2f} at most"
    )
    if args.json:
        result = {
            "measured": datetime.now(UTC).isoformat(timespec="seconds"),
            "seeds": args.seeds,
            "seconds": seconds,
            "rewards": rewards,
            "unsolved": WHY_UNSOLVED,
        }
        args.json.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
