"""The rollout pipeline's own cost, and what trees save, measured.

    .venv/bin/python benchmarks/pipeline.py [--steps 10] [--model runs/tiny-model]

1. Overhead: one step of G = 8 prompts × K = 8 samples on gfcr/ToolUse-v0 with the scripted oracle
   (no model: the runner and the envs are all there is to time), through `RolloutPipeline.step()`
   against its floor — the same work done bare: choose the prompts, `Runner.run` their groups, record
   the posteriors (what `Rollouts.collect` did in its one mode). Steps alternate between the two;
   reported: the median wall time of each and their ratio (goal: within 2%).
2. Trees against groups at equal samples: the same model and prompts (reasoning-gym chain_sum on
   gfcr/Math-v0, temperature 1, 48 tokens a turn), K = 8 samples a prompt as 8 independent samples
   or as 2 roots branched at their 1 highest-entropy token into 3 children each, twice
   (`[generate.tree] entropy_points = 1, children = 3`, 2 roots × (1 + 3) leaves): policy tokens
   generated per trained sample (a shared prefix is generated once) and wall time.

Prints Markdown tables (docs/benchmarks.md holds a run's output).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from gfcr.agents import RunnerConfig, episodes_for_env, make_policy
from gfcr.agents.runner import Runner
from gfcr.control import ControlConfig, RolloutController
from gfcr.core import SamplingParams
from gfcr.generate import expand_groups, round_seed
from gfcr.trainers.config import PipelineConfig
from gfcr.trainers.pipeline import RolloutPipeline

G, K = 8, 8


def overhead(steps: int) -> None:
    policy = make_policy("scripted:oracle")
    tasks = episodes_for_env("gfcr/ToolUse-v0", 256, kwargs={"num_tasks": 256})
    runner_config = RunnerConfig(concurrency=64)
    pipeline = RolloutPipeline.from_config(
        policy, tasks, PipelineConfig(), prompts_per_step=G, group_size=K, runner=runner_config
    )
    controller = RolloutController(ControlConfig(num_prompts=G, group_size=K))
    runner = Runner(policy, runner_config)
    task_ids = [t.task_id for t in tasks if t.task_id is not None]

    rounds = iter(range(1, 10**6))

    def bare() -> None:
        plan = controller.plan(task_ids)
        chosen = [t for t in tasks if t.task_id in plan]
        specs = expand_groups(chosen, plan, seed=round_seed(0, next(rounds)))
        controller.observe(runner.run(specs).trajectories)

    timed: dict[str, list[float]] = {"pipeline": [], "bare": []}
    bare(), pipeline.step()  # warm: envs made
    for _ in range(steps):
        for name, run in (("pipeline", pipeline.step), ("bare", bare)):
            started = time.perf_counter()
            run()
            timed[name].append(time.perf_counter() - started)
    pipe, floor = statistics.median(timed["pipeline"]), statistics.median(timed["bare"])
    print(
        f"\n### Pipeline overhead: {G} prompts x {K} samples, scripted oracle, gfcr/ToolUse-v0, "
        f"{steps} steps\n"
    )
    print("| | median step (s) | ratio |\n|---|---:|---:|")
    print(f"| bare: choose, Runner.run, observe | {floor:.4f} | 1.000 |")
    print(f"| RolloutPipeline.step() | {pipe:.4f} | {pipe / floor:.3f} |")


def trees(model: str) -> None:
    kwargs = {"dataset": "reasoning_gym", "generators": ["chain_sum"], "size": 200, "answer_format": "plain"}
    tasks = episodes_for_env("gfcr/Math-v0", 200, kwargs=kwargs)
    runner = RunnerConfig(concurrency=16, sampling=SamplingParams(temperature=1.0, max_tokens=48))
    policy = make_policy(f"hf:{model}")
    shapes = {
        "groups of 8": PipelineConfig(),
        "trees: 2 roots x (1 + 3)": PipelineConfig.from_dict(
            {"generate": {"tree": {"entropy_points": 1, "children": 3}}}
        ),
    }
    print(f"\n### Trees against groups at equal samples: {model}, {4} prompts x {K} samples, 2 steps\n")
    print("| shape | samples | policy tokens generated | per sample | response tokens trained | wall (s) |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, config in shapes.items():
        pipeline = RolloutPipeline.from_config(
            policy, tasks, config, prompts_per_step=4, group_size=K, runner=runner
        )
        started, samples, generated, trained = time.perf_counter(), 0, 0, 0
        for _ in range(2):
            batch = pipeline.step()
            samples += len(batch.trained)
            generated += sum(t.cost.tokens_out for t in batch.generated)
            trained += sum(sum(t.tokens.loss_mask) for t in batch.trained if t.tokens is not None)
        wall = time.perf_counter() - started
        print(f"| {name} | {samples} | {generated} | {generated / samples:.1f} | {trained} | {wall:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=10, help="timed steps of each way (overhead)")
    parser.add_argument(
        "--model", default=None, help="a model directory for the tree run (default: a tiny one)"
    )
    args = parser.parse_args()
    overhead(args.steps)
    model = args.model
    if model is None:
        from gfcr.agents.policies.tiny_model import write_tiny_model

        model = str(write_tiny_model(Path(tempfile.mkdtemp()) / "tiny", vocab_size=400, corpus_tasks=20))
    trees(model)


if __name__ == "__main__":
    main()
