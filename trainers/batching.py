"""From trajectories to tensors: samples with advantages, micro-batches, token logprobs.

Token-in-token-out: a sample's ids are the trajectory's own `prompt_ids + completion_ids`, as the
policy produced them, and its loss mask is the trajectory's (1 on sampled tokens, 0 on the
prompt and on observation tokens between turns), so observations are never trained on and
nothing is re-tokenized. The old logprobs for the importance ratio are the rollout's; a
replayed sample (from an older policy version) brings its own stored ones.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from gfcr.core import Trajectory
from gfcr.errors import DataError
from gfcr.filter import group_advantages


@dataclass(frozen=True)
class Sample:
    """One trajectory ready for the loss. Lists run over `input_ids` (prompt + completion)."""

    input_ids: list[int]
    loss_mask: list[int]  # 1 where the policy sampled the token
    old_logprobs: list[float]  # the sampling policy's logprob of each token (0.0 where mask is 0)
    advantage: float
    reward: float = 0.0
    replayed: bool = False  # from the replay buffer (an older policy's tokens and logprobs)

    @property
    def num_loss_tokens(self) -> int:
        return sum(self.loss_mask)


def sample_from_trajectory(trajectory: Trajectory, advantage: float, reward: float | None = None) -> Sample:
    """The sample of one trajectory; it must carry token data (from a `TokenPolicy`: hf:, vllm:).
    `reward` is the one its advantage came from (None: the trajectory's task reward).

    >>> from gfcr.core import TokenData
    >>> t = Trajectory("e", "t", "x", tokens=TokenData([1, 2], [3, 4, 5], [1, 0, 1], [-0.5, 0.0, -0.25]))
    >>> s = sample_from_trajectory(t, 1.0)
    >>> s.input_ids, s.loss_mask, s.num_loss_tokens
    ([1, 2, 3, 4, 5], [0, 0, 1, 0, 1], 2)
    """
    tokens = trajectory.tokens
    if tokens is None or not tokens.prompt_ids:
        raise DataError(
            f"trajectory {trajectory.id} ({trajectory.env_id}) has no token data; training needs a policy "
            "that keeps token ids (hf:PATH or vllm:PATH), not text-only backends"
        )
    prompt = len(tokens.prompt_ids)
    return Sample(
        input_ids=tokens.prompt_ids + tokens.completion_ids,
        loss_mask=[0] * prompt + list(tokens.loss_mask),
        old_logprobs=[0.0] * prompt + list(tokens.logprobs),
        advantage=float(advantage),
        reward=trajectory.total_reward if reward is None else float(reward),
        replayed=bool(trajectory.signals.get("replayed", False)),
    )


def samples_from_groups(
    groups: Mapping[str, Sequence[Trajectory]],
    estimator: str = "grpo",
    reward: Callable[[Trajectory], float] | None = None,
) -> list[Sample]:
    """Samples of every group, with Filter's group-normalised advantages (`group_advantages`) of
    `reward(trajectory)` (None: the task reward; e.g. `OverlongPenalty.reward` to shape it).

    Trajectories with no sampled token (an episode that failed before the policy spoke) are left
    out after the advantages are computed, so they still count in their group's baseline.
    """
    samples = []
    for group in groups.values():
        rewards = [t.total_reward if reward is None else reward(t) for t in group]
        advantages = group_advantages(rewards, estimator)
        for trajectory, r, advantage in zip(group, rewards, advantages, strict=True):
            if trajectory.tokens is not None and sum(trajectory.tokens.loss_mask) > 0:
                samples.append(sample_from_trajectory(trajectory, float(advantage), r))
    return samples


@dataclass
class MicroBatch:
    """Right-padded tensors of a few samples; targets are shifted one token left of inputs.

    input_ids, attention_mask: (B, L); loss_mask, old_logprobs: (B, L-1) aligned with the
    logprob of token t+1 given tokens <= t; advantages: (B,).
    """

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    loss_mask: torch.Tensor
    old_logprobs: torch.Tensor
    advantages: torch.Tensor

    def to(self, device: str | torch.device) -> MicroBatch:
        return MicroBatch(*(t.to(device) for t in vars(self).values()))


def collate(samples: Sequence[Sample], pad_id: int = 0) -> MicroBatch:
    """Pad `samples` on the right into one `MicroBatch`."""
    width = max(len(s.input_ids) for s in samples)
    size = (len(samples), width)
    input_ids = torch.full(size, pad_id, dtype=torch.long)
    attention_mask = torch.zeros(size, dtype=torch.long)
    loss_mask = torch.zeros(size, dtype=torch.float32)
    old_logprobs = torch.zeros(size, dtype=torch.float32)
    for row, s in enumerate(samples):
        n = len(s.input_ids)
        input_ids[row, :n] = torch.tensor(s.input_ids)
        attention_mask[row, :n] = 1
        loss_mask[row, :n] = torch.tensor(s.loss_mask, dtype=torch.float32)
        old_logprobs[row, :n] = torch.tensor(s.old_logprobs, dtype=torch.float32)
    advantages = torch.tensor([s.advantage for s in samples], dtype=torch.float32)
    return MicroBatch(input_ids, attention_mask, loss_mask[:, 1:], old_logprobs[:, 1:], advantages)


def micro_batches(samples: Sequence[Sample], size: int, pad_id: int = 0) -> Iterator[MicroBatch]:
    """Consecutive micro-batches of at most `size` samples."""
    for start in range(0, len(samples), size):
        yield collate(samples[start : start + size], pad_id)


def token_logprobs(model: torch.nn.Module | Callable[..., Any], batch: MicroBatch) -> torch.Tensor:
    """log π(token_{t+1} | tokens_<=t) under `model`'s raw logits (as the rollout reports them),
    shape (B, L-1), float32. `model`: a causal LM, or any callable taking its keywords.

    Computed as logit − logsumexp(logits), so the (B, L, V) log-softmax is never materialised in
    full precision twice (V is 150k for Qwen models).
    """
    logits = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits[
        :, :-1
    ]  # (B, L-1, V)
    targets = batch.input_ids[:, 1:, None]  # (B, L-1, 1)
    picked = logits.gather(-1, targets).squeeze(-1).float()  # (B, L-1)
    return picked - torch.logsumexp(logits.float(), dim=-1)
