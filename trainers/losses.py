"""Policy-gradient losses of the GRPO family, on padded (B, T) token tensors.

Every loss is a clipped surrogate of the importance ratio r = π_θ / π_old times the advantage
A, summed over the loss-masked tokens and divided by a normaliser that is a property of the
*whole* accumulated batch (`BatchTotals`). So the loss of a batch is exactly the sum of the
losses of its micro-batches, however it is split. Advantages come per token, (B, T) (tree
estimators: `gfcr.generate.token_tree_advantages`), or per sequence, (B,) (Filter's
`group_advantages`), which is the same as broadcasting them to every token.

- "grpo" (Shao et al. 2024, DeepSeekMath eq. 3): per-sequence token mean, then mean over sequences.
- "dr_grpo" (Liu et al. 2025, "Understanding R1-Zero-Like Training", §3.2): token sum over a
  constant G × max_tokens, so length does not rescale a sequence's gradient.
- "dapo" (Yu et al. 2025, DAPO eq. 8): token sum over the batch's total loss tokens, with
  clip-higher (ε_low < ε_high).
- "gspo" (Zheng et al. 2025, GSPO eq. 5-7): one length-normalised ratio per sequence,
  s_i = exp(mean_t log r_it), clipped at the sequence level, mean over sequences. It multiplies
  one advantage per sequence: with per-token advantages, the loss-masked mean of the sequence's.

The optional KL penalty to a reference policy uses Schulman's k3 estimator,
k3 = π_ref/π_θ − log(π_ref/π_θ) − 1 (unbiased, always ≥ 0), reduced like the policy term.

Off-policy tokens (replayed, or sampled by an engine whose logprobs differ from the trainer's)
can carry truncated importance weights w = min(π_old/μ, C) against their behaviour policy μ
(Yao et al. 2025, "Your Efficient RL Framework Secretly Brings You Off-Policy RL Training"; TRL's
`vllm_importance_sampling_correction`): `is_weights` multiplies each token's surrogate (GSPO's
sequence surrogate by the sequence's weight), never the KL term. `tis_weights` computes them.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from gfcr.errors import ConfigError, UnknownNameError

LOSSES = ("grpo", "dr_grpo", "dapo", "gspo")
CORRECTIONS = ("recompute", "tis")  # of off-policy samples: π_old recomputed, and weighed against μ
MAX_LOG_RATIO = 20.0  # exp(20) ≈ 5e8: keeps a stale replayed sample from overflowing the ratio


@dataclass(frozen=True)
class BatchTotals:
    """Sizes of the whole accumulated batch (not of one micro-batch).

    `sequences`: samples in the batch (G groups × K samples); `tokens`: loss-masked tokens in it;
    `max_tokens`: Dr. GRPO's constant (the generation budget per sequence).
    """

    sequences: int
    tokens: int
    max_tokens: int = 1

    def __post_init__(self) -> None:
        if self.sequences < 1 or self.tokens < 1 or self.max_tokens < 1:
            raise ConfigError(
                f"batch totals must be >= 1, got sequences={self.sequences}, tokens={self.tokens}, "
                f"max_tokens={self.max_tokens}"
            )


@dataclass(frozen=True)
class LossOutput:
    """The loss to back-propagate and its parts; each is this micro-batch's share of the batch's."""

    loss: torch.Tensor  # policy + beta * kl
    policy: torch.Tensor
    kl: torch.Tensor
    clipped_tokens: float  # loss tokens (gspo: sequences × their tokens) where the clip was active


def clip_active(ratio: torch.Tensor, advantages: torch.Tensor, low: float, high: float) -> torch.Tensor:
    """Where the clip binds, as TRL counts it: the ratio past 1 + ε_high with A > 0, or below
    1 − ε_low with A < 0 (elsewhere min() keeps the unclipped term). Shapes broadcast: (B, T) or (B,).

    >>> clip_active(torch.tensor([1.5, 1.5, 0.5, 0.5]), torch.tensor([1.0, -1.0, 1.0, -1.0]), 0.8, 1.2)
    tensor([ True, False, False,  True])
    """
    return ((ratio > high) & (advantages > 0)) | ((ratio < low) & (advantages < 0))


def policy_loss(
    name: str,
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    loss_mask: torch.Tensor,
    totals: BatchTotals,
    *,
    epsilon_low: float = 0.2,
    epsilon_high: float = 0.2,
    ref_logprobs: torch.Tensor | None = None,
    beta: float = 0.0,
    is_weights: torch.Tensor | None = None,
) -> LossOutput:
    """The loss of one micro-batch. Shapes: logprobs, old_logprobs, loss_mask, ref_logprobs,
    is_weights (B, T); advantages (B, T), one per token, aligned with loss_mask, or (B,), one per
    sequence, broadcast to its tokens (the same loss, bit for bit). GSPO's sequence ratio multiplies
    the sequence's advantage: with (B, T) advantages, the loss-masked mean of the row (which is the
    sequence's advantage when it was broadcast); its importance weight is the row's loss-masked
    mean weight (`tis_weights(..., sequence=True)` gives every token the sequence's). None: weight 1.

    >>> lp = torch.zeros(2, 3, requires_grad=True)
    >>> mask, totals = torch.tensor([[1, 1, 0], [1, 0, 0]]), BatchTotals(2, 3)
    >>> out = policy_loss("dapo", lp, torch.zeros(2, 3), torch.tensor([1.0, -1.0]), mask, totals)
    >>> out.loss.backward(); (lp.grad * 3).round().tolist()  # ratio 1: -A / (total tokens) per loss token
    [[-1.0, -1.0, -0.0], [1.0, 0.0, 0.0]]
    >>> per_token = torch.tensor([[1.0, 2.0, 5.0], [-1.0, 3.0, 3.0]])  # e.g. a tree's; 5, 3, 3: mask 0
    >>> lp.grad = None; policy_loss("dapo", lp, torch.zeros(2, 3), per_token, mask, totals).loss.backward()
    >>> (lp.grad * 3).round().tolist()
    [[-1.0, -2.0, -0.0], [1.0, -0.0, -0.0]]
    """
    if name not in LOSSES:
        raise UnknownNameError("loss", name, LOSSES)
    if logprobs.shape != old_logprobs.shape or logprobs.shape != loss_mask.shape:
        raise ConfigError(
            f"logprobs {tuple(logprobs.shape)}, old_logprobs {tuple(old_logprobs.shape)} and loss_mask "
            f"{tuple(loss_mask.shape)} must have the same (B, T) shape"
        )
    if advantages.shape not in (logprobs.shape, logprobs.shape[:1]):
        raise ConfigError(
            f"advantages {tuple(advantages.shape)} must be (B, T) like logprobs {tuple(logprobs.shape)}, "
            f"one per token, or (B,) = ({logprobs.shape[0]},), one per sequence"
        )
    by_token = advantages.dim() == 2  # else one per sequence
    mask = loss_mask.to(logprobs.dtype)  # (B, T)
    log_ratio = ((logprobs - old_logprobs) * mask).clamp(-MAX_LOG_RATIO, MAX_LOG_RATIO)  # (B, T)
    low, high = 1.0 - epsilon_low, 1.0 + epsilon_high
    if name == "gspo":
        lengths = mask.sum(1).clamp(min=1.0)  # (B,)
        ratio = torch.exp(log_ratio.sum(1) / lengths)  # (B,) s_i, the sequence-level ratio
        a = (advantages * mask).sum(1) / lengths if by_token else advantages  # (B,)
        surrogate = torch.minimum(ratio * a, ratio.clamp(low, high) * a)  # (B,)
        if is_weights is not None:
            surrogate = surrogate * (is_weights * mask).sum(1) / lengths  # (B,) the sequence's weight
        policy = -surrogate.sum() / totals.sequences
        clipped = float((clip_active(ratio, a, low, high).to(mask.dtype) * mask.sum(1)).sum())
    else:
        ratio = torch.exp(log_ratio)  # (B, T)
        a = advantages if by_token else advantages[:, None]  # (B, T) or (B, 1)
        per_token = -torch.minimum(ratio * a, ratio.clamp(low, high) * a)  # (B, T)
        if is_weights is not None:
            per_token = per_token * is_weights
        policy = reduce_tokens(name, per_token, mask, totals)
        clipped = float((clip_active(ratio, a, low, high).to(mask.dtype) * mask).sum())
    kl = torch.zeros((), dtype=logprobs.dtype, device=logprobs.device)
    if beta > 0.0:
        if ref_logprobs is None:
            raise ConfigError("beta > 0 needs ref_logprobs (the reference policy's token logprobs)")
        delta = (ref_logprobs - logprobs).clamp(-MAX_LOG_RATIO, MAX_LOG_RATIO)  # log(π_ref / π_θ)
        k3 = torch.exp(delta) - delta - 1.0  # (B, T)
        kl = reduce_tokens("grpo" if name == "gspo" else name, k3, mask, totals)
    return LossOutput(policy + beta * kl, policy.detach(), kl.detach(), clipped)


def tis_weights(
    old_logprobs: torch.Tensor,
    behaviour_logprobs: torch.Tensor,
    mask: torch.Tensor,
    cap: float,
    *,
    sequence: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Truncated importance sampling against the behaviour policy μ: per token, the ratio
    ρ = π_old/μ and the weight min(ρ, C) (1.0 off the mask); with `sequence`, one ratio per sequence,
    exp(mean_t log ρ) as GSPO's, given to each of its tokens. Shapes (B, T); returns (ratio, weight).

    >>> old, mu = torch.tensor([[0.0, -1.0, -1.0]]), torch.tensor([[-1.0, 0.0, -5.0]])
    >>> ratio, weight = tis_weights(old, mu, torch.tensor([[1.0, 1.0, 0.0]]), cap=1.5)
    >>> ratio, weight  # e truncated to C; the token off the mask weighs 1
    (tensor([[2.7183, 0.3679, 1.0000]]), tensor([[1.5000, 0.3679, 1.0000]]))
    >>> tis_weights(old, mu, torch.tensor([[1.0, 1.0, 0.0]]), cap=1.5, sequence=True)[0].tolist()
    [[1.0, 1.0, 1.0]]
    """
    log_ratio = ((old_logprobs - behaviour_logprobs) * mask).clamp(-MAX_LOG_RATIO, MAX_LOG_RATIO)  # (B, T)
    if sequence:
        mean = log_ratio.sum(1, keepdim=True) / mask.sum(1, keepdim=True).clamp(min=1.0)  # (B, 1)
        log_ratio = torch.where(mask > 0, mean.expand_as(log_ratio), torch.zeros_like(log_ratio))
    ratio = torch.exp(log_ratio)
    return ratio, ratio.clamp(max=cap)


def reduce_tokens(name: str, values: torch.Tensor, mask: torch.Tensor, totals: BatchTotals) -> torch.Tensor:
    """Sum (B, T) per-token `values` over `mask` with the normaliser of loss `name`."""
    masked = values * mask
    if name == "grpo":  # mean over each sequence's tokens, then over the batch's sequences
        return (masked.sum(1) / mask.sum(1).clamp(min=1.0)).sum() / totals.sequences
    if name == "dr_grpo":  # a constant: G × max_tokens
        return masked.sum() / (totals.sequences * totals.max_tokens)
    if name == "dapo":  # every loss token of the batch weighs the same
        return masked.sum() / totals.tokens
    raise UnknownNameError("token reduction", name, ("grpo", "dr_grpo", "dapo"))


def sft_loss(logprobs: torch.Tensor, loss_mask: torch.Tensor, total_tokens: int) -> torch.Tensor:
    """Supervised (rejection-sampling fine-tuning) loss: the negative log-likelihood of the
    loss-masked tokens, averaged over the whole batch's `total_tokens`. Shapes: (B, T).

    >>> float(sft_loss(torch.log(torch.tensor([[0.5, 0.25]])), torch.tensor([[1, 1]]), 2))
    1.0397207736968994
    """
    return -(logprobs * loss_mask.to(logprobs.dtype)).sum() / max(total_tokens, 1)
