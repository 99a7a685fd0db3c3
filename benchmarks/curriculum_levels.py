"""Held-out reward per difficulty level of finished training runs: where a curriculum's samples went.

`benchmarks/gfcr_training.py` reports one held-out reward over every level of the pool. This script
takes the runs it wrote (their last checkpoint's model) and evaluates each on `--episodes` held-out
tasks, the ones after the training pool in the run's seeded order (as the trainer's evaluation takes
them), at the run's sampling settings, and reports the mean reward per level (`Task.metadata
["level"]`), per variant over seeds (mean ± 95% t-interval):

    .venv/bin/python benchmarks/curriculum_levels.py runs/curriculum-vision --episodes 300 \\
        --json docs/bench_curriculum_levels.json
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import gfcr  # noqa: F401  (registers the envs)
from gfcr.agents import Runner, episodes_for_env
from gfcr.agents.policies.hf import HFPolicy
from gfcr.trainers.config import TrainConfig

T_975 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78}  # Student's t, two-sided 95%


def levels_of(config: TrainConfig, task_ids: set[str]) -> dict[str, int]:
    """Each task id's level, read from the env's tasks."""
    env = gym.make(config.env.id, **config.env.kwargs)
    try:
        tasks = env.unwrapped.tasks  # type: ignore[attr-defined]  # a gfcr TextEnv
        return {task_id: int(tasks.get(task_id).metadata["level"]) for task_id in task_ids}
    finally:
        env.close()


def evaluate(run: Path, episodes: int) -> dict[int, float]:
    """Mean held-out reward per level of `run`'s last checkpoint."""
    config = TrainConfig.from_dict(json.loads((run / "config.json").read_text()))
    checkpoint = sorted((run / "checkpoints").glob("step-*"))[-1] / "model"
    specs = episodes_for_env(
        config.env.id, episodes, kwargs=config.env.kwargs, seed=config.seed, skip=config.env.num_tasks
    )
    result = Runner(HFPolicy(str(checkpoint)), config.rollout.runner).run(specs)
    level = levels_of(config, {t.task_id for t in result.trajectories})
    by_level: dict[int, list[float]] = defaultdict(list)
    for trajectory in result.trajectories:
        by_level[level[trajectory.task_id]].append(trajectory.total_reward)
    return {k: float(np.mean(v)) for k, v in sorted(by_level.items())}


def interval(values: list[float]) -> str:
    mean = float(np.mean(values))
    half = (
        T_975.get(len(values) - 1, 1.96) * float(np.std(values, ddof=1)) / len(values) ** 0.5
        if len(values) > 1
        else 0.0
    )
    return f"{mean:.3f} ± {half:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", help="a benchmarks/gfcr_training.py --runs folder: <variant>/seed<k>")
    parser.add_argument("--episodes", type=int, default=300)
    parser.add_argument("--json", help="write the per-run figures here")
    args = parser.parse_args()
    figures: dict[str, dict[str, dict[int, float]]] = {}
    for variant in sorted(p for p in Path(args.runs).iterdir() if p.is_dir()):
        figures[variant.name] = {
            seed.name: evaluate(seed, args.episodes) for seed in sorted(variant.glob("seed*"))
        }
    levels = sorted({level for runs in figures.values() for run in runs.values() for level in run})
    print("| variant | seeds | " + " | ".join(f"level {k}" for k in levels) + " |")
    print("|---|---" + "|---" * len(levels) + "|")
    for variant, runs in figures.items():
        cells = [interval([run[k] for run in runs.values()]) for k in levels]
        print(f"| {variant} | {len(runs)} | " + " | ".join(cells) + " |")
    if args.json:
        data: dict[str, Any] = {"args": vars(args), "runs": figures}
        Path(args.json).write_text(json.dumps(data, indent=2))


if __name__ == "__main__":
    main()
