"""Supervised warm start on filtered trajectories (rejection-sampling fine-tuning, RFT).

A teacher — any policy spec (`scripted:oracle`, a stronger model) or the model itself — runs
episodes; Filter keeps those with at least `min_reward` (Yuan et al. 2023, "Scaling Relationship
on Learning Mathematical Reasoning with LLMs": RFT); the model is then trained on their
policy tokens with the negative log-likelihood. Observation tokens are never trained on.

Trajectories of a token policy are used as they are. Text-only teachers (scripted, OpenAI)
give no token ids, so their conversations are encoded here with the student's chat template,
laid out exactly as the runner lays out token-in-token-out data: prompt, then each assistant
turn (its text and end-of-turn token, loss mask 1), then the observation tokens (mask 0); a
vision-language student's token data keeps the images its ids show, as the runner's does.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import gymnasium as gym

from gfcr.agents.policies.chat import ChatEncoder
from gfcr.agents.runner.episode import episode_solved
from gfcr.core import TokenData, Trajectory
from gfcr.errors import DataError
from gfcr.trainers.batching import Sample, sample_from_trajectory

logger = logging.getLogger(__name__)


def filter_trajectories(trajectories: Sequence[Trajectory], min_reward: float) -> list[Trajectory]:
    """Rejection sampling: finished trajectories with at least `min_reward` total reward."""
    return [t for t in trajectories if episode_solved(t, min_reward)]


def tokenize_trajectory(
    trajectory: Trajectory, chat: ChatEncoder, tools: Sequence[dict[str, Any]]
) -> TokenData:
    """Token data for a text-only trajectory, in the runner's token-in-token-out layout.

    >>> import tempfile
    >>> from gfcr.agents.policies.chat import load_chat_encoder
    >>> from gfcr.agents.policies.tiny_model import write_tiny_model
    >>> from gfcr.core import Message
    >>> chat = load_chat_encoder(str(write_tiny_model(tempfile.mkdtemp(), vocab_size=400, corpus_tasks=20)))
    >>> t = Trajectory("e", "t", "hi", messages=[Message("user", "hi"), Message("assistant", "yo")])
    >>> data = tokenize_trajectory(t, chat, [])
    >>> chat.decode(data.completion_ids), set(data.loss_mask)
    ('yo<|im_end|>', {1})
    """
    messages = list(trajectory.messages)
    first = next((i for i, m in enumerate(messages) if m.role == "assistant"), None)
    if first is None:
        raise DataError(f"trajectory {trajectory.id} has no assistant turn to train on")
    end_id = min(chat.end_ids)
    data = TokenData(
        prompt_ids=chat.prompt_ids(messages[:first], tools), images=chat.images(messages[:first])
    )
    i = first
    while i < len(messages):
        ids = chat.encode(messages[i].text or "") + [end_id]
        data.append(ids, sampled=True)  # logprobs 0.0: no policy sampled them
        following = i + 1
        while following < len(messages) and messages[following].role != "assistant":
            following += 1
        if following < len(messages):  # another assistant turn: the observation between them
            observation = chat.observation_ids(messages[i + 1 : following], ids)
            data.append(observation, sampled=False, images=chat.images(messages[i + 1 : following]))
        i = following
    return data


def sft_samples(
    trajectories: Sequence[Trajectory], chat: ChatEncoder, env_kwargs: dict[str, Any] | None = None
) -> list[Sample]:
    """Samples for the SFT loss (advantage unused); text-only trajectories are tokenized here."""
    tools_by_env: dict[str, list[dict[str, Any]]] = {}
    samples = []
    for trajectory in trajectories:
        if trajectory.tokens is None:
            if trajectory.env_id not in tools_by_env:
                if trajectory.remote:  # played on a server: ask it (the env need not be installed here)
                    url = trajectory.remote["url"]
                    env = gym.make("gfcr/Remote-v0", **{**(env_kwargs or {}), "url": url})
                else:
                    env = gym.make(trajectory.env_id, **(env_kwargs or {}))
                tools_by_env[trajectory.env_id] = env.reset(seed=0)[1]["tools"]
                env.close()
            trajectory.tokens = tokenize_trajectory(trajectory, chat, tools_by_env[trajectory.env_id])
        samples.append(sample_from_trajectory(trajectory, 0.0))
    return samples
