"""Token entropy: of the distribution each sampled token was drawn from, exactly or over the top-k.

`hf:` computes it exactly from the logits (`gfcr.agents.policies.hf`). Engines that return only
the top-k logprobs of each position (vLLM, OpenAI-compatible servers) give an estimate: the
entropy of the top-k probabilities renormalised to sum to one (`topk_entropy`). It ignores the
tail beyond the k tokens, so it is at most ln k and reads low on a flat distribution; at
k = 20 on a peaked one (the sampled token's probability near 1), it is close to exact. It is
comparable across steps of one run, which is what entropy collapse needs, not across backends.

`mean_token_entropy` averages over the policy's own tokens (loss mask 1) of a batch: the
pipeline's `generate/entropy_mean`, and what `gfcr diagnose` watches for entropy collapse.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from gfcr.core import Trajectory


def topk_entropy(logprobs: Iterable[float]) -> float:
    """Entropy (nats) of the top-k distribution `logprobs` renormalised (non-finite ones dropped).

    >>> round(topk_entropy([math.log(0.5), math.log(0.25)]), 4)  # renormalised: (2/3, 1/3)
    0.6365
    >>> topk_entropy([0.0]), topk_entropy([])
    (0.0, 0.0)
    """
    lp = [x for x in logprobs if math.isfinite(x)]
    if not lp:
        return 0.0
    # Plain floats: for k ~ 20 values a call, numpy's per-call overhead costs more than it saves.
    top = max(lp)
    weights = [math.exp(x - top) for x in lp]  # shifted by the largest: no underflow
    z = sum(weights)
    # H = -Σ p log p with p = w / z and log p = (x - top) - log z
    return max(0.0, math.log(z) - sum(w * (x - top) for w, x in zip(weights, lp, strict=True)) / z)


def mean_token_entropy(trajectories: Sequence[Trajectory]) -> float | None:
    """Mean entropy over the sampled tokens of every trajectory that records entropies; None if none does.

    >>> from gfcr.core.trajectory import TokenData
    >>> t = Trajectory("e", "t", "?", tokens=TokenData([1]))
    >>> t.tokens.append([5, 6], sampled=True, entropies=[2.0, 0.5])
    >>> t.tokens.append([9], sampled=False)  # an observation token: not the policy's
    >>> mean_token_entropy([t])
    1.25
    """
    values = [
        entropy
        for trajectory in trajectories
        if trajectory.tokens is not None and trajectory.tokens.entropies is not None
        for entropy, sampled in zip(trajectory.tokens.entropies, trajectory.tokens.loss_mask, strict=True)
        if sampled
    ]
    return math.fsum(values) / len(values) if values else None
