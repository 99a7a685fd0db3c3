"""Which MiniWoB pages the scripted oracle solves: every page, seeds 0..N-1, and the docs table.

Run from the repository root:

    .venv/bin/python benchmarks/browser_solvers.py --seeds 10 --json docs/bench_browser_solvers.json

Plays `OraclePolicy` on `--seeds` episodes of every MiniWoB page that has a solver (the runner's
threads share one Chromium), and prints the per-page table of docs/browser.md: each page with
its solved share, or the reason it has no solver (`WHY_UNSOLVED`). The oracle reads only the
observation, as an agent does, so a page it solves is doable from the accessibility text.
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
from gfcr.envs.browser.miniwob_oracle import SOLVED_PAGES, WHY_UNSOLVED

ENV_ID = "gfcr/Browser-v0"


def solved_seeds(seeds: int, concurrency: int) -> dict[str, list[float]]:
    """Page -> the oracle's reward on seeds 0..seeds-1, for every page with a solver."""
    env = env_config(ENV_ID, {"dataset": "solvable", "num_seeds": seeds})
    specs = [EpisodeSpec(env, f"miniwob/{p}/{seed}", seed) for p in SOLVED_PAGES for seed in range(seeds)]
    runs = Runner(OraclePolicy(), RunnerConfig(concurrency=concurrency)).run(specs)
    rewards: dict[str, list[float]] = defaultdict(list)
    for trajectory in sorted(runs.trajectories, key=lambda t: t.task_id):
        rewards[trajectory.task_id.split("/")[1]].append(trajectory.total_reward)
    return dict(rewards)


def table(rewards: dict[str, list[float]], seeds: int) -> str:
    """The markdown table of every page: solved seeds, or why there is no solver."""
    rows = ["| page | oracle | notes |", "|---|---|---|"]
    for page in miniwob_pages():
        if page in rewards:
            wins = sum(map(solved, rewards[page]))
            rows.append(f"| {page} | {wins}/{seeds} | |")
        else:
            rows.append(f"| {page} | no solver | {WHY_UNSOLVED[page]} |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, default=10, help="episodes per page (seeds 0..N-1)")
    parser.add_argument("--concurrency", type=int, default=3, help="episodes in flight (threads)")
    parser.add_argument("--json", type=Path, help="write the per-page rewards here")
    args = parser.parse_args()

    start = time.perf_counter()
    rewards = solved_seeds(args.seeds, args.concurrency)
    seconds = time.perf_counter() - start
    episodes = sum(len(r) for r in rewards.values())
    wins = sum(solved(reward) for r in rewards.values() for reward in r)
    pages = len(miniwob_pages())
    print(table(rewards, args.seeds))
    print(
        f"\n{len(SOLVED_PAGES)} of {pages} pages have a solver; {wins}/{episodes} episodes solved "
        f"in {seconds:.0f} s; oracle over every page, one seed each: {len(SOLVED_PAGES) / pages:.2f} at most"
    )
    if args.json:
        result = {
            "measured": datetime.now(UTC).isoformat(timespec="seconds"),
            "seeds": args.seeds,
            "seconds": seconds,
            "rewards": rewards,
            "unsolved": {page: WHY_UNSOLVED[page] for page in miniwob_pages() if page not in rewards},
        }
        args.json.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
