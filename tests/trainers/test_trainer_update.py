"""Gradient accumulation on a real model: the split into micro-batches does not change the step,
with one advantage per sequence or one per token."""

from __future__ import annotations

import copy
import itertools
import random
from dataclasses import replace

import pytest
import torch

from gfcr.trainers.batching import Sample, SelectedLogprob, collate, first_loss_position, token_logprobs
from gfcr.trainers.config import LossConfig
from gfcr.trainers.update import UpdateSettings, accumulate_gradients, correct_off_policy, policy_update


@pytest.fixture(scope="module")
def model(tiny_model):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(str(tiny_model)).eval()


def _samples(n: int = 7, seed: int = 0, per_token: bool = False) -> list[Sample]:
    """Random multi-turn-shaped samples: prompt (mask 0), turns (mask 1) and observations (mask 0);
    an advantage per sequence (broadcast to its sampled tokens) or a different one per token."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        prompt = [rng.randrange(300) for _ in range(rng.randint(3, 8))]
        ids, mask = list(prompt), [0] * len(prompt)
        for turn in range(rng.randint(1, 3)):
            if turn:
                observation = rng.randint(1, 4)
                ids += [rng.randrange(300) for _ in range(observation)]
                mask += [0] * observation
            sampled = rng.randint(1, 6)
            ids += [rng.randrange(300) for _ in range(sampled)]
            mask += [1] * sampled
        logprobs = [-rng.uniform(3.0, 8.0) * m for m in mask]
        advantage = rng.gauss(0, 1)
        advantages = [(rng.gauss(0, 1) if per_token else advantage) * m for m in mask]
        out.append(Sample(ids, mask, logprobs, advantages))
    return out


def _gradients(model, samples, settings) -> tuple[dict[str, float], dict[str, torch.Tensor]]:
    model.zero_grad(set_to_none=True)
    stats = accumulate_gradients(model, samples, settings)
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)
    return stats, grads


@pytest.mark.parametrize("name", ["dapo", "grpo", "dr_grpo", "gspo"])
@pytest.mark.parametrize("per_token", [False, True])
def test_micro_batch_split_does_not_change_loss_or_gradient(model, name, per_token):
    samples = _samples(per_token=per_token)
    loss = LossConfig(name=name, epsilon_low=0.2, epsilon_high=0.28)
    whole_stats, whole = _gradients(
        model, samples, UpdateSettings(loss, micro_batch_size=len(samples), max_tokens=16)
    )
    for size in (1, 3):
        stats, grads = _gradients(model, samples, UpdateSettings(loss, micro_batch_size=size, max_tokens=16))
        assert stats["loss/total"] == pytest.approx(whole_stats["loss/total"], rel=1e-5, abs=1e-7)
        for n in whole:
            torch.testing.assert_close(grads[n], whole[n], rtol=1e-4, atol=1e-7)


def test_observation_and_prompt_tokens_do_not_reach_the_gradient(model):
    """Changing the old logprobs under mask 0 (prompt, observations) leaves the gradient as it was."""
    samples = _samples(4, seed=1)
    settings = UpdateSettings(LossConfig(name="dapo"), micro_batch_size=2, max_tokens=16)
    _, before = _gradients(model, samples, settings)
    shifted = [
        Sample(
            s.input_ids,
            s.loss_mask,
            [lp if m else -99.0 for lp, m in zip(s.old_logprobs, s.loss_mask, strict=True)],
            s.advantages,
        )
        for s in samples
    ]
    _, after = _gradients(model, shifted, settings)
    for n in before:
        torch.testing.assert_close(after[n], before[n])


def _current_logprobs(model, sample: Sample) -> torch.Tensor:
    """The model's logprob of each token of `sample` (L-1,), as the loss's forward pass gives it."""
    with torch.no_grad():
        return token_logprobs(model, collate([sample]))[0]


def test_off_policy_samples_get_recomputed_old_logprobs_never_their_stale_ones(model):
    """Replaces the test that pinned a replayed sample's stale logprobs: a replayed sample, and one
    an older policy version made, get old logprobs recomputed under the current model, and keep the
    stale ones as their behaviour logprobs; a fresh sample keeps the rollout's; a sample whose
    rollout gave none is recomputed."""
    samples = _samples(4, seed=2)
    missing = replace(samples[0], old_logprobs=[0.0] * len(samples[0].input_ids), policy_version=5)
    replayed = replace(samples[1], replayed=True, policy_version=1)
    older = replace(samples[2], policy_version=3)  # e.g. carried over from an earlier step
    fresh = replace(samples[3], policy_version=5)
    settings = UpdateSettings(LossConfig(), micro_batch_size=2)
    out, metrics = correct_off_policy(model, [missing, replayed, older, fresh], settings, current_version=5)
    assert out[3] == fresh and metrics["replay/samples"] == 2.0
    for before, after in zip((missing, replayed, older), out[:3], strict=True):
        mask = torch.tensor(before.loss_mask[1:], dtype=torch.bool)
        got = torch.tensor(after.old_logprobs[1:])
        torch.testing.assert_close(got[mask], _current_logprobs(model, before)[mask])
        assert torch.all(got[~mask] == 0.0) and after.is_weights is None  # recompute: no weights
    assert out[1].behaviour == replayed.old_logprobs != out[1].old_logprobs  # the stale ones, kept apart
    assert out[0].behaviour_logprobs is None  # nothing to weigh against


def _policy_gradient(model, sample: Sample, weights: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
    """By hand: at ratio 1 (π_old = π_θ) DAPO's loss has the gradient of −Σ_t w_t A_t log π_θ(t) / T
    over the loss tokens (w = 1 without importance weights)."""
    model.zero_grad(set_to_none=True)
    batch = collate([sample])
    logprobs = token_logprobs(model, batch)[0]  # (L-1,)
    w = torch.ones_like(logprobs) if weights is None else weights
    (-(w * batch.advantages[0] * batch.loss_mask[0] * logprobs).sum() / batch.loss_mask.sum()).backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)
    return grads


def test_a_replayed_samples_ratio_is_taken_against_recomputed_logprobs(model):
    """Gradient check: a replayed sample's stored logprobs are far below the current policy's (its
    ratio e^3 would sit past the clip, so its tokens would get no gradient); corrected, its ratio is
    1 at the update's start and its gradient is exactly the on-policy one, by hand."""
    (sample,) = _samples(1, seed=4)
    sample = replace(
        sample,
        advantages=[
            abs(a) + 0.5 if m else 0.0 for a, m in zip(sample.advantages, sample.loss_mask, strict=True)
        ],
    )
    current = [0.0, *_current_logprobs(model, sample).tolist()]
    stale = replace(
        sample,
        old_logprobs=[(lp - 3.0) * m for lp, m in zip(current, sample.loss_mask, strict=True)],
        replayed=True,
    )
    settings = UpdateSettings(LossConfig(name="dapo"), micro_batch_size=1, max_tokens=16)
    (corrected,), _ = correct_off_policy(model, [stale], settings)
    _, got = _gradients(model, [corrected], settings)
    expected = _policy_gradient(model, sample)
    for n in expected:
        torch.testing.assert_close(got[n], expected[n], rtol=1e-4, atol=1e-7)
    stats, stale_grads = _gradients(model, [stale], settings)  # what the stale ratio did
    assert stats["loss/clip_frac"] == 1.0 and all(torch.all(g == 0) for g in stale_grads.values())


