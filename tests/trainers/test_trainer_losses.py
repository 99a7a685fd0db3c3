"""Each loss against an independent NumPy implementation of its paper's formula, with one
advantage per sequence (B,) or per token (B, T), and the gradient invariants every
policy-gradient loss must keep."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from gfcr.errors import ConfigError
from gfcr.filter import group_advantages
from gfcr.trainers.losses import LOSSES, BatchTotals, policy_loss, reduce_tokens

torch.set_num_threads(1)
EPS = {"grpo": (0.2, 0.2), "dr_grpo": (0.2, 0.2), "dapo": (0.2, 0.28), "gspo": (0.05, 0.08)}


def reference_loss(name, logp, old, adv, mask, max_tokens, ref=None, beta=0.0, eps=(0.2, 0.2)):
    """The papers' objectives, written sequence by sequence with plain NumPy loops; `adv` is one
    advantage per sequence (B,) or per token (B, T)."""
    low, high = 1 - eps[0], 1 + eps[1]
    num_seq, total_tokens = logp.shape[0], mask.sum()
    policy, kl = 0.0, 0.0
    for i in range(num_seq):
        tokens = np.flatnonzero(mask[i])
        n = len(tokens)
        if name == "gspo":  # s_i = (π/π_old)^(1/|y|), clipped per sequence (GSPO eq. 7)
            s = np.exp(np.mean(logp[i, tokens] - old[i, tokens])) if n else 1.0
            a = adv[i, tokens].mean() if adv.ndim == 2 else adv[i]  # the sequence's advantage
            policy -= min(s * a, np.clip(s, low, high) * a) / num_seq
        else:
            terms = []
            for t in tokens:
                r = np.exp(logp[i, t] - old[i, t])
                a = adv[i, t] if adv.ndim == 2 else adv[i]
                terms.append(min(r * a, np.clip(r, low, high) * a))
            terms = np.array(terms)
            if name == "grpo":  # 1/G Σ_i 1/|o_i| Σ_t
                policy -= terms.sum() / max(n, 1) / num_seq
            elif name == "dr_grpo":  # 1/(G·L_max) Σ_i Σ_t
                policy -= terms.sum() / (num_seq * max_tokens)
            else:  # dapo: 1/Σ|o_i| Σ_i Σ_t
                policy -= terms.sum() / total_tokens
        if ref is not None:
            d = ref[i, tokens] - logp[i, tokens]
            k3 = np.exp(d) - d - 1
            if name in ("grpo", "gspo"):
                kl += k3.sum() / max(n, 1) / num_seq
            elif name == "dr_grpo":
                kl += k3.sum() / (num_seq * max_tokens)
            else:
                kl += k3.sum() / total_tokens
    return policy + beta * kl, policy, kl


def random_batch(seed, batch=6, length=9, spread=0.3, per_token=False):
    rng = np.random.default_rng(seed)
    logp = -rng.uniform(0.1, 3.0, (batch, length))
    old = logp + rng.normal(0, spread, (batch, length))
    ref = logp + rng.normal(0, spread, (batch, length))
    mask = (rng.uniform(size=(batch, length)) < 0.7).astype(np.float64)
    mask[:, 0] = 1  # every sequence has a loss token
    adv = rng.normal(0, 1, (batch, length) if per_token else batch)
    return logp, old, ref, mask, adv


def torch_loss(name, logp, old, adv, mask, ref=None, beta=0.0, max_tokens=16, totals=None, eps=None):
    eps = eps or EPS[name]
    totals = totals or BatchTotals(logp.shape[0], int(mask.sum()), max_tokens)
    t = lambda a: torch.tensor(a, dtype=torch.float64)  # noqa: E731
    logp_t = t(logp).requires_grad_(True)
    out = policy_loss(
        name,
        logp_t,
        t(old),
        t(adv),
        t(mask),
        totals,
        epsilon_low=eps[0],
        epsilon_high=eps[1],
        ref_logprobs=None if ref is None else t(ref),
        beta=beta,
    )
    out.loss.backward()
    return out, logp_t.grad.numpy()


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("beta", [0.0, 0.1])
@pytest.mark.parametrize("per_token", [False, True])
def test_loss_matches_numpy_reference(name, seed, beta, per_token):
    logp, old, ref, mask, adv = random_batch(seed, per_token=per_token)
    out, _ = torch_loss(name, logp, old, adv, mask, ref=ref, beta=beta)
    expected, policy, kl = reference_loss(name, logp, old, adv, mask, 16, ref=ref, beta=beta, eps=EPS[name])
    assert float(out.loss.detach()) == pytest.approx(expected, rel=1e-9, abs=1e-12)
    assert float(out.policy) == pytest.approx(policy, rel=1e-9, abs=1e-12)
    if beta:
        assert float(out.kl) == pytest.approx(kl, rel=1e-9)


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("per_token", [False, True])
def test_clipping_is_active_in_the_random_batches(name, per_token):
    """The reference comparison above is only meaningful if the clip actually binds sometimes."""
    logp, old, _, mask, adv = random_batch(0, spread=1.0, per_token=per_token)
    out, _ = torch_loss(name, logp, old, adv, mask)
    assert out.clipped_tokens > 0


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("beta", [0.0, 0.1])
def test_a_sequence_advantage_broadcast_to_its_tokens_gives_the_same_loss_and_gradient(name, beta):
    logp, old, ref, mask, adv = random_batch(5, spread=1.0)
    out, grad = torch_loss(name, logp, old, adv, mask, ref=ref, beta=beta)
    wide, wide_grad = torch_loss(
        name, logp, old, np.repeat(adv[:, None], 9, axis=1), mask, ref=ref, beta=beta
    )
    if name == "gspo":  # its masked mean of n equal advantages may differ from them in the last bit
        assert float(wide.loss.detach()) == pytest.approx(float(out.loss.detach()), rel=1e-14)
        np.testing.assert_allclose(wide_grad, grad, rtol=1e-14, atol=1e-16)
    else:
        assert float(wide.loss.detach()) == float(out.loss.detach())
        np.testing.assert_array_equal(wide_grad, grad)
    assert wide.clipped_tokens == out.clipped_tokens > 0


def test_advantages_of_another_shape_are_an_error_that_names_both():
    logp, mask = torch.zeros(2, 3), torch.ones(2, 3)
    for bad in (torch.zeros(3), torch.zeros(2, 4), torch.zeros(2, 3, 1)):
        with pytest.raises(ConfigError, match=r"advantages \(.*\) must be \(B, T\) like logprobs \(2, 3\)"):
            policy_loss("grpo", logp, logp, bad, mask, BatchTotals(2, 6))


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("log_ratio", [0.5, -0.5])
def test_clip_frac_counts_only_tokens_where_the_clip_binds(name, log_ratio):
    """Regression: tokens out of the clip band were counted whatever the advantage's sign. As TRL
    counts it, the clip binds only above 1 + ε_high with A > 0 and below 1 − ε_low with A < 0."""
    logp = np.full((2, 3), -1.0)
    old = logp - log_ratio  # every ratio is e^±0.5, out of every loss's band
    mask = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
    out, _ = torch_loss(name, logp, old, np.array([1.0, -1.0]), mask)
    assert out.clipped_tokens == (2 if log_ratio > 0 else 3)  # sequence 0's tokens, or sequence 1's


@pytest.mark.parametrize("name", LOSSES)
def test_zero_variance_group_gives_zero_gradient(name):
    logp, old, ref, mask, _ = random_batch(1)
    adv = group_advantages([1.0] * logp.shape[0], "grpo")  # every sample solved: no signal
    _, grad = torch_loss(name, logp, old, adv, mask)
    assert np.all(grad == 0.0)


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("beta", [0.0, 0.1])
def test_masked_tokens_get_zero_gradient_and_do_not_change_the_loss(name, beta):
    logp, old, ref, mask, adv = random_batch(2)
    out, grad = torch_loss(name, logp, old, adv, mask, ref=ref, beta=beta)
    assert np.all(grad[mask == 0] == 0.0)
    assert np.any(grad[mask == 1] != 0.0)
    garbage = np.where(mask == 0, -50.0, logp)  # whatever sits under the mask is ignored
    again, _ = torch_loss(name, garbage, np.where(mask == 0, 7.0, old), adv, mask, ref=ref, beta=beta)
    assert float(again.loss.detach()) == pytest.approx(float(out.loss.detach()), rel=1e-12)


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("per_token", [False, True])
def test_at_ratio_one_the_gradient_is_minus_advantage_times_grad_logprob(name, per_token):
    """On-policy (π = π_old) every surrogate's gradient is the REINFORCE one, −A·∇log π, times the
    loss's token weight (GSPO: A is the sequence's, the masked mean of its tokens')."""
    logp, _, _, mask, adv = random_batch(3, per_token=per_token)
    _, grad = torch_loss(name, logp, logp.copy(), adv, mask, max_tokens=16)
    lengths = mask.sum(1, keepdims=True)
    num_seq = logp.shape[0]
    weight = {
        "grpo": mask / lengths / num_seq,
        "gspo": mask / lengths / num_seq,
        "dr_grpo": mask / (num_seq * 16),
        "dapo": mask / mask.sum(),
    }[name]
    a = adv if per_token else adv[:, None]
    if name == "gspo" and per_token:
        a = (adv * mask).sum(1, keepdims=True) / lengths
    np.testing.assert_allclose(grad, -a * weight, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("per_token", [False, True])
def test_split_into_micro_batches_sums_to_the_whole_batch(name, per_token):
    """Losses and gradients of micro-batches, with the whole batch's totals, add up to the batch's."""
    logp, old, ref, mask, adv = random_batch(4, batch=8, per_token=per_token)
    totals = BatchTotals(8, int(mask.sum()), 16)
    whole, whole_grad = torch_loss(name, logp, old, adv, mask, ref=ref, beta=0.1, totals=totals)
    parts, grads = 0.0, []
    for rows in (slice(0, 3), slice(3, 4), slice(4, 8)):
        out, grad = torch_loss(
            name, logp[rows], old[rows], adv[rows], mask[rows], ref=ref[rows], beta=0.1, totals=totals
        )
        parts += float(out.loss.detach())
        grads.append(grad)
    assert parts == pytest.approx(float(whole.loss.detach()), rel=1e-12)
    np.testing.assert_allclose(np.concatenate(grads), whole_grad, rtol=1e-12, atol=1e-15)


def test_dapo_weighs_every_token_equally_and_grpo_every_sequence():
    mask = torch.tensor([[1.0, 1.0, 1.0, 1.0], [1.0, 0.0, 0.0, 0.0]])
    ones = torch.ones(2, 4)
    totals = BatchTotals(2, 5)
    assert float(reduce_tokens("dapo", ones, mask, totals)) == pytest.approx(1.0)
    values = torch.tensor([[1.0, 1.0, 1.0, 1.0], [3.0, 0.0, 0.0, 0.0]])
    assert float(reduce_tokens("grpo", values, mask, totals)) == pytest.approx((1.0 + 3.0) / 2)
    assert float(reduce_tokens("dapo", values, mask, totals)) == pytest.approx(7.0 / 5)


def test_unknown_loss_names_the_known_ones():
    with pytest.raises(KeyError, match="did you mean 'dapo'"):
        policy_loss(
            "dapo2", torch.zeros(1, 1), torch.zeros(1, 1), torch.zeros(1), torch.ones(1, 1), BatchTotals(1, 1)
        )


@pytest.mark.parametrize("name", LOSSES)
def test_importance_weights_scale_each_sequences_surrogate_and_leave_the_kl_alone(name):
    """Truncated importance weights (one value per sequence here, as GSPO's are): the weighted
    policy term is the weights' sum of each sequence's own term, with the whole batch's totals;
    weights of 1 give the unweighted loss bit for bit; the KL term is never weighted."""
    logp, old, ref, mask, adv = random_batch(7)
    totals = BatchTotals(logp.shape[0], int(mask.sum()), 16)
    t = lambda a: torch.tensor(a, dtype=torch.float64)  # noqa: E731
    eps = dict(zip(("epsilon_low", "epsilon_high"), EPS[name], strict=True))

    def loss(rows, weights=None):
        w = None if weights is None else t(weights)[:, None].expand(len(rows), logp.shape[1])
        return policy_loss(
            name, t(logp[rows]), t(old[rows]), t(adv[rows]), t(mask[rows]), totals,
            ref_logprobs=t(ref[rows]), beta=0.1, is_weights=w, **eps,
        )  # fmt: skip

    every = list(range(logp.shape[0]))
    plain, ones = loss(every), loss(every, np.ones(len(every)))
    assert torch.equal(plain.loss, ones.loss)
    weights = np.linspace(0.5, 2.0, len(every))
    weighted = loss(every, weights)
    by_row = sum(w * float(loss([i]).policy) for i, w in zip(every, weights, strict=True))
    assert float(weighted.policy) == pytest.approx(by_row, rel=1e-9)
    assert float(weighted.kl) == pytest.approx(float(plain.kl), rel=1e-12)
