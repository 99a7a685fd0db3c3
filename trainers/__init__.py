"""The bundled RL trainer (GRPO family): GRPO, Dr. GRPO, DAPO and GSPO losses over multi-turn,
token-in-token-out rollouts, with an optional supervised warm start (rejection-sampling
fine-tuning), LoRA, checkpoint/resume, JSONL and TensorBoard logs. `gfcr train CONFIG.toml`.

Modules, one idea each: `config` (the TOML sections), `losses` (the objectives), `batching`
(trajectories to tensors), `rollout` (one step's rollouts: dynamic sampling, overlong penalty,
rollout metrics), `update` (gradient accumulation and the optimizer step), `models`
(policy, trained model, reference, weight sync), `sft` (warm start), `checkpoint`, `logging`,
`trainer` (the loop).
"""

from gfcr.trainers.config import TrainConfig
from gfcr.trainers.losses import LOSSES, BatchTotals, policy_loss
from gfcr.trainers.trainer import Trainer, main

__all__ = ["LOSSES", "BatchTotals", "TrainConfig", "Trainer", "main", "policy_loss"]
