"""The supervised warm start's data: rejection sampling and the token layout of text-only teachers."""

from __future__ import annotations

import gymnasium as gym

from gfcr.agents import OraclePolicy, Runner, RunnerConfig, episodes_for_env
from gfcr.agents.policies.chat import load_chat_encoder
from gfcr.core import Step, Trajectory
from gfcr.envs.tooluse import LOOKUP_CALL
from gfcr.trainers.sft import filter_trajectories, sft_samples


def test_filter_keeps_only_trajectories_at_or_over_the_reward():
    good = Trajectory("e", "a", "", [Step("x", "", 1.0, True, False)])
    bad = Trajectory("e", "b", "", [Step("y", "", 0.0, True, False)])
    failed = Trajectory("e", "c", "", [Step("z", "", 1.0, True, False)], status="failed")
    assert filter_trajectories([good, bad, failed], 1.0) == [good]


def test_text_teacher_trajectories_get_the_runner_token_layout(tiny_model):
    """Decoded, a tokenized oracle episode is the chat template's rendering of the conversation,
    and only the assistant's own turns (with their end-of-turn token) carry loss mask 1."""
    chat = load_chat_encoder(str(tiny_model))
    result = Runner(OraclePolicy(), RunnerConfig(concurrency=2)).run(episodes_for_env("gfcr/ToolUse-v0", 2))
    for trajectory in result.trajectories:
        sample = sft_samples([trajectory], chat)[0]
        tokens = trajectory.tokens
        conversation = trajectory.messages[:-1]  # the final observation is never encoded
        tools = gym.make("gfcr/ToolUse-v0").reset(seed=0)[1]["tools"]
        rendered = chat.tokenizer.apply_chat_template(
            [m.to_openai() for m in conversation], tools=tools, tokenize=False
        )
        assert chat.decode(sample.input_ids) == rendered.removesuffix("\n")
        trained = chat.decode([t for t, m in zip(tokens.completion_ids, tokens.loss_mask, strict=True) if m])
        assert trained == f"{LOOKUP_CALL}<|im_end|>{conversation[-1].content}<|im_end|>"
        assert sum(sample.loss_mask) == sum(tokens.loss_mask) and sample.advantage == 0.0
