"""`EnvHost`: the envs of the episodes placed on one worker (a thread pool, a process, a Ray actor).

Envs are made with `gymnasium.make` and reused across episodes of the same configuration (an
env is reset for each episode, so reuse is safe and saves loading task data again). The host is
plain synchronous code; the pools in `env_pools.py` and `ray_backend.py` call it off the event
loop. An entry point travels with each reset, so a fresh worker process can register an env that
only the parent knows.

>>> host = EnvHost()
>>> config = EnvConfig("gfcr/Math-v0", {"split": "AIME2024"})
>>> obs, info = host.reset("episode-0", config, "mmath/AIME2024/0", 0)
>>> host.step("episode-0", "\\\\boxed{204}")[1]
1.0
>>> host.release("episode-0")
"""

from __future__ import annotations

import threading
from typing import Any

import gymnasium as gym

from gfcr.agents.runner.env_servers import EnvServers
from gfcr.core import Action
from gfcr.core.episode import EnvConfig
from gfcr.errors import GfcrError

StepResult = tuple[str, float, bool, bool, dict[str, Any]]


class EnvHost:
    """Envs by episode id; thread-safe, so a thread pool may share one host."""

    def __init__(self, servers: EnvServers | None = None) -> None:
        self.servers = servers  # env servers to host the envs they serve (`RunnerConfig.env_urls`)
        self._free: dict[str, list[gym.Env]] = {}
        self._live: dict[str, tuple[str, gym.Env]] = {}
        self._lock = threading.Lock()

    def reset(
        self, episode: str, config: EnvConfig, task_id: str | None, seed: int | None
    ) -> tuple[str, dict]:
        """Take an env for `episode` and reset it to `task_id` (or the task `seed` picks)."""
        env = self._take(config)
        with self._lock:
            self._live[episode] = (config.key, env)
        return env.reset(seed=seed, options={"task_id": task_id} if task_id is not None else None)

    def step(self, episode: str, action: str | Action) -> StepResult:
        """Step the env of `episode`."""
        with self._lock:
            if episode not in self._live:
                raise GfcrError(f"episode {episode!r} has no env on this worker; reset it first")
            env = self._live[episode][1]
        return env.step(action)  # type: ignore[return-value]  # TextEnv rewards are floats

    def release(self, episode: str, reuse: bool = True) -> None:
        """The episode is over: keep its env for the next one (or close it, e.g. after a hang)."""
        with self._lock:
            if episode not in self._live:
                return
            key, env = self._live.pop(episode)
            if reuse:
                self._free.setdefault(key, []).append(env)
        if not reuse:
            _close_quietly(env)

    def close(self) -> None:
        """Close every env."""
        with self._lock:
            envs = [env for envs in self._free.values() for env in envs] + [
                env for _, env in self._live.values()
            ]
            self._free, self._live = {}, {}
        for env in envs:
            _close_quietly(env)

    def _take(self, config: EnvConfig) -> gym.Env:
        with self._lock:
            free = self._free.get(config.key)
            if free:
                return free.pop()
        url = self.servers.url_for(config) if self.servers is not None else None
        if url is not None:
            return gym.make("gfcr/Remote-v0", url=url)
        if config.env_id not in gym.registry and config.entry_point is not None:
            gym.register(config.env_id, entry_point=config.entry_point)
        return gym.make(config.env_id, **config.kwargs)


def _close_quietly(env: gym.Env) -> None:
    try:
        env.close()
    except Exception:  # closing a broken env must not hide why it broke
        pass
