"""One optimizer step on a batch of samples: off-policy correction, micro-batches, gradient
accumulation, clipping.

The batch's normalisers (`BatchTotals`) are fixed before the first micro-batch, and every
micro-batch's loss is its share of the batch's loss, so the accumulated gradient does not
depend on how the batch is split (the property DAPO's token-level loss needs).

Before the update, `correct_off_policy` gives every off-policy sample (replayed, or made by an
older policy version) old logprobs recomputed under the current policy, so its ratio is never
taken against a policy that no longer exists; with `tis` its tokens are also weighed against the
behaviour policy that sampled them. Fresh samples keep the rollout's logprobs unless the trainer
recomputes them too (`recompute_old_logprobs`, `tis_fresh`), which measures the generation/training
mismatch between the rollout engine and the trainer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace

import torch

from gfcr.errors import UnknownNameError
from gfcr.trainers.batching import MicroBatch, Pixels, Sample, collate, micro_batches, token_logprobs
from gfcr.trainers.config import LossConfig
from gfcr.trainers.losses import CORRECTIONS, BatchTotals, policy_loss, sft_loss, tis_weights

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
    correction: str = "recompute"  # of replayed samples: recompute | tis ([replay] correction)
    stale_correction: str = "recompute"  # of samples older policy versions made ([async] correction)
    recompute_old_logprobs: bool = False  # fresh samples' π_old from the trainer too
    pixels: Pixels | None = None  # a vision-language model's image tensors (`HFPolicy.pixel_inputs`)

    def __post_init__(self) -> None:
        for correction in (self.correction, self.stale_correction):
            if correction not in CORRECTIONS:
                raise UnknownNameError("off-policy correction", correction, CORRECTIONS)


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
    for batch in micro_batches(samples, settings.micro_batch_size, settings.pad_id, settings.pixels):
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
            is_weights=batch.is_weights,
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
    for batch in micro_batches(samples, settings.micro_batch_size, settings.pad_id, settings.pixels):
        batch = batch.to(settings.device)
        with settings.autocast():
            logprobs = token_logprobs(model, batch)
        loss = sft_loss(logprobs, batch.loss_mask, total_tokens)
        loss.backward()
        nll += float(loss.detach())
    return {"loss/sft_nll": nll, "optim/grad_norm": optimizer_step(model, optimizer, settings.max_grad_norm)}


def off_policy(sample: Sample, current_version: int | None) -> bool:
    """Whether `sample` came from another policy than the current one: replayed, or made by an
    older version (its tokens, and the logprobs it brought, are that policy's)."""
    if sample.replayed or sample.policy_version is None or current_version is None:
        return sample.replayed
    return sample.policy_version < current_version


def missing_logprobs(sample: Sample) -> bool:
    """The rollout gave no logprobs: every loss token's is exactly 0.0 (nothing to measure against)."""
    return all(lp == 0.0 for lp, m in zip(sample.old_logprobs, sample.loss_mask, strict=True) if m)


@torch.no_grad()
def correct_off_policy(
    model: torch.nn.Module,
    samples: Sequence[Sample],
    settings: UpdateSettings,
    *,
    current_version: int | None = None,
) -> tuple[list[Sample], dict[str, float]]:
    """The samples with the old logprobs the ratio π_θ/π_old takes, and the step's log of it.

    - Off-policy samples (`off_policy`: replayed, or with tokens older than `current_version`)
      get π_old recomputed under `model`, the current policy: AR3PO's correction for replayed
      samples, decoupled PPO's proximal policy for stale ones (`recompute`). With `tis` (replayed:
      `settings.correction`; stale: `settings.stale_correction`) each token is also weighed by
      min(π_old/μ, C) against its behaviour policy μ (the logprobs it was sampled with),
      C = `loss.tis_cap`. The shift is logged with `shift_metrics`' statistics (samples,
      ratio_mean of π_old/μ over loss tokens, truncated_share: tokens above C, logprob_abs_diff,
      kl): of replayed samples under `replay/`, of the others' tokens under
      `async/staleness_<k>/` by how many versions older than `current_version` each token is.
    - Fresh samples keep the rollout's logprobs, unless `recompute_old_logprobs` or `loss.tis_fresh`
      has the trainer recompute them (tis_fresh also weighs them, as above) or the rollout gave
      none. Recomputed, their gap to the engine's logprobs is the generation/training mismatch,
      logged under `mismatch/` with the same statistics.

    Every sample keeps its behaviour logprobs (`Sample.behaviour`); GSPO's weight is one per
    sequence (`tis_weights(..., sequence=True)`).
    """
    loss = settings.loss
    stale = [off_policy(s, current_version) for s in samples]
    fresh_too = settings.recompute_old_logprobs or loss.tis_fresh
    todo = [i for i, s in enumerate(samples) if stale[i] or fresh_too or missing_logprobs(s)]
    recomputed = recompute_logprobs(model, [samples[i] for i in todo], settings)
    out = list(samples)
    shifts: dict[str, list[torch.Tensor]] = {}  # metric group -> its loss tokens' π_old/μ
    for i, old in zip(todo, recomputed, strict=True):
        sample, measured = samples[i], not missing_logprobs(samples[i])  # a behaviour policy to weigh against
        corrected = replace(
            sample, old_logprobs=old, behaviour_logprobs=sample.behaviour if measured else None
        )
        if measured:
            mask = torch.tensor(sample.loss_mask, dtype=torch.float32)[None]  # (1, L)
            ratio, weight = tis_weights(
                torch.tensor(old)[None], torch.tensor(sample.behaviour)[None], mask, loss.tis_cap,
                sequence=loss.name == "gspo",
            )  # fmt: skip
            method = settings.correction if sample.replayed else settings.stale_correction
            if method == "tis" if stale[i] else loss.tis_fresh:
                corrected = replace(corrected, is_weights=weight[0].tolist())
            for group, tokens in shift_groups(sample, stale[i], current_version).items():
                shifts.setdefault(group, []).append(ratio[0][tokens])
        out[i] = corrected
    metrics = {
        "replay/samples": float(sum(stale)),
        "async/stale_samples": float(sum(s and not samples[i].replayed for i, s in enumerate(stale))),
    }
    for group, ratios in sorted(shifts.items()):
        metrics |= shift_metrics(group, torch.cat(ratios), loss.tis_cap)
    return out, metrics


def shift_groups(sample: Sample, stale: bool, current_version: int | None) -> dict[str, torch.Tensor]:
    """Which metric group each of `sample`'s loss tokens' shift is logged under (group -> a mask
    over its tokens): `replay` for a replayed sample, `mismatch` for a fresh one, and for a stale
    one `async/staleness_<k>`, k = `current_version` minus the version that sampled the token.

    >>> sample = Sample([1, 2, 3], [0, 1, 1], [0.0] * 3, [0.0] * 3, policy_version=3, versions=[-1, 3, 4])
    >>> {group: tokens.tolist() for group, tokens in shift_groups(sample, True, 5).items()}
    {'async/staleness_2': [False, True, False], 'async/staleness_1': [False, False, True]}
    """
    mask = torch.tensor(sample.loss_mask, dtype=torch.bool)
    if not stale or sample.replayed or current_version is None:
        return {"replay" if sample.replayed else "mismatch": mask}
    oldest = sample.policy_version if sample.policy_version is not None else current_version
    versions = torch.tensor(sample.versions if sample.versions is not None else [oldest] * len(mask))
    levels = (current_version - versions)[mask].unique().tolist()
    return {
        f"async/staleness_{k}": mask & (versions == current_version - k) for k in sorted(levels, reverse=True)
    }


def shift_metrics(group: str, ratio: torch.Tensor, cap: float) -> dict[str, float]:
    """Statistics of the loss tokens' ratios ρ = π_old/μ (1-D): mean, share above `cap`, mean
    |log ρ|, and the k3 estimate of KL(μ‖π_old) from μ's samples, E[ρ − 1 − log ρ].

    >>> shift_metrics("replay", torch.tensor([1.0, 4.0]), cap=2.0)["replay/truncated_share"]
    0.5
    """
    log_ratio = torch.log(ratio)
    return {
        f"{group}/ratio_mean": float(ratio.mean()),
        f"{group}/truncated_share": float((ratio > cap).float().mean()),
        f"{group}/logprob_abs_diff": float(log_ratio.abs().mean()),
        f"{group}/kl": float((ratio - 1.0 - log_ratio).mean()),
    }


@torch.no_grad()
def recompute_logprobs(
    model: torch.nn.Module, samples: Sequence[Sample], settings: UpdateSettings
) -> list[list[float]]:
    """Each sample's token logprobs under `model`, aligned with its `input_ids` (0.0 on the first
    token and wherever the loss mask is 0), micro-batch by micro-batch."""
    out: list[list[float]] = []
    for start in range(0, len(samples), settings.micro_batch_size):
        chunk = samples[start : start + settings.micro_batch_size]
        batch = collate(chunk, settings.pad_id, settings.pixels).to(settings.device)
        with settings.autocast():
            logprobs = token_logprobs(model, batch).float().cpu()  # (B, L-1)
        for row, sample in enumerate(chunk):
            n = len(sample.input_ids)
            shifted = zip(logprobs[row, : n - 1].tolist(), sample.loss_mask[1:], strict=True)
            out.append([0.0] + [lp * m for lp, m in shifted])
    return out
