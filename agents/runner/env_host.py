"""`EnvHost`: the envs of the episodes placed on one worker (a thread pool, a process, a Ray actor).

Envs are made with `gymnasium.make` and reused across episodes of the same configuration (an
env is reset for each episode, so reuse is safe and saves loading task data again). The host is
plain synchronous code; the pools in `env_pools.py` and `ray_backend.py` call it off the event
loop. An entry point travels with each reset, so a fresh worker process can register an env that
only the parent knows. With env servers, an episode's env is a session on the server `url_for`
picks; `where(episode)` names that server, and a step the server lost is an infrastructure
failure (`EpisodeError` "env server lost"), not the agent's truncation.

>>> host = EnvHost()
>>> config = EnvConfig("gfcr/Math-v0", {"split": "AIME2024"})
>>> obs, info = host.reset("episode-0", config, 0, {"task_id": "mmath/AIME2024/0"})
>>> host.step("episode-0", "\\\\boxed{204}")[1]
1.0
>>> host.release("episode-0")
"""

from __future__ import annotations

import threading
import time
from typing import Any

import gymnasium as gym

from gfcr.agents.runner.env_servers import EnvServers
from gfcr.core import Action
from gfcr.core.episode import EnvConfig
from gfcr.errors import EpisodeError, GfcrError

StepResult = tuple[str, float, bool, bool, dict[str, Any]]
_Place = tuple[str, str | None]  # an env configuration's key, and the env server it runs on (None: here)


class EnvHost:
    """Envs by episode id; thread-safe, so a thread pool may share one host."""

    def __init__(self, servers: EnvServers | None = None) -> None:
        self.servers = servers  # env servers to host the envs they serve (`RunnerConfig.env_urls`)
        self._free: dict[_Place, list[gym.Env]] = {}
        self._live: dict[str, tuple[_Place, gym.Env]] = {}
        self._urls: dict[str, str | None] = {}  # episode -> its env server, known before its env is made
        self._lock = threading.Lock()

    def reset(
        self, episode: str, config: EnvConfig, seed: int | None, options: dict[str, Any] | None
    ) -> tuple[str, dict]:
        """Take an env for `episode` and reset it with `options` (`EpisodeSpec.reset_options`: the
        task, skills as tools; None: the task `seed` picks)."""
        url = self.servers.url_for(config) if self.servers is not None else None
        with self._lock:
            self._urls[episode] = url
        env = self._take(config, url)
        with self._lock:
            self._live[episode] = ((config.key, url), env)
        return env.reset(seed=seed, options=options)

    def step(self, episode: str, action: str | Action) -> StepResult:
        """Step the env of `episode`."""
        with self._lock:
            if episode not in self._live:
                raise GfcrError(f"episode {episode!r} has no env on this worker; reset it first")
            (_, url), env = self._live[episode]
        result = env.step(action)
        if url is not None and "remote_error" in result[4]:  # the server failed: not the agent's doing
            raise EpisodeError("env server lost", f"{url}: {result[4]['remote_error']}", retryable=True)
        return result  # type: ignore[return-value]  # TextEnv rewards are floats

    def where(self, episode: str) -> str | None:
        """The env server `episode` was sent to, None when its env runs here."""
        with self._lock:
            return self._urls.get(episode)

    def release(self, episode: str, reuse: bool = True) -> None:
        """The episode is over: keep its env for the next one (or close it, e.g. after a hang)."""
        with self._lock:
            self._urls.pop(episode, None)
            if episode not in self._live:
                return
            place, env = self._live.pop(episode)
            if reuse:
                self._free.setdefault(place, []).append(env)
        if not reuse:
            _close_all([(place, env)], timeout_s=0)

    def close(self, timeout_s: float = 10.0) -> None:
        """Close every env; a server's session still closing after `timeout_s` is left to its thread,
        and one on a server out of service is not waited for at all."""
        with self._lock:
            envs = [(place, env) for place, envs in self._free.items() for env in envs]
            envs += list(self._live.values())
            self._free, self._live, self._urls = {}, {}, {}
        out = self.servers.out_of_service if self.servers is not None else set()
        _close_all([(place, env) for place, env in envs if place[1] in out], timeout_s=0)
        _close_all([(place, env) for place, env in envs if place[1] not in out], timeout_s)

    def _take(self, config: EnvConfig, url: str | None) -> gym.Env:
        with self._lock:
            free = self._free.get((config.key, url))
            if free:
                return free.pop()
        if url is not None:
            return gym.make("gfcr/Remote-v0", url=url)
        if config.env_id not in gym.registry and config.entry_point is not None:
            gym.register(config.env_id, entry_point=config.entry_point)
        return gym.make(config.env_id, **config.kwargs)


def _close_all(envs: list[tuple[_Place, gym.Env]], timeout_s: float) -> None:
    """Close envs here; sessions on env servers in threads, waited for at most `timeout_s` in all
    (closing a session on a hung server waits for its close handshake's own timeout, 10 s)."""
    remote = [env for (_, url), env in envs if url is not None]
    sessions = [threading.Thread(target=_close_quietly, args=(env,), daemon=True) for env in remote]
    for thread in sessions:
        thread.start()
    for (_, url), env in envs:
        if url is None:
            _close_quietly(env)
    deadline = time.monotonic() + timeout_s
    for thread in sessions:
        thread.join(max(deadline - time.monotonic(), 0))


def _close_quietly(env: gym.Env) -> None:
    try:
        env.close()
    except Exception:  # closing a broken env must not hide why it broke
        pass
