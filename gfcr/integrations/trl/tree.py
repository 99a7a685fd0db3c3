"""`TreeGRPOTrainer`: TRL's `GRPOTrainer`, trained on per-token advantages from gfcr's tree rollouts.

Tree estimators (TreeRL, Hou et al. 2025; TreeRPO, Yang et al. 2025) value every shared prefix of
a prompt's tree, so the tokens of one completion get different advantages (B, T), while TRL's
`GRPOTrainer` computes one per completion (B,) from its reward functions. TRL's loss already takes
(B, T): `_compute_loss` unsqueezes the advantages only when they are (B,). So one method changes
and TRL's loss stays as it is: clipping, every `loss_type`, the KL term, importance sampling.

Importing this module imports TRL (`pip install -e '.[trl]'`).
"""

from __future__ import annotations

from typing import Any, cast

import torch
from trl import GRPOTrainer
from trl.trainer.utils import pad

from gfcr.errors import ConfigError


class TreeGRPOTrainer(GRPOTrainer):
    """A `GRPOTrainer` whose completions are the leaves of gfcr's trees, each token credited by its
    tree node: use it with `rollout_func(env, config=...)` whose recipe grows trees
    (`[generate.tree]`, `[control] branch_at`), with the same arguments as `GRPOTrainer`.

    It overrides one method, `_generate_and_score_completions`, because that is where TRL turns
    rewards into advantages: TRL's method runs unchanged (generation through the rollout, rewards,
    reference and old logprobs, logging), then its `advantages` (B,) are replaced by the rollout's
    `gfcr_advantages` (one per completion token, from the completion's tree), right-padded with 0
    as TRL pads the completions, shape (B, T). TRL's rewards still log as before; its per-sequence
    advantages are not trained on.

        from gfcr.integrations import trl as gfcr_trl

        trainer = gfcr_trl.TreeGRPOTrainer(
            model=path,
            args=GRPOConfig(output_dir="out", num_generations=8),
            train_dataset=gfcr_trl.dataset("gfcr/Math-v0", n=64),
            rollout_func=gfcr_trl.rollout_func("gfcr/Math-v0", config="examples/methods/treerl.toml"),
            reward_funcs=gfcr_trl.env_reward,
        )
    """

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        output = super()._generate_and_score_completions(inputs)
        # TRL merges the rollout's extra fields into each input row (for the reward functions)
        rows = [row.get("gfcr_advantages") for row in inputs]
        if any(row is None for row in rows):
            raise ConfigError(
                "TreeGRPOTrainer trains on the per-token advantages (gfcr_advantages) of gfcr's "
                "rollout_func with trees ([generate.tree] or [control] branch_at); this batch has none: "
                "give it such a rollout_func, or use TRL's GRPOTrainer"
            )
        completion_ids = output["completion_ids"]  # (B, T)
        advantages = pad(
            [torch.tensor(row, dtype=torch.float32) for row in rows],
            padding_value=0,
            padding_side="right",
            pad_to_multiple_of=cast(int | None, self.pad_to_multiple_of),  # as TRL pads the completions
        ).to(completion_ids.device)
        if advantages.shape != completion_ids.shape:  # a row not aligned with its completion
            raise ConfigError(
                f"gfcr_advantages are {tuple(advantages.shape)} but the completions "
                f"{tuple(completion_ids.shape)}; each row needs one advantage per completion token "
                "(rollout_func's own field)"
            )
        output["advantages"] = advantages
        return output