def test_tis_weighs_each_token_by_its_truncated_ratio_to_the_behaviour_policy(model):
    """correction = "tis": π_old is recomputed and each token's surrogate is weighed by
    min(π_old/μ, C) against the logprobs it was sampled with; the gradient matches the weighted
    one by hand, and the ratio's mean and truncation rate are logged under replay/."""
    sample = max(_samples(7, seed=5), key=lambda s: s.num_loss_tokens)
    current = [0.0, *_current_logprobs(model, sample).tolist()]
    # log(π_old/μ) per loss token: 1.0 on odd ones (ratio e, truncated to C = 2), 0.25 on even ones
    steps = itertools.accumulate(sample.loss_mask)
    gaps = [(1.0 if k % 2 else 0.25) * m for k, m in zip(steps, sample.loss_mask, strict=True)]
    behaviour = [(lp - g) * m for lp, g, m in zip(current, gaps, sample.loss_mask, strict=True)]
    replayed = replace(sample, old_logprobs=behaviour, replayed=True)
    cap = 2.0
    settings = UpdateSettings(LossConfig(name="dapo", tis_cap=cap), micro_batch_size=1, correction="tis")
    (corrected,), metrics = correct_off_policy(model, [replayed], settings)
    ratios = torch.tensor([g for g, m in zip(gaps, sample.loss_mask, strict=True) if m]).exp()
    assert metrics["replay/ratio_mean"] == pytest.approx(float(ratios.mean()), rel=1e-4)
    assert metrics["replay/truncated_share"] == pytest.approx(float((ratios > cap).float().mean()))
    assert 0 < metrics["replay/truncated_share"] < 1
    weights = torch.tensor(gaps[1:]).exp().clamp(max=cap)  # (L-1,), aligned like the loss mask
    _, got = _gradients(model, [corrected], settings)
    expected = _policy_gradient(model, sample, weights)
    for n in expected:
        torch.testing.assert_close(got[n], expected[n], rtol=1e-4, atol=1e-7)


