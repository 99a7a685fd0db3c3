"""Token entropies in the token data: exact from hf:'s logits, estimated over the top-k elsewhere."""

from __future__ import annotations

import math

import pytest

from gfcr.agents import Runner, RunnerConfig, SamplingParams
from gfcr.agents.runner.specs import EpisodeSpec, env_config
from gfcr.filter.entropy import mean_token_entropy, topk_entropy


def by_hand(logprobs: list[float]) -> float:
    """The renormalised top-k entropy, written out: p_i = e^{l_i} / Σ e^{l_j}, H = -Σ p_i ln p_i."""
    z = sum(math.exp(x) for x in logprobs)
    return -sum(math.exp(x) / z * math.log(math.exp(x) / z) for x in logprobs)


def test_topk_entropy_is_the_renormalised_entropy():
    top = [math.log(0.6), math.log(0.2), math.log(0.1)]  # 0.1 of the mass lies beyond the top 3
    assert topk_entropy(top) == pytest.approx(by_hand(top), abs=1e-12)
    assert topk_entropy(top) == pytest.approx(
        -(6 * math.log(6 / 9) + 2 * math.log(2 / 9) + math.log(1 / 9)) / 9
    )
    assert topk_entropy([math.log(0.25)] * 4) == pytest.approx(math.log(4))
    # vLLM can report -inf for a token outside the sampler's support: it carries no mass.
    assert topk_entropy([math.log(0.5), math.log(0.5), -math.inf]) == pytest.approx(math.log(2))
    # Far-below-zero logprobs do not underflow to nothing.
    assert topk_entropy([-800.0, -800.0]) == pytest.approx(math.log(2))


def test_openai_top_logprobs_become_entropies():
    """A chat completion as an OpenAI-compatible server (vLLM's) sends it, parsed by the openai client."""
    openai = pytest.importorskip("openai", reason="the openai extra is not installed")
    from gfcr.agents.policies.openai_api import _completion

    tops = [[-0.1, -2.5, -4.0], [-0.7, -0.7]]
    content = [
        {"token": t, "logprob": top[0], "bytes": None, "top_logprobs": [
            {"token": f"{t}{k}", "logprob": lp, "bytes": None} for k, lp in enumerate(top)]}
        for t, top in zip("ab", tops, strict=True)
    ]  # fmt: skip
    response = openai.types.chat.ChatCompletion.model_validate({
        "id": "x", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop", "logprobs": {"content": content},
                     "message": {"role": "assistant", "content": "ab"}}],
    })  # fmt: skip
    completion = _completion(response.choices[0], 3, 2)
    assert completion.logprobs == (-0.1, -0.7)
    assert completion.entropies == pytest.approx([by_hand(top) for top in tops])
    without_top = content[0] | {"top_logprobs": []}
    response.choices[0].logprobs.content[0] = type(response.choices[0].logprobs.content[0]).model_validate(
        without_top
    )
    assert _completion(response.choices[0], 3, 2).entropies is None  # a position without them: none at all


def test_hf_entropies_reach_the_token_data_and_their_mean(hf_policy):
    spec = EpisodeSpec(
        env_config("gfcr/Math-v0", {"dataset": "mmath", "split": "AIME2024"}), "mmath/AIME2024/0", seed=3
    )
    (trajectory,) = Runner(hf_policy, RunnerConfig(sampling=SamplingParams(max_tokens=12))).run([spec]).trajectories
    tokens = trajectory.tokens
    assert tokens is not None and tokens.entropies is not None
    assert len(tokens.entropies) == len(tokens.completion_ids) and all(h >= 0 for h in tokens.entropies)
    sampled = [h for h, m in zip(tokens.entropies, tokens.loss_mask, strict=True) if m]
    assert mean_token_entropy([trajectory]) == pytest.approx(sum(sampled) / len(sampled))
    tokens.entropies = None
    assert mean_token_entropy([trajectory]) is None
