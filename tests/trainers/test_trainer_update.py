"""Gradient accumulation on a real model: the split into micro-batches does not change the step,
with one advantage per sequence or one per token."""

from __future__ import annotations

import copy
import random
from dataclasses import replace

import pytest
import torch

from gfcr.trainers.batching import Sample, collate, token_logprobs
from gfcr.trainers.config import LossConfig
from gfcr.trainers.update import UpdateSettings, accumulate_gradients, fill_old_logprobs, policy_update


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


def test_fill_old_logprobs_recomputes_missing_ones_and_keeps_replayed(model):
    samples = _samples(3, seed=2)
    missing = replace(samples[0], old_logprobs=[0.0] * len(samples[0].input_ids))
    replayed = replace(samples[1], replayed=True)
    settings = UpdateSettings(LossConfig(), micro_batch_size=2)
    filled = fill_old_logprobs(model, [missing, replayed, samples[2]], settings)
    assert filled[1].old_logprobs == replayed.old_logprobs and filled[2] == samples[2]
    with torch.no_grad():
        expected = token_logprobs(model, collate([missing]))[0]  # (L-1,)
    got = torch.tensor(filled[0].old_logprobs[1:])
    mask = torch.tensor(missing.loss_mask[1:], dtype=torch.bool)
    torch.testing.assert_close(got[mask], expected[mask])
    assert torch.all(got[~mask] == 0.0)


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
