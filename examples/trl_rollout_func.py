"""GRPO in TRL's `GRPOTrainer`, with gfcr's vectorized Runner playing the episodes (`rollout_func`).

    python examples/trl_rollout_func.py                  # a tiny random model, 2 steps on CPU

SmolLM2-135M learning one-digit arithmetic on CPU (`gfcr pretrained smollm2-135m runs/smollm2`
first; the task and settings of examples/math_smollm2_cpu.toml; reward rises within minutes):

    python examples/trl_rollout_func.py --model runs/smollm2 --env gfcr/Math-v0 \\
        -e dataset=reasoning_gym -e 'generators=["chain_sum"]' -e size=1000 -e answer_format=plain \\
        -e 'generator_config={"min_terms": 2, "max_terms": 2, "min_digits": 1, "max_digits": 1}' \\
        --steps 12 --prompts 4 --generations 8 --max-tokens 32 --lr 5e-4 --lora-rank 16

Each step TRL draws prompts from `gfcr_trl.dataset`; gfcr's Runner plays `--generations` episodes
of each prompt's task with the trainer's current weights (multi-turn, with the env's tools,
token-in-token-out: observation tokens are masked out of the loss); `env_reward` hands TRL
gfcr's verdicts; a replay buffer keeps every finished trajectory with its provenance.
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
    parser.add_argument("--env", default="gfcr/ToolUse-v0", help="a gfcr env id or suite name")
    parser.add_argument("-e", "--env-arg", action="append", default=[], help="env keyword KEY=VALUE")
    parser.add_argument("--steps", type=int, default=2, help="GRPO steps")
    parser.add_argument("--prompts", type=int, default=2, help="prompts per step")
    parser.add_argument("--generations", type=int, default=4, help="episodes per prompt (GRPO's group)")
    parser.add_argument("--max-tokens", type=int, default=64, help="policy tokens per episode")
    parser.add_argument("--lr", type=float, default=1e-4, help="learning rate")
    parser.add_argument("--lora-rank", type=int, default=0, help="> 0: train LoRA adapters of this rank")
    parser.add_argument("--seed", type=int, default=0, help="the dataset's task order and sampling")
    parser.add_argument(
        "--recipe",
        default=None,
        help="a gfcr train recipe (e.g. examples/methods/dapo.toml): its pipeline stages",
    )
    parser.add_argument("--out", default=None, help="output directory (default: a temporary one)")
    args = parser.parse_args()

    import torch
    from transformers import AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from gfcr.agents.policies.tiny_model import write_tiny_model
    from gfcr.apps.options import parse_env_args
    from gfcr.integrations import trl as gfcr_trl
    from gfcr.replay import ReplayBuffer

    env_kwargs = parse_env_args(args.env_arg)
    out = Path(args.out or tempfile.mkdtemp(prefix="gfcr-trl-"))
    model = args.model or str(write_tiny_model(out / "tiny-model", vocab_size=512, corpus_tasks=100))
    replay = ReplayBuffer(out / "replay.db")
    config = GRPOConfig(
        output_dir=str(out / "run"),
        per_device_train_batch_size=args.prompts * args.generations,
        num_generations=args.generations,
        max_completion_length=args.max_tokens,
        max_steps=args.steps,
        learning_rate=args.lr,
        lr_scheduler_type="constant",  # a short run: no decay to zero within it
        beta=0.0,
        gradient_checkpointing=False,  # TRL's default trades compute for memory; a small model needs none
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=not torch.cuda.is_available(),
        bf16=torch.cuda.is_available(),  # TRL's default bf16 is emulated, slowly, by CPUs without it
        seed=args.seed,
        disable_tqdm=True,
    )
    rows = gfcr_trl.dataset(args.env, n=args.prompts * args.steps, seed=args.seed, **env_kwargs)
    print(f"{args.env} {env_kwargs}: tasks {', '.join(rows['task_id'][: args.prompts])}, …")
    trainer = GRPOTrainer(
        model=model,
        processing_class=AutoTokenizer.from_pretrained(model),
        args=config,
        train_dataset=rows,
        rollout_func=gfcr_trl.rollout_func(args.env, replay=replay, config=args.recipe, **env_kwargs),
        reward_funcs=gfcr_trl.env_reward,
        peft_config=_lora(args.lora_rank),
    )
    trainer.train()
    for log in trainer.state.log_history:
        if "reward" in log:
            print(
                f"step {log['step']}: reward {log['reward']:.3f}, grad norm {log['grad_norm']:.4f}, "
                f"policy tokens {log['completions/mean_length']:.1f}"
            )
    print(f"replay buffer: {len(replay)} trajectories in {out / 'replay.db'}")


def _lora(rank: int):  # -> peft.LoraConfig | None
    """LoRA adapters on the attention projections (as gfcr's trainer puts them), or None."""
    if rank <= 0:
        return None
    from peft import LoraConfig

    targets = ["q_proj", "k_proj", "v_proj", "o_proj"]
    return LoraConfig(
        r=rank, lora_alpha=2 * rank, target_modules=targets, lora_dropout=0.0, task_type="CAUSAL_LM"
    )


if __name__ == "__main__":
    main()
