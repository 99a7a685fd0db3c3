"""Which episodes to run: `EpisodeSpec`, and builders for an env's tasks or a suite's.

An episode is identified by its env configuration, task, seed and sample number; its `id`
(a hash of those) becomes the trajectory id, so a resumed run knows what it already wrote.

>>> specs = episodes_for_env("gfcr/Math-v0", 3, kwargs={"split": "AIME2024"})
>>> again = episodes_for_env("gfcr/Math-v0", 1, kwargs={"split": "AIME2024"})
>>> len(specs), len({s.id for s in specs}), specs[0].id == again[0].id
(3, 3, True)
"""

from __future__ import annotations

import random
from typing import Any

import gymnasium as gym

from gfcr.core.episode import EnvConfig, EpisodeSpec
from gfcr.errors import ConfigError, UnknownNameError
from gfcr.registry import list_envs
from gfcr.suites import Suite


def env_config(env_id: str, kwargs: dict[str, Any] | None = None) -> EnvConfig:
    """The configuration of a registered env, with its entry point (so workers can register it).

    Keywords the env was registered with (`register_env(id, entry, kwargs={...})`) are part of the
    configuration, under the ones given here: a worker process that registers the env from its
    entry point alone makes the same env.
    """
    if env_id not in gym.registry:
        raise UnknownNameError("env id", env_id, list_envs(), hint="see `gfcr list`")
    spec = gym.spec(env_id)
    return EnvConfig(env_id, {**spec.kwargs, **(kwargs or {})}, spec.entry_point)


def episodes_for_env(
    env_id: str, num_episodes: int, *, kwargs: dict[str, Any] | None = None, seed: int = 0
) -> list[EpisodeSpec]:
    """`num_episodes` episodes over distinct tasks in a seeded order (repeated if fewer tasks);
    episode i has seed `seed + i`."""
    if num_episodes < 1:
        raise ConfigError(f"num_episodes must be >= 1, got {num_episodes}")
    config = env_config(env_id, kwargs)
    env = gym.make(env_id, **config.kwargs)
    tasks = env.unwrapped.tasks  # type: ignore[attr-defined]  # every gfcr env is a TextEnv
    order = list(range(len(tasks)))
    random.Random(seed).shuffle(order)
    env.close()
    return [
        EpisodeSpec(config, tasks[order[i % len(order)]].id, seed + i, sample=i // len(order))
        for i in range(num_episodes)
    ]


def episodes_for_suite(suite: Suite, k: int = 1, *, seed: int = 0) -> list[EpisodeSpec]:
    """`k` samples of every task of `suite`; sample j has seed `seed + j`."""
    if k < 1:
        raise ConfigError(f"k (samples per task) must be >= 1, got {k}")
    specs = []
    for entry, task_id in suite.tasks():
        config = env_config(entry.env_id, entry.kwargs)
        specs += [EpisodeSpec(config, task_id, seed + j, sample=j) for j in range(k)]
    return specs
