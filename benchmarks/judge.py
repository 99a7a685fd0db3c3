"""The judge stage's cost per episode: an LLM judge against the verifier alone, measured.

    .venv/bin/python benchmarks/judge.py [--groups 5] [--max-tokens 64] [--model runs/tiny-model]

Groups of K = 8 episodes of one gfcr/Math-v0 task (4 gold answers by scripted:oracle, 4 junk ones
by scripted:random), a different task per group so that no judge reply comes from the cache, are
judged by the judge stage (`gfcr.filter.JudgeStage`, what `gfcr train` runs on each group):

- verifier alone: `[judge]` with the env's reward only (the default: it reads the reward the env
  gave), and, for scale, the env's verifier run again on each episode (`MathVerifier.verify`);
- the verifier plus `[judge.llm]` with `gfcr tiny-model` as the judge (the hf backend on CPU,
  greedy, at most `--max-tokens` a reply), pointwise (K judge prompts a group), listwise (1) and
  pairwise (K(K-1)/2 = 28); each group's prompts go to the model as one batch.

Reported per episode: the median over groups of the stage's seconds / K, the judge prompts, and
the share of members the judge scored (the tiny model's random weights answer junk: every member
is a judge failure, which costs the same as a verdict). Prints a Markdown table (docs/benchmarks.md
holds a run's output).
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import gymnasium as gym

from gfcr.agents import Runner, RunnerConfig, episodes_for_env, make_policy
from gfcr.core import Task, Trajectory
from gfcr.envs.math import MathVerifier
from gfcr.filter import EnvReward, JudgeStage, Weighted
from gfcr.filter.judge_config import LLMJudgeConfig

K = 8
ENV = "gfcr/Math-v0"


def groups(n: int) -> list[tuple[Task, list[Trajectory]]]:
    """`n` groups of K episodes, one task each: K/2 gold answers, K/2 junk ones."""
    specs = episodes_for_env(ENV, n)
    played: dict[str, list[Trajectory]] = {}
    for agent in ("scripted:oracle", "scripted:random"):
        runner = Runner(make_policy(agent), RunnerConfig(concurrency=16))
        episodes = [dataclasses.replace(spec, seed=j, sample=j) for spec in specs for j in range(K // 2)]
        for t in runner.run(episodes).trajectories:
            played.setdefault(t.task_id, []).append(t)
    tasks = gym.make(ENV).unwrapped.tasks
    return [(tasks.get(task_id), group) for task_id, group in played.items()]


def timed(judged: Sequence[tuple[Task, list[Trajectory]]], run: Callable) -> tuple[float, list[Trajectory]]:
    """Median over groups of `run(task, group)`'s wall time per episode, and the episodes it judged
    (fresh copies: the originals stay unjudged)."""
    times, episodes = [], []
    for task, group in judged:
        fresh = copy.deepcopy(group)
        started = time.perf_counter()
        run(task, fresh)
        times.append((time.perf_counter() - started) / len(fresh))
        episodes += fresh
    return statistics.median(times), episodes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=5)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument(
        "--model", default=None, help="A judge model directory (default: a fresh tiny model)."
    )
    args = parser.parse_args()
    model = args.model
    if model is None:
        from gfcr.agents.policies.tiny_model import write_tiny_model

        model = str(write_tiny_model(Path(tempfile.mkdtemp()) / "tiny-model"))
    warm, *judged = groups(args.groups + 1)  # the first group warms each judge (model loaded, first batch)
    verifier = MathVerifier()
    alone = JudgeStage((Weighted("verifier", EnvReward()),))
    again = timed(judged, lambda task, group: [verifier.verify(task, t) for t in group])[0]
    rows = [
        ("verifier alone (`[judge]` default: the env's reward)", 0, timed(judged, alone.judge)[0], None),
        ("the env's verifier run again (`MathVerifier.verify`)", 0, again, None),
    ]
    for mode, prompts in (("pointwise", K), ("listwise", 1), ("pairwise", K * (K - 1) // 2)):
        config = LLMJudgeConfig(model=f"hf:{model}", mode=mode, max_tokens=args.max_tokens, deadline_s=None)
        judge = config.build()
        judge.scores(*warm)
        stage = JudgeStage((Weighted("verifier", EnvReward()), Weighted("llm", judge)))
        seconds, episodes = timed(judged, stage.judge)
        scored = sum("llm" in t.reward_terms for t in episodes) / len(episodes)
        rows.append((f"verifier + tiny-model judge, {mode}", prompts / K, seconds, scored))
    print(f"| judge stage (group of K = {K}, {len(judged)} groups, max_tokens {args.max_tokens}) "
          "| judge prompts / episode | seconds / episode (median) | members scored |")  # fmt: skip
    print("|---|---|---|---|")
    for name, prompts, seconds, share in rows:
        print(f"| {name} | {prompts:g} | {seconds:.6f} | {'—' if share is None else f'{share:.0%}'} |")


if __name__ == "__main__":
    main()
