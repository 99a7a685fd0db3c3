"""TRL's `GRPOTrainer` learning a gfcr recipe's task, with and without gfcr's `rollout_func`.

The peer comparison of issue 37: the same model, task, prompts, held-out episodes and sample budget
as `gfcr train RECIPE` (a recipe of examples/methods/, e.g. grpo or dapo), trained by TRL's
`GRPOTrainer` two ways:

- "trl": TRL generates (`model.generate` inside `GRPOTrainer`) and a reward function asks the env
  for its verdict on each completion's text (single-turn, as TRL's generation is);
- "trl + gfcr rollout_func": gfcr's Runner plays the episodes and the recipe's pipeline stages run
  inside TRL (`gfcr.integrations.trl.rollout_func(env, config=RECIPE)`: DAPO's dynamic sampling and
  overlong shaping, for instance).

The recipe's settings map onto TRL's: `prompts_per_step` x `group_size` samples per step
(`num_generations` = `group_size`), `max_tokens`, temperature, learning rate (constant), gradient
clipping, LoRA rank and alpha on the same projections, the loss (`loss_type` "grpo" or "dapo", the
clip range, `beta`), and the precision (bf16 only on a CUDA device, as `gfcr train`). TRL has no
dynamic sampling: on its own generation the DAPO recipe is its loss, clip-higher and TRL's soft
overlong punishment. Each run spends at most `--budget` samples (`budget / (prompts_per_step x
group_size)` optimizer steps, fewer where dynamic sampling's refills spent part of it:
`rollout_func(sample_budget=...)` stops them at the budget, as `gfcr train`'s
`sample_budget` does, and the run stops once the rest cannot hold a batch), then its policy is
evaluated on the recipe's held-out episodes (`gfcr.trainers.trainer.held_out_episodes`: the very episodes
`gfcr train` evaluates on) with gfcr's Runner. Reported per mode, over seeds (mean ± 95% t-interval):
held-out reward at the end and wall seconds of training, beside `gfcr train`'s own runs of the
recipe (`--gfcr-runs`, as `benchmarks/gfcr_training.py --recipes` leaves them), with each mode's
paired difference to `gfcr train` on the same seeds.

    .venv/bin/python benchmarks/trl_learning.py --recipes grpo dapo --seeds 5 --budget 512 --threads 1 \\
        --runs runs/trl-learning --keep docs/bench_trl --json docs/bench_trl_learning.json

A finished run (its `result.json`, under `--runs` or `--keep`) is read, not re-run; `--keep` copies
each one there the moment it finishes, so a benchmark spread over days survives a fresh checkout.
`gfcr train`'s side of the comparison is `benchmarks/gfcr_training.py --recipes grpo dapo` with the
same seeds and budget, best run on the same machine beside the TRL runs (`--gfcr-runs` names its
folder; docs/benchmarks.md has the loop that interleaves them).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

import gymnasium as gym  # noqa: E402
import torch  # noqa: E402
from gfcr_training import final_eval, finished, interval, paired, show, verdict  # noqa: E402  (beside)
from transformers import TrainerCallback  # noqa: E402

from gfcr.agents import Runner  # noqa: E402
from gfcr.agents.policies.hf import HFPolicy  # noqa: E402
from gfcr.integrations import trl as gfcr_trl  # noqa: E402
from gfcr.trainers.config import TrainConfig  # noqa: E402
from gfcr.trainers.logging import read_metrics  # noqa: E402
from gfcr.trainers.models import uses_bf16  # noqa: E402
from gfcr.trainers.trainer import episode_token_budget, held_out_episodes  # noqa: E402

MODES = ("trl", "trl + gfcr rollout_func")


def env_verdict(env_id: str, kwargs: dict[str, Any]):  # -> a TRL reward function
    """A TRL reward function: the env's verdict on each completion's text, one turn per episode."""
    env = gym.make(env_id, **kwargs)

    def reward(completions: list[Any], task_id: list[str], **_: Any) -> list[float]:
        rewards = []
        for completion, task in zip(completions, task_id, strict=True):
            env.reset(options={"task_id": task})
            text = completion[-1]["content"] if isinstance(completion, list) else completion
            rewards.append(float(env.step(text)[1]))
        return rewards

    reward.__name__ = "env_verdict"
    return reward


class SampleBudget(TrainerCallback):
    """Stops TRL once the run's unspent samples cannot hold another batch. A step of gfcr's pipeline
    can generate more than TRL's batch (dynamic sampling refills dropped groups); they count, as in
    `gfcr train`'s `sample_budget`, and `rollout_func(sample_budget=...)` stops refills at it."""

    def __init__(self, budget: int, per_step: int, rollout: Any = None) -> None:
        self.budget, self.per_step, self.rollout, self.generated = budget, per_step, rollout, 0

    def on_step_end(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        pipeline = getattr(self.rollout, "pipeline", None)
        self.generated = pipeline.samples_total if pipeline is not None else self.generated + self.per_step
        control.should_training_stop = self.budget - self.generated < self.per_step


def train_one(
    recipe: str, mode: str, seed: int, budget: int, out: Path, threads: int | None
) -> dict[str, Any]:
    """One TRL run of `recipe` in `mode`, then its held-out evaluation; what it measured."""
    from peft import LoraConfig
    from transformers import AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer
    from trl.rewards import get_soft_overlong_punishment

    config = TrainConfig.from_toml(recipe)
    config = TrainConfig.from_dict(config.to_dict() | {"seed": seed})
    rollout, loss, optim, model = config.rollout, config.loss, config.optim, config.model
    sampling = rollout.runner.sampling
    if loss.name not in ("grpo", "dapo"):
        raise SystemExit(f"{recipe}: [loss] name = {loss.name!r} has no TRL loss_type here (grpo, dapo)")
    torch.set_num_threads(threads or config.threads or torch.get_num_threads())
    batch = rollout.prompts_per_step * rollout.group_size
    trl_config = GRPOConfig(
        output_dir=str(out / "trl"),
        per_device_train_batch_size=batch,
        num_generations=rollout.group_size,
        max_completion_length=sampling.max_tokens,
        temperature=sampling.temperature,
        max_steps=budget // batch,  # at most; SampleBudget stops earlier where refills spent the budget
        learning_rate=optim.lr,
        lr_scheduler_type="constant",
        max_grad_norm=optim.max_grad_norm,
        loss_type=loss.name,
        beta=loss.beta,
        epsilon=loss.epsilon_low,
        epsilon_high=loss.epsilon_high,
        gradient_checkpointing=False,
        bf16=uses_bf16(model, "cuda" if torch.cuda.is_available() else "cpu"),  # gfcr train's precision
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=not torch.cuda.is_available(),
        seed=seed,
        disable_tqdm=True,
    )
    env, kwargs = config.env.id, config.env.kwargs
    if mode == "trl":
        extra: dict[str, Any] = {"reward_funcs": [env_verdict(env, kwargs)]}
        penalty = config.pipeline.overlong_penalty
        if penalty.enabled:  # the lengths gfcr train's [overlong_penalty] takes
            lengths = penalty.lengths(episode_token_budget(config))
            extra["reward_funcs"].append(get_soft_overlong_punishment(*lengths))
        budget_callback = SampleBudget(budget, batch)
    else:
        rollout_func = gfcr_trl.rollout_func(env, config=recipe, sample_budget=budget, **kwargs)
        extra = {"reward_funcs": gfcr_trl.env_reward, "rollout_func": rollout_func}
        budget_callback = SampleBudget(budget, batch, rollout_func)
    lora = LoraConfig(
        r=model.lora_rank,
        lora_alpha=model.lora_alpha,
        target_modules=list(model.lora_targets),
        lora_dropout=0.0,
        task_type="CAUSAL_LM",
    )
    tokenizer = AutoTokenizer.from_pretrained(model.path)
    trainer = GRPOTrainer(
        model=model.path,
        processing_class=tokenizer,
        args=trl_config,
        train_dataset=gfcr_trl.dataset(env, n=config.env.num_tasks, seed=seed, **kwargs),  # the pool
        peft_config=lora,
        callbacks=[budget_callback],
        **extra,
    )
    start = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - start
    trainer.model.eval()
    policy = HFPolicy.from_model(trainer.model, tokenizer)
    with torch.no_grad():
        result = Runner(policy, config.rollout.runner).run(held_out_episodes(config))
    rewards = [log["reward"] for log in trainer.state.log_history if "reward" in log]
    return {
        "held_out": result.mean_reward,
        "seconds": seconds,
        "samples": budget_callback.generated,
        "steps": len(rewards),
        "rewards": rewards,
    }


def gfcr_train_runs(runs: Path, seeds: int) -> dict[int, dict[str, float]]:
    """`gfcr train`'s finished runs of one recipe under `runs` (seed -> held-out, RL seconds)."""
    found = {}
    for seed in range(seeds):
        if finished(out := runs / f"seed{seed}"):
            metrics = read_metrics(out)
            seconds = sum(m.get("perf/step_s", 0.0) for m in metrics)
            found[seed] = {"held_out": final_eval(metrics), "seconds": seconds}
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recipes", nargs="+", default=["grpo", "dapo"], help="examples/methods/NAME.toml")
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--budget", type=int, default=512, help="RL samples per run")
    parser.add_argument("--runs", default="runs/trl-learning")
    parser.add_argument("--json", help="write every run's result here")
    parser.add_argument("--keep", help="copy each finished run's result.json here, and read it here")
    parser.add_argument(
        "--gfcr-runs",
        default="runs/methods-math-512",
        help="gfcr train's runs of the recipes (RECIPE/seedK), to compare with",
    )
    parser.add_argument(
        "--threads", type=int, help="torch threads (default: the recipe's); 1 where two runs share 2 cores"
    )
    args = parser.parse_args()
    results: dict[str, dict[str, dict[int, dict[str, Any]]]] = {}  # recipe -> mode -> seed -> result
    for seed in range(args.seeds):  # seed 0 of every arm first: a stopped benchmark leaves pairs
        for recipe in args.recipes:
            for mode in args.modes:
                arm = Path(recipe, mode.replace(" ", "-").replace("+", "plus"), f"seed{seed}")
                out = Path(args.runs) / arm
                kept = Path(args.keep or args.runs) / arm / "result.json"
                if not kept.exists() and not (out / "result.json").exists():
                    print(f"{out}: training", flush=True)
                    out.mkdir(parents=True, exist_ok=True)
                    result = train_one(
                        f"examples/methods/{recipe}.toml", mode, seed, args.budget, out, args.threads
                    )
                    (out / "result.json").write_text(json.dumps(result, indent=2))
                if not kept.exists():
                    kept.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(out / "result.json", kept)
                results.setdefault(recipe, {}).setdefault(mode, {})[seed] = json.loads(kept.read_text())
    print(f"\n{args.budget} samples per run, up to {args.seeds} seeds:")
    print("| recipe | trainer | seeds | final held-out | training wall s | paired vs gfcr train |")
    print("|---|---|---|---|---|---|")
    for recipe, modes in results.items():
        own = gfcr_train_runs(Path(args.gfcr_runs) / recipe, args.seeds)
        baseline = {seed: r["held_out"] for seed, r in own.items()}
        for arm, by_seed in ({"gfcr train": own} | modes).items():
            held_out = {seed: r["held_out"] for seed, r in by_seed.items()}
            seconds = interval([r["seconds"] for r in by_seed.values()])
            versus = "—" if arm == "gfcr train" else verdict(paired(held_out, baseline))
            print(
                f"| {recipe} | {arm} | {len(by_seed)} | {show(interval(list(held_out.values())))} "
                f"| {show(seconds, 0)} | {versus} |"
            )
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "results": results}, indent=2))


if __name__ == "__main__":
    main()