def test_a_batch_without_signal_takes_no_optimizer_step(model):
    """Regression: with every advantage 0, AdamW still moved the weights (momentum from earlier
    steps, and a KL term alone scaled up to a full step). The step is skipped, and says so."""
    model = copy.deepcopy(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    settings = UpdateSettings(LossConfig(name="grpo", beta=0.1), micro_batch_size=4, max_tokens=16)
    far_reference = lambda batch: torch.full(batch.loss_mask.shape, -3.0)  # noqa: E731  # KL > 0
    samples = _samples(4, seed=3)
    assert policy_update(model, optimizer, samples, settings, far_reference)["update/skipped"] == 0.0
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    no_signal = [replace(s, advantages=[0.0] * len(s.input_ids)) for s in samples]
    stats = policy_update(model, optimizer, no_signal, settings, far_reference)
    assert all(torch.equal(p, before[n]) for n, p in model.named_parameters())
    assert stats["update/skipped"] == 1.0


@pytest.mark.parametrize("positions_per_chunk", [1, 3, 1000])
def test_token_logprobs_and_their_gradients_equal_the_full_log_softmax(
    model, monkeypatch, positions_per_chunk
):
    """The chunked logprob (one full-vocabulary tensor kept, of the positions from the first loss
    token on) against autograd's log-softmax and gather over every position: the same values and
    the same parameter gradients, however the positions are chunked; 0.0 before the first."""
    batch = collate(_samples(5, seed=3))
    weights = torch.randn(batch.loss_mask.shape, generator=torch.Generator().manual_seed(0))

    def gradients(logprobs_of) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        model.zero_grad(set_to_none=True)
        logprobs = logprobs_of()
        (weights * batch.loss_mask * logprobs).sum().backward()
        grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
        model.zero_grad(set_to_none=True)
        return logprobs.detach(), grads

    def by_autograd() -> torch.Tensor:
        logits = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits[:, :-1]
        return torch.log_softmax(logits.float(), dim=-1).gather(-1, batch.input_ids[:, 1:, None]).squeeze(-1)

    vocab = model.config.vocab_size
    monkeypatch.setattr(SelectedLogprob, "CHUNK_ELEMENTS", vocab * positions_per_chunk)
    chunked, chunked_grads = gradients(lambda: token_logprobs(model, batch))
    full, full_grads = gradients(by_autograd)
    first = first_loss_position(batch.loss_mask)
    assert first > 0 and torch.all(chunked[:, :first] == 0.0)  # the prompt predicts no loss token
    torch.testing.assert_close(chunked[:, first:], full[:, first:])
    assert chunked_grads.keys() == full_grads.keys() and chunked_grads
    for name, grad in full_grads.items():
        torch.testing.assert_close(chunked_grads[name], grad)
