"""Fixtures of the browser tests."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import gymnasium as gym
import pytest

import gfcr  # noqa: F401  (registers the envs)


@pytest.fixture
def in_threads():
    """A function running `work(env, task_id)` for every task id, spread over `workers` threads.

    Each thread makes its own `gfcr/Browser-v0` (with `env_kwargs`); all share the process's one
    browser, as a runner's thread pool does. Returns task id -> what `work` returned.
    """

    def run(
        task_ids: Iterable[str], work: Callable[[gym.Env, str], Any], workers: int = 3, **env_kwargs: Any
    ) -> dict[str, Any]:
        local = threading.local()
        envs: list[gym.Env] = []

        def one(task_id: str) -> tuple[str, Any]:
            if not hasattr(local, "env"):
                local.env = gym.make("gfcr/Browser-v0", **env_kwargs)
                envs.append(local.env)
            return task_id, work(local.env, task_id)

        try:
            with ThreadPoolExecutor(workers) as pool:
                return dict(pool.map(one, task_ids))
        finally:
            for env in envs:
                env.close()

    return run
