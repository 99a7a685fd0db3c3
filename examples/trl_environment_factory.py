"""GRPO in TRL's `GRPOTrainer`, with a gfcr env as TRL's `environment_factory`.

    python examples/trl_environment_factory.py           # a tiny random model, 2 steps on CPU
    python examples/trl_environment_factory.py --model DIR --env gfcr/Math-v0 -e split=AIME2024 \\
        -e 'tools=["calculator"]' --steps 100

TRL generates and runs its tool loop; each of the env's tools is a method of the class that
`environment_factory` builds, stepped through the gfcr env. `final_answer` steps the model's last
text answer, and the env's `get_reward` (logged as `rewards/<EnvClass>/mean`) is gfcr's verdict.
The model's chat template must render tool calls and its tokenizer parse them back
(`response_template`; `gfcr tiny-model` writes both, and TRL knows Qwen's, Llama's and others).
`-e KEY=VALUE` are the env's keywords, as in `gfcr run` (VALUE read as JSON where it can be).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", help="a causal LM directory (default: write a tiny random one)")
    parser.add_argument("--env", default="gfcr/ToolUse-v0", help="a gfcr env id")
    parser.add_argument("-e", "--env-arg", action="append", default=[], help="env keyword KEY=VALUE")
    parser.add_argument("--steps", type=int, default=2, help="GRPO steps")
    parser.add_argument("--prompts", type=int, default=2, help="prompts per step")
    parser.add_argument("--generations", type=int, default=4, help="rollouts per prompt (GRPO's group)")
    parser.add_argument("--max-tokens", type=int, default=64, help="completion tokens per rollout")
    parser.add_argument("--out", default=None, help="output directory (default: a temporary one)")
    args = parser.parse_args()

    import torch
    from transformers import AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from gfcr.agents.policies.tiny_model import write_tiny_model
    from gfcr.apps.options import parse_env_args
    from gfcr.integrations import trl as gfcr_trl

    env_kwargs = parse_env_args(args.env_arg)
    out = Path(args.out or tempfile.mkdtemp(prefix="gfcr-trl-"))
    model = args.model or str(write_tiny_model(out / "tiny-model", vocab_size=512, corpus_tasks=100))
    environment = gfcr_trl.environment_factory(args.env, **env_kwargs)
    rows = gfcr_trl.dataset(args.env, n=args.prompts * args.steps, **env_kwargs)
    print(f"{args.env} {env_kwargs}: tasks {', '.join(rows['task_id'][: args.prompts])}, …")
    config = GRPOConfig(
        output_dir=str(out / "run"),
        per_device_train_batch_size=args.prompts * args.generations,
        num_generations=args.generations,
        max_completion_length=args.max_tokens,
        max_steps=args.steps,
        learning_rate=1e-4,
        beta=0.0,
        gradient_checkpointing=False,  # TRL's default trades compute for memory; a small model needs none
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=not torch.cuda.is_available(),
        bf16=torch.cuda.is_available(),  # TRL's default bf16 is emulated, slowly, by CPUs without it
        disable_tqdm=True,
    )
    trainer = GRPOTrainer(
        model=model,
        processing_class=AutoTokenizer.from_pretrained(model),
        args=config,
        train_dataset=rows,
        environment_factory=environment,
        reward_funcs=gfcr_trl.final_answer,
    )
    trainer.train()
    column = f"rewards/{environment.__name__}/mean"
    for log in trainer.state.log_history:
        if column in log:
            print(
                f"step {log['step']}: reward {log[column]:.3f}, grad norm {log['grad_norm']:.4f}, "
                f"tool calls {log['tools/call_frequency']:.2f}"
            )


if __name__ == "__main__":
    main()
