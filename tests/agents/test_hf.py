"""The `hf:` backend on the tiny model: batched generation, n samples, limits, stop strings, logprobs."""

from __future__ import annotations

from dataclasses import replace

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


def test_a_seeded_sample_does_not_depend_on_what_shares_its_batch(hf_policy, tiny_model):
    """The runner batches whatever is waiting, which varies with load: a seeded sample must come out
    the same alone, beside other requests, and in batches cut differently."""
    from gfcr.agents.policies.hf import HFPolicy

    mine = ask("What is 2+2?", max_tokens=12, temperature=1.0, seed=5)
    others = [ask(f"Question {i}?", max_tokens=12, temperature=1.0, seed=100 + i) for i in range(5)]
    (alone,) = hf_policy.generate([mine])
    beside = hf_policy.generate([*others[:2], mine, *others[2:]])[2]
    cut = HFPolicy(tiny_model, max_batch_size=2).generate([*others, mine])[-1]
    assert alone.completion_ids == beside.completion_ids == cut.completion_ids
    twins = hf_policy.generate([ask("What is 2+2?", max_tokens=12, temperature=1.0, top_p=0.9, n=4, seed=5)])
    assert len({c.completion_ids for c in twins}) > 1  # the n samples of one request differ


def test_seeded_sampling_draws_from_the_models_distribution(hf_policy):
    """Over many seeds, the first token's frequencies match the model's probabilities (temperature 1):
    the per-row sampler is an honest sampler, not a reproducible bias."""
    import math
    from collections import Counter

    requests = [ask("What is 2+2?", max_tokens=1, temperature=1.0, seed=s) for s in range(1500)]
    completions = hf_policy.generate(requests)
    counts = Counter(c.completion_ids[0] for c in completions)
    probability = {c.completion_ids[0]: math.exp(c.logprobs[0]) for c in completions}
    for token, p in sorted(probability.items(), key=lambda kv: -kv[1])[:3]:
        spread = math.sqrt(p * (1 - p) / len(requests))
        assert abs(counts[token] / len(requests) - p) < 5 * spread + 1e-3, (token, p, counts[token])


def test_episodes_that_share_a_seed_draw_differently(hf_policy):
    """Sample j of every task in a group has seed `seed + j`: on its near-uniform tiny model a policy
    seeded by that alone wrote the same text for every task."""
    from runner_envs import EchoEnv  # noqa: F401  (registers test/Echo-v0)

    from gfcr.agents import Runner, RunnerConfig
    from gfcr.agents.runner.specs import EpisodeSpec, env_config
    from gfcr.generate import expand_groups

    tasks = [EpisodeSpec(env_config("test/Echo-v0"), f"turns-{n}") for n in (1, 2, 3, 4)]
    config = RunnerConfig(concurrency=8, sampling=SamplingParams(max_tokens=12, temperature=1.0))
    run = Runner(hf_policy, config).run(expand_groups(tasks, 2, seed=0))
    first_actions = {(t.task_id, t.id): t.steps[0].action for t in run.trajectories}
    assert len(set(first_actions.values())) == len(first_actions) == 8, first_actions
    again = Runner(hf_policy, config).run(expand_groups(tasks, 2, seed=0))
    assert {(t.task_id, t.id): t.steps[0].action for t in again.trajectories} == first_actions


def test_rows_that_share_a_prompt_prefill_it_once_and_generate_as_they_would_alone(hf_policy):
    """A group's samples of one prompt and a tree's branches of one parent at one token (its prompt
    ids end with the forced prefix) share a prefill: one forward pass over the distinct prompts,
    then each row decodes from its copy of the cache, to the same ids, logprobs and entropies."""
    import torch

    messages = (Message("user", "Branch here."),)
    branch = (*hf_policy.encode_prompt(messages, ()), 300, 301)  # prompt + a parent's first tokens
    greedy = {"max_tokens": 10, "temperature": 0.0}
    child = Request(messages, prompt_ids=branch, sampling=SamplingParams(**greedy))
    requests = [ask("What is 2+2?", n=3, **greedy), ask("Hi", **greedy), child, child]
    seen: list[tuple[int, ...]] = []  # (rows, tokens) of each forward pass's input
    hook = hf_policy.model.get_input_embeddings().register_forward_hook(
        lambda module, inputs, output: seen.append(tuple(inputs[0].shape))
    )
    try:
        together = hf_policy.generate(requests)
        width = max(len(c.prompt_ids) for c in together)
        assert seen[0] == (3, width - 1) and seen[1] == (6, 1)  # 3 distinct prompts of 6 rows
        alone = [hf_policy.generate([replace(r, sampling=SamplingParams(**greedy))])[0] for r in requests]
    finally:
        hook.remove()
    alone = [alone[0]] * 3 + alone[1:]
    for shared, own in zip(together, alone, strict=True):
        assert (shared.prompt_ids, shared.completion_ids) == (own.prompt_ids, own.completion_ids)
        assert shared.finish_reason == own.finish_reason
        assert torch.allclose(torch.tensor(shared.logprobs), torch.tensor(own.logprobs), atol=1e-5)
        assert torch.allclose(torch.tensor(shared.entropies), torch.tensor(own.entropies), atol=1e-5)


def test_seeded_samples_of_one_prompt_draw_the_same_with_a_shared_prefill(hf_policy):
    """Six seeded samples of one prompt in one batch (one prefill) draw what each draws alone."""
    requests = [ask("What is 2+2?", max_tokens=12, temperature=1.0, seed=seed) for seed in range(6)]
    together = hf_policy.generate(requests)
    alone = [hf_policy.generate([request])[0] for request in requests]
    assert [c.completion_ids for c in together] == [c.completion_ids for c in alone]
    assert len({c.completion_ids for c in together}) == 6


def test_a_bf16_checkpoint_loads_in_float32_on_a_cpu(tiny_model, tmp_path):
    """A CPU without bf16 instructions emulates bf16 matmuls (45x slower than float32 on an AVX2
    EPYC): a hub checkpoint stored in bf16 must not make the hf: backend generate in bf16 there."""
    import shutil

    import torch
    from transformers import AutoModelForCausalLM

    from gfcr.agents.policies.hf import HFPolicy

    stored = shutil.copytree(tiny_model, tmp_path / "bf16")
    AutoModelForCausalLM.from_pretrained(stored, dtype=torch.bfloat16).save_pretrained(stored)
    assert AutoModelForCausalLM.from_pretrained(stored, dtype="auto").dtype == torch.bfloat16
    policy = HFPolicy(stored, device="cpu")
    assert {p.dtype for p in policy.model.parameters()} == {torch.float32}
    (completion,) = policy.generate([ask("What is 2+2?", max_tokens=4, seed=0)])
    assert len(completion.completion_ids) <= 4
