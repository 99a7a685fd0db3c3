"""TRL's `GRPOTrainer` steps/s: gfcr's `rollout_func` (gfcr's Runner generates) vs TRL's own generation.

Same model (a fresh `gfcr tiny-model`), same prompts (`gfcr.integrations.trl.dataset` of
`gfcr/Math-v0`: no tools, so both sides render the same prompt tokens), same batch (prompts x
generations), temperature 1.0 and completion budget, one turn per episode on both sides (TRL's
default generation is single-turn), CPU, one torch thread. TRL's side scores completions with a
reward of the same cost as gfcr's (the env's verdict on the text); the first step (warm-up) is
left out of the rate.

    .venv/bin/python benchmarks/trl_rollout.py [--steps 6] [--json docs/bench_trl_rollout.json]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

import torch  # noqa: E402
from transformers import AutoTokenizer, TrainerCallback  # noqa: E402
from trl import GRPOConfig, GRPOTrainer  # noqa: E402
from trl_learning import env_verdict  # noqa: E402  (benchmarks/, beside this script)

from gfcr.agents import RunnerConfig  # noqa: E402
from gfcr.agents.policies.tiny_model import write_tiny_model  # noqa: E402
from gfcr.core import SamplingParams  # noqa: E402
from gfcr.integrations import trl as gfcr_trl  # noqa: E402

ENV = "gfcr/Math-v0"


class StepClock(TrainerCallback):
    """Wall time at the end of every optimizer step."""

    def __init__(self) -> None:
        self.ends: list[float] = []

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.ends.append(time.perf_counter())


def steps_per_s(
    model: str, out: Path, steps: int, prompts: int, generations: int, tokens: int, gfcr: bool
) -> float:
    config = GRPOConfig(
        output_dir=str(out / ("gfcr" if gfcr else "trl")),
        per_device_train_batch_size=prompts * generations,
        num_generations=generations,
        max_completion_length=tokens,
        max_steps=steps,
        temperature=1.0,
        learning_rate=1e-4,
        beta=0.0,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        disable_tqdm=True,
    )
    extra: dict[str, Any] = {"reward_funcs": env_verdict(ENV, {})}
    if gfcr:
        sampling = SamplingParams(temperature=1.0, max_tokens=tokens)
        runner = RunnerConfig(concurrency=prompts * generations, sampling=sampling, max_turns=1)
        extra = {
            "reward_funcs": gfcr_trl.env_reward,
            "rollout_func": gfcr_trl.rollout_func(ENV, runner_config=runner),
        }
    clock = StepClock()
    trainer = GRPOTrainer(
        model=model,
        processing_class=AutoTokenizer.from_pretrained(model),
        args=config,
        train_dataset=gfcr_trl.dataset(ENV, n=prompts * steps),
        callbacks=[clock],
        **extra,
    )
    trainer.train()
    counts = [log["num_tokens"] for log in trainer.state.log_history if "num_tokens" in log]
    per_step = (counts[-1] - counts[0]) / (len(counts) - 1)
    return (len(clock.ends) - 1) / (clock.ends[-1] - clock.ends[0]), per_step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--prompts", type=int, default=4)
    parser.add_argument("--generations", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    out = Path(tempfile.mkdtemp(prefix="gfcr-bench-trl-"))
    model = str(write_tiny_model(out / "tiny-model", vocab_size=512, corpus_tasks=100))
    sizes = (args.steps, args.prompts, args.generations, args.max_tokens)
    result = {
        "TRL's own generation": steps_per_s(model, out, *sizes, gfcr=False),
        "gfcr rollout_func": steps_per_s(model, out, *sizes, gfcr=True),
    }
    batch = f"{args.prompts} prompts x {args.generations} generations, {args.max_tokens} tokens"
    print(f"GRPOTrainer steps/s, {batch}:")
    base = result["TRL's own generation"][0]
    for name, (rate, tokens) in result.items():
        print(f"  {name:24s} {rate:6.2f} steps/s  (x{rate / base:.2f}), {tokens:,.0f} tokens per step")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
