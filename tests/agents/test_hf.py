"""The `hf:` backend on the tiny model: batched generation, n samples, limits, stop strings, logprobs."""

from __future__ import annotations

import pytest

from gfcr.agents import Request, SamplingParams, make_policy
from gfcr.core import Message
from gfcr.errors import PolicyError


def ask(text: str, **sampling) -> Request:
    return Request((Message("user", text),), sampling=SamplingParams(**sampling))


def test_batched_generation_gives_n_samples_per_request_with_the_models_logprobs(hf_policy):
    import torch

    requests = [
        ask("What is 2+2?", max_tokens=12, n=2, seed=1),
        ask("A longer question " * 5, max_tokens=7, seed=2),
    ]
    completions = hf_policy.generate(requests)
    assert len(completions) == 3
    assert [len(c.completion_ids) <= m for c, m in zip(completions, [12, 12, 7], strict=True)] == [True] * 3
    for completion in completions:
        assert completion.finish_reason in ("stop", "length")
        assert completion.text == hf_policy.chat.completion_text(completion.completion_ids)
        # teacher-forced forward pass over prompt + completion: the same log-probabilities, unpadded
        ids = torch.tensor([list(completion.prompt_ids) + list(completion.completion_ids)])
        with torch.inference_mode():
            logits = hf_policy.model(ids).logits[0, len(completion.prompt_ids) - 1 : -1]
        expected = torch.log_softmax(logits.float(), -1).gather(1, ids[0, len(completion.prompt_ids) :, None])
        assert torch.allclose(torch.tensor(completion.logprobs), expected.squeeze(1), atol=1e-4)


def test_max_tokens_stop_strings_and_greedy_decoding(hf_policy):
    (long,) = hf_policy.generate([ask("Hi", max_tokens=5, temperature=0.0)])
    (again,) = hf_policy.generate([ask("Hi", max_tokens=5, temperature=0.0)])
    assert long.completion_ids == again.completion_ids  # greedy is deterministic
    stop = hf_policy.chat.decode(long.completion_ids[2:4])
    (stopped,) = hf_policy.generate([ask("Hi", max_tokens=5, temperature=0.0, stop=(stop,))])
    assert stopped.finish_reason == "stop" and stop in stopped.text and len(stopped.completion_ids) <= 4


def test_a_prompt_over_the_context_gives_an_empty_length_completion(hf_policy):
    ids = tuple(range(10, 10 + hf_policy.max_positions))
    (completion,) = hf_policy.generate([Request((Message("user", "x"),), prompt_ids=ids)])
    assert completion.text == "" and completion.finish_reason == "length"


def test_a_missing_model_is_an_error_naming_the_path_and_the_fix(tmp_path):
    pytest.importorskip("transformers")
    with pytest.raises(PolicyError, match="model folder .* does not exist.*gfcr tiny-model"):
        make_policy(f"hf:{tmp_path / 'nowhere'}")


def test_prompts_of_very_different_lengths_are_batched_apart_and_answered_in_order(hf_policy):
    """A long prompt goes in a batch of its own (no padding the short ones to its length)."""
    from gfcr.agents.policies.hf import _chunks, _Row

    rows = [_Row(i, (1,) * n, SamplingParams()) for i, n in enumerate([10, 5000, 12, 11])]
    assert list(_chunks([0, 3, 2, 1], rows, max_rows=64, max_tokens=1000)) == [[0, 3, 2], [1]]
    assert list(_chunks([0, 3, 2], rows, max_rows=2, max_tokens=1000)) == [[0, 3], [2]]

    prompts = ["Hi.", "Tell me everything about " + "numbers and " * 150, "What is 1+1?"]
    requests = [ask(p, max_tokens=4, temperature=0.0, seed=0) for p in prompts]
    together = hf_policy.generate(requests)
    alone = [hf_policy.generate([r])[0] for r in requests]
    assert [c.prompt_ids for c in together] == [c.prompt_ids for c in alone]
    assert [c.completion_ids for c in together] == [c.completion_ids for c in alone]


def test_each_turn_of_a_seeded_episode_samples_afresh(hf_policy):
    """A seeded episode's turns must not share their random draws (they once all used the episode's seed)."""
    from runner_envs import EchoEnv  # noqa: F401  (registers test/Echo-v0)

    from gfcr.agents import Runner, RunnerConfig
    from gfcr.agents.runner.specs import EpisodeSpec, env_config

    spec = EpisodeSpec(env_config("test/Echo-v0"), "turns-8", seed=3)
    config = RunnerConfig(concurrency=1, sampling=SamplingParams(max_tokens=12, temperature=1.0))
    (trajectory,) = Runner(hf_policy, config).run([spec]).trajectories
    actions = [step.action for step in trajectory.steps]
    assert len(actions) == 8 and len(set(actions)) >= 6, actions
