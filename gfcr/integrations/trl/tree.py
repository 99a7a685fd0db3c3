"""`TreeGRPOTrainer`: TRL's `GRPOTrainer`, trained on per-token advantages from gfcr's rollouts.

Tree estimators (TreeRL, Hou et al. 2025; TreeRPO, Yang et al. 2025) value every shared prefix of
a prompt's tree, and process scores (DeepSeekMath §4.1.3) credit each step apart, so the tokens of
one completion get different advantages (B, T), while TRL's
`GRPOTrainer` computes one per completion (B,) from its reward functions. TRL's loss already takes
(B, T): `_compute_loss` unsqueezes the advantages only when they are (B,). So one method changes
and TRL's loss stays as it is: clipping, every `loss_type`, the KL term, importance sampling.

Importing this module imports TRL (`pip install -e '.[trl]'`).
"""

from __future__ import annotations

from typing import Any, cast

import torch
from trl.trainer.utils import pad

from gfcr.errors import ConfigError
from gfcr.integrations.trl.vision import VisionGRPOTrainer
from gfcr.trainers.batching import mix_process


class TreeGRPOTrainer(VisionGRPOTrainer):
    """A `GRPOTrainer` whose tokens are credited apart: use it with `rollout_func(env, config=...)`
    whose recipe grows trees (`[generate.tree]`, `[control] branch_at`: each token credited by its
    tree node) or scores steps (`[judge.process]`), with the same arguments as `GRPOTrainer`.

    It overrides one method, `_generate_and_score_completions`, because that is where TRL turns
    rewards into advantages: TRL's method runs unchanged (generation through the rollout, rewards,
    reference and old logprobs, logging), then its `advantages` (B,) are replaced, completion by
    completion, by per-token ones: the rollout's `gfcr_advantages` (from the completion's tree),
    else TRL's own for the sequence, plus `gfcr_process_weight` · `gfcr_process` (its steps'
    process advantages) where the rollout gives them (`mix_process`, as `gfcr train` mixes them);
    right-padded with 0 as TRL pads the completions, shape (B, T). TRL's rewards and advantages
    still log as before. Episodes that show images train on their pixels, as under
    `VisionGRPOTrainer` (its subclass).

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
        sequence = output["advantages"].tolist()  # (B,): TRL's own, from its reward functions
        rows = [_token_advantages(row, advantage) for row, advantage in zip(inputs, sequence, strict=True)]
        if any(row is None for row in rows):
            raise ConfigError(
                "TreeGRPOTrainer trains on the per-token advantages (gfcr_advantages, gfcr_process) of "
                "gfcr's rollout_func with trees ([generate.tree] or [control] branch_at) or process "
                "scores ([judge.process]); this batch has none: give it such a rollout_func, or use TRL's "
                "GRPOTrainer"
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


def _token_advantages(row: dict[str, Any], sequence: float) -> list[float] | None:
    """One completion's advantage per token: its tree's (`gfcr_advantages`), else TRL's `sequence`
    one, plus weight · its process advantages (`gfcr_process`); None when the rollout gave neither."""
    outcome, process = row.get("gfcr_advantages"), row.get("gfcr_process")
    if process is None:
        return outcome
    return mix_process(sequence if outcome is None else outcome, process, row["gfcr_process_weight"])
