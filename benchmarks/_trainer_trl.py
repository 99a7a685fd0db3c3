"""TRL's side of benchmarks/trainer.py: GRPOTrainer on the same tiny model, prompts and settings.

Runs in benchmarks/.venv-trl (bash benchmarks/setup_trl.sh); prints one JSON line:
{"peer": "trl", "version": ..., "steps": [...per-step seconds and tokens...]}.
The prompts are gfcr/ToolUse-v0's, already rendered with the model's chat template (tool list
included), passed as plain text so both trainers see the same prompt tokens. The reward is the
env's first-turn reward (as in gfcr's run with max_turns = 1).
"""

from __future__ import annotations

import argparse
import json
import time

import torch


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--prompts", type=int, default=4)
    parser.add_argument("--group-size", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--out", default="/tmp/gfcr-bench-trl")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    import gymnasium as gym
    import trl
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    import gfcr  # noqa: F401  (registers the envs)

    tokenizer = AutoTokenizer.from_pretrained(args.model)
    env = gym.make("gfcr/ToolUse-v0", max_turns=1)
    rows = []
    for seed in range(args.prompts * args.steps):
        _, info = env.reset(seed=seed)
        text = tokenizer.apply_chat_template(
            [m.to_openai() for m in info["messages"]],
            tools=info["tools"],
            tokenize=False,
            add_generation_prompt=True,
        )
        rows.append({"prompt": text, "task_id": info["task"].id})

    def env_reward(completions: list[str], task_id: list[str], **_: object) -> list[float]:
        rewards = []
        for completion, task in zip(completions, task_id, strict=True):
            env.reset(options={"task_id": task})
            rewards.append(float(env.step(completion.removesuffix("<|im_end|>"))[1]))
        return rewards

    class Timer(TrainerCallback):
        def __init__(self) -> None:
            self.begin = 0.0
            self.steps: list[dict[str, float]] = []
            self.tokens = 0.0

        def on_step_begin(self, *_: object, **__: object) -> None:
            self.begin = time.perf_counter()

        def on_step_end(self, *_: object, **__: object) -> None:
            self.steps.append({"seconds": time.perf_counter() - self.begin})

        def on_log(
            self, _args: object, _state: object, _control: object, logs: dict | None = None, **__: object
        ) -> None:
            if logs and "num_tokens" in logs and self.steps:
                self.steps[-1]["tokens"] = float(logs["num_tokens"]) - self.tokens
                self.tokens = float(logs["num_tokens"])

    config = GRPOConfig(
        output_dir=args.out,
        per_device_train_batch_size=args.prompts * args.group_size,
        num_generations=args.group_size,
        max_completion_length=args.max_tokens,
        learning_rate=args.lr,
        lr_scheduler_type="constant",
        beta=0.0,
        loss_type="dapo",
        temperature=1.0,
        top_p=1.0,
        max_steps=args.steps,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        bf16=False,
        seed=0,
        shuffle_dataset=False,
        dataloader_num_workers=0,
        gradient_accumulation_steps=1,
        num_iterations=1,
        disable_tqdm=True,
    )
    timer = Timer()
    trainer = GRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32),
        reward_funcs=env_reward,
        args=config,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        callbacks=[timer],
    )
    trainer.train()
    print(json.dumps({"peer": "trl", "version": trl.__version__, "steps": timer.steps}))


if __name__ == "__main__":
    main()
