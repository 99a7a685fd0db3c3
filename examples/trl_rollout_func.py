"""GRPO in TRL's `GRPOTrainer`, with gfcr's vectorized Runner playing the episodes (`rollout_func`).

    python examples/trl_rollout_func.py                  # a tiny random model, 2 steps on CPU
    python examples/trl_rollout_func.py --model DIR --env gfcr/Math-v0 --steps 100

Each step TRL draws prompts from `gfcr_trl.dataset`; gfcr's Runner plays `--generations` episodes
of each prompt's task with the trainer's current weights (multi-turn, with the env's tools,
token-in-token-out: observation tokens are masked out of the loss); `env_reward` hands TRL
gfcr's verdicts; a replay buffer keeps every finished trajectory with its provenance.
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
    parser.add_argument("--steps", type=int, default=2, help="GRPO steps")
    parser.add_argument("--prompts", type=int, default=2, help="prompts per step")
    parser.add_argument("--generations", type=int, default=4, help="episodes per prompt (GRPO's group)")
    parser.add_argument("--max-tokens", type=int, default=64, help="policy tokens per episode")
    parser.add_argument("--out", default=None, help="output directory (default: a temporary one)")
    args = parser.parse_args()

    import torch
    from transformers import AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from gfcr.agents.policies.tiny_model import write_tiny_model
    from gfcr.integrations import trl as gfcr_trl
    from gfcr.replay import ReplayBuffer

    out = Path(args.out or tempfile.mkdtemp(prefix="gfcr-trl-"))
    model = args.model or str(write_tiny_model(out / "tiny-model", vocab_size=512, corpus_tasks=100))
    replay = ReplayBuffer(out / "replay.db")
    config = GRPOConfig(
        output_dir=str(out / "run"),
        per_device_train_batch_size=args.prompts * args.generations,
        num_generations=args.generations,
        max_completion_length=args.max_tokens,
        max_steps=args.steps,
        learning_rate=1e-4,
        beta=0.0,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=not torch.cuda.is_available(),
        disable_tqdm=True,
    )
    trainer = GRPOTrainer(
        model=model,
        processing_class=AutoTokenizer.from_pretrained(model),
        args=config,
        train_dataset=gfcr_trl.dataset(args.env, n=args.prompts * args.steps),
        rollout_func=gfcr_trl.rollout_func(args.env, replay=replay),
        reward_funcs=gfcr_trl.env_reward,
    )
    trainer.train()
    for log in trainer.state.log_history:
        if "reward" in log:
            tokens = log["completions/mean_length"]
            print(f"step {log['step']}: reward {log['reward']:.3f}, policy tokens {tokens:.1f}")
    print(f"replay buffer: {len(replay)} trajectories in {out / 'replay.db'}")


if __name__ == "__main__":
    main()
