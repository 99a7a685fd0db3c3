"""One optimizer step on a batch of samples: micro-batches, gradient accumulation, clipping.

The batch's normalisers (`BatchTotals`) are fixed before the first micro-batch, and every
micro-batch's loss is its share of the batch's loss, so the accumulated gradient does not
depend on how the batch is split (the property DAPO's token-level loss needs).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace

import torch

from gfcr.trainers.batching import MicroBatch, Sample, collate, micro_batches, token_logprobs
from gfcr.trainers.config import LossConfig
from gfcr.trainers.losses import BatchTotals, policy_loss, sft_loss

Reference = Callable[[MicroBatch], torch.Tensor]  # reference-policy logprobs (B, L-1), no grad
Autocast = Callable[[], AbstractContextManager]


@dataclass(frozen=True)
class UpdateSettings:
    """How gradients are computed: loss, micro-batch size, padding, device, clipping."""

    loss: LossConfig
    micro_batch_size: int = 8
    max_grad_norm: float = 1.0
    max_tokens: int = 1  # Dr. GRPO's constant normaliser
    pad_id: int = 0
    device: str = "cpu"
    autocast: Autocast = nullcontext


def accumulate_gradients(
    model: torch.nn.Module,
    samples: Sequence[Sample],
    settings: UpdateSettings,
    reference: Reference | None = None,
) -> dict[str, float]:
    """Back-propagate the loss of `samples` micro-batch by micro-batch (gradients add up in
    `.grad`); returns the batch's loss parts."""
    loss = settings.loss
    totals = BatchTotals(
        len(samples), max(1, sum(s.num_loss_tokens for s in samples)), max(1, settings.max_tokens)
    )
    stats = {"loss/total": 0.0, "loss/policy": 0.0, "loss/kl": 0.0, "loss/clip_frac": 0.0}
    for batch in micro_batches(samples, settings.micro_batch_size, settings.pad_id):
        batch = batch.to(settings.device)
        with settings.autocast():
            logprobs = token_logprobs(model, batch)  # (B, L-1)
        ref = reference(batch) if reference is not None and loss.beta > 0 else None
        out = policy_loss(
            loss.name,  # type: ignore[arg-type]
            logprobs,
            batch.old_logprobs,
            batch.advantages,
            batch.loss_mask,
            totals,
            epsilon_low=loss.epsilon_low,  # type: ignore[arg-type]
            epsilon_high=loss.epsilon_high,  # type: ignore[arg-type]
            ref_logprobs=ref,
            beta=loss.beta,
        )
        out.loss.backward()
        stats["loss/total"] += float(out.loss.detach())
        stats["loss/policy"] += float(out.policy)
        stats["loss/kl"] += float(out.kl)
        stats["loss/clip_frac"] += out.clipped_tokens / totals.tokens
    return stats


def optimizer_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer, max_grad_norm: float) -> float:
    """Clip the accumulated gradients (if `max_grad_norm` > 0), step, zero them; returns the norm."""
    params = [p for p in model.parameters() if p.grad is not None]
    norm = torch.nn.utils.clip_grad_norm_(params, max_grad_norm if max_grad_norm > 0 else float("inf"))
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return float(norm)


def policy_update(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    samples: Sequence[Sample],
    settings: UpdateSettings,
    reference: Reference | None = None,
) -> dict[str, float]:
    """One optimizer step on `samples` (the whole accumulated batch), or none without signal.

    When every token's advantage is 0 (each group's rewards all equal) the policy gradient is exactly 0,
    and the step is skipped (`update/skipped` = 1): stepping AdamW would still move the weights by
    its momentum and weight decay, and would scale a KL-only gradient, however small, up to a
    full step, though nothing was learned. (TRL steps here.)
    """
    optimizer.zero_grad(set_to_none=True)
    if all(a == 0.0 for s in samples for a in s.advantages):
        return {"update/skipped": 1.0}
    stats = accumulate_gradients(model, samples, settings, reference)
    stats["optim/grad_norm"] = optimizer_step(model, optimizer, settings.max_grad_norm)
    return {**stats, "update/skipped": 0.0}


def sft_update(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    samples: Sequence[Sample],
    settings: UpdateSettings,
) -> dict[str, float]:
    """One supervised step: token-level NLL of the loss-masked tokens over the whole batch."""
    optimizer.zero_grad(set_to_none=True)
    total_tokens = max(1, sum(s.num_loss_tokens for s in samples))
    nll = 0.0
    for batch in micro_batches(samples, settings.micro_batch_size, settings.pad_id):
        batch = batch.to(settings.device)
        with settings.autocast():
            logprobs = token_logprobs(model, batch)
        loss = sft_loss(logprobs, batch.loss_mask, total_tokens)
        loss.backward()
        nll += float(loss.detach())
    return {"loss/sft_nll": nll, "optim/grad_norm": optimizer_step(model, optimizer, settings.max_grad_norm)}


@torch.no_grad()
def fill_old_logprobs(
    model: torch.nn.Module, samples: Sequence[Sample], settings: UpdateSettings, *, force: bool = False
) -> list[Sample]:
    """Samples whose old logprobs are recomputed under `model` (all of them with `force`, else only
    those whose rollout gave none: every loss token's logprob exactly 0.0). Replayed samples keep
    their stored logprobs: they are the older policy's, which the ratio must correct for."""
    out = list(samples)
    todo = [
        i
        for i, s in enumerate(samples)
        if not s.replayed
        and (force or all(lp == 0.0 for lp, m in zip(s.old_logprobs, s.loss_mask, strict=True) if m))
    ]
    for start in range(0, len(todo), settings.micro_batch_size):
        chunk = todo[start : start + settings.micro_batch_size]
        batch = collate([samples[i] for i in chunk], settings.pad_id).to(settings.device)
        with settings.autocast():
            logprobs = token_logprobs(model, batch).float().cpu()  # (B, L-1)
        for row, i in enumerate(chunk):
            n = len(samples[i].input_ids)
            old = [0.0] + [
                lp * m
                for lp, m in zip(logprobs[row, : n - 1].tolist(), samples[i].loss_mask[1:], strict=True)
            ]
            out[i] = replace(samples[i], old_logprobs=old)
    return out
