"""Env pools: where the runner's env calls run, off the event loop, with timeouts and fault isolation.

- `ThreadEnvPool`: one `EnvHost` in this process, calls in a thread pool. Cheap; an env that
  hangs costs a thread (abandoned after the timeout) and an env that kills the process kills the run.
- `ProcessEnvPool`: `num_workers` processes, each an `EnvHost`; for CPU-heavy verifiers and envs
  that may crash. A call that hangs past the timeout kills its worker; the episodes placed there
  are run again ("env worker lost" is not their failure), and a fresh worker takes their place.
- `RayEnvPool` (in `ray_backend.py`): the same with Ray actors, on one machine or many; the
  episodes of a node that dies are run again ("env node lost"), and `lost` names the node.

Every failure comes back as an `EpisodeError` naming the reason, with the env's traceback. A pool
names the place an episode's env runs on where it can be taken out of service (`where`: an env
server's url), so the runner can stop sending work to a place that keeps failing (`exclude`).
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from typing import Any, Protocol

from gfcr.agents.runner.env_host import EnvConfig, EnvHost, StepResult
from gfcr.agents.runner.env_servers import EnvServers
from gfcr.agents.runner.threads import DaemonThreads
from gfcr.core import Action
from gfcr.errors import ConfigError, EpisodeError

logger = logging.getLogger(__name__)
_START_TIMEOUT_S = 120.0
MAIN_GUARD = (
    'env_workers="process" starts workers with "spawn", which imports your main script again; put the '
    'code that runs the Runner under `if __name__ == "__main__":` (or use env_workers="thread")'
)
WORKER_LOST = "env worker lost"  # another episode's hang or crash took its worker: not its own failure
NODE_LOST = "env node lost"  # the machine its worker ran on left the cluster: not its own failure either


class EnvPool(Protocol):
    """Async access to envs by episode id."""

    async def reset(
        self, episode: str, config: EnvConfig, seed: int | None, options: dict[str, Any] | None
    ) -> tuple[str, dict]: ...

    async def step(self, episode: str, action: str | Action) -> StepResult: ...

    async def release(self, episode: str, reuse: bool = True) -> None:
        """The episode is over; `reuse=False` closes its env instead of keeping it for the next."""
        ...

    async def close(self) -> None: ...

    # Where episodes run, for the runner's accounting of infrastructure failures.
    lost: dict[str, str]  # places that died mid-run (a Ray node) -> what happened, for the run's summary

    def where(self, episode: str) -> str | None:
        """The place `episode`'s env runs on that can be taken out of service (an env server), or None."""
        ...

    def exclude(self, place: str) -> None:
        """Send no more episodes to `place`."""
        ...

    def can_run(self, config: EnvConfig) -> bool:
        """Whether episodes of `config` still have a place to run."""
        ...


def describe(error: BaseException) -> str:
    """`Type: message` and the traceback, as a failure record carries it."""
    trace = "".join(traceback.format_exception(error)).rstrip()
    return f"{type(error).__name__}: {error}\n{trace}"


class ThreadEnvPool:
    """Envs in this process; each call in one of `num_workers` threads, bounded by `timeout_s`."""

    def __init__(self, num_workers: int, timeout_s: float, servers: EnvServers | None = None) -> None:
        if num_workers < 1 or timeout_s <= 0:
            raise ConfigError(f"need num_workers >= 1 and timeout_s > 0, got {num_workers} and {timeout_s}")
        self._host = EnvHost(servers)
        self._executor = DaemonThreads(num_workers, "gfcr-env")
        self._timeout_s = timeout_s
        self.lost: dict[str, str] = {}

    async def reset(
        self, episode: str, config: EnvConfig, seed: int | None, options: dict[str, Any] | None
    ) -> tuple[str, dict]:
        return await self._call(episode, self._host.reset, episode, config, seed, options)

    async def step(self, episode: str, action: str | Action) -> StepResult:
        return await self._call(episode, self._host.step, episode, action)

    async def release(self, episode: str, reuse: bool = True) -> None:
        self._host.release(episode, reuse=reuse)

    async def close(self) -> None:
        self._host.close()
        self._executor.shutdown(wait=False, cancel_futures=True)

    def where(self, episode: str) -> str | None:
        return self._host.where(episode)

    def exclude(self, place: str) -> None:
        if self._host.servers is not None:
            self._host.servers.exclude(place)

    def can_run(self, config: EnvConfig) -> bool:
        return self._host.servers is None or self._host.servers.can_run(config)

    async def _call(self, episode: str, function: Callable[..., Any], *args: Any) -> Any:
        """Run `function(*args)` in a worker; the timeout counts from when it starts, not while queued."""
        started: list[float] = []

        def timed() -> Any:
            started.append(time.monotonic())
            return function(*args)

        future = asyncio.wrap_future(self._executor.submit(timed))
        wait_s = self._timeout_s
        while not (await asyncio.wait({future}, timeout=wait_s))[0]:
            wait_s = started[0] + self._timeout_s - time.monotonic() if started else self._timeout_s
            if wait_s <= 0:
                logger.warning(
                    "env call of episode %s hung past %.1f s; its thread is abandoned",
                    episode,
                    self._timeout_s,
                )
                self._executor.abandon()
                raise EpisodeError("env timeout", f"{function.__name__} took over {self._timeout_s} s")
        try:
            return future.result()
        except EpisodeError:  # a failure the env named itself (e.g. a sandbox queue timeout): keep its reason
            raise
        except Exception as e:
            raise EpisodeError("env error", describe(e)) from e


class RemoteEnvPool:
    """Episodes placed on the least-loaded of `num_workers` remote hosts, one call at a time each.

    Subclasses say how a worker starts, how a call is made and how a worker is killed.
    """

    def __init__(self, num_workers: int, timeout_s: float) -> None:
        if num_workers < 1 or timeout_s <= 0:
            raise ConfigError(f"need num_workers >= 1 and timeout_s > 0, got {num_workers} and {timeout_s}")
        self._timeout_s = timeout_s
        self._workers: list[Any] = [None] * num_workers
        self._locks = [asyncio.Lock() for _ in range(num_workers)]
        self._load = [0] * num_workers
        self._placed: dict[str, tuple[int, Any]] = {}  # episode -> (slot, worker it was placed on)
        self.lost: dict[str, str] = {}

    # -- what subclasses implement ---------------------------------------------------------------

    def _start(self) -> Any:
        raise NotImplementedError

    async def _invoke(self, worker: Any, method: str, args: tuple, timeout_s: float) -> Any:
        """Run `method(*args)` on the worker's host; raise EpisodeError on any failure."""
        raise NotImplementedError

    def _kill(self, worker: Any) -> None:
        raise NotImplementedError

    # -- the pool ----------------------------------------------------------------------------------

    async def reset(
        self, episode: str, config: EnvConfig, seed: int | None, options: dict[str, Any] | None
    ) -> tuple[str, dict]:
        slot = min(range(len(self._workers)), key=self._load.__getitem__)
        self._load[slot] += 1
        self._placed[episode] = (slot, None)  # released even if its worker fails to start
        async with self._locks[slot]:
            if self._workers[slot] is None:
                self._workers[slot] = await asyncio.to_thread(self._start)
        self._placed[episode] = (slot, self._workers[slot])
        return await self._call(episode, "reset", (episode, config, seed, options))

    async def step(self, episode: str, action: str | Action) -> StepResult:
        return await self._call(episode, "step", (episode, action))

    async def release(self, episode: str, reuse: bool = True) -> None:
        slot, worker = self._placed.pop(episode, (None, None))
        if slot is None:
            return
        self._load[slot] -= 1
        if worker is not None and worker is self._workers[slot]:
            try:
                await self._call_on(slot, worker, episode, "release", (episode, reuse))
            except EpisodeError:
                pass  # the worker is gone; nothing left to release

    async def close(self) -> None:
        for slot, worker in enumerate(self._workers):
            if worker is not None:
                self._kill(worker)
                self._workers[slot] = None

    def where(self, episode: str) -> str | None:
        return None  # a hung or dead worker is replaced; there is no place to take out of service

    def exclude(self, place: str) -> None:
        pass

    def can_run(self, config: EnvConfig) -> bool:
        return True

    async def _call(self, episode: str, method: str, args: tuple) -> Any:
        if episode not in self._placed:
            raise EpisodeError("env error", f"episode {episode!r} was never reset")
        slot, worker = self._placed[episode]
        if worker is not self._workers[slot]:
            raise EpisodeError(
                WORKER_LOST, "its worker was restarted after another episode hung", retryable=True
            )
        return await self._call_on(slot, worker, episode, method, args)

    async def _call_on(self, slot: int, worker: Any, episode: str, method: str, args: tuple) -> Any:
        async with self._locks[slot]:
            if worker is not self._workers[slot]:
                raise EpisodeError(WORKER_LOST, "its worker was restarted", retryable=True)
            try:
                return await self._invoke(worker, method, args, self._timeout_s)
            except EpisodeError as e:
                if e.reason in ("env timeout", "env worker died", NODE_LOST):
                    logger.warning("restarting env worker %d: %s (episode %s)", slot, e.reason, episode)
                    self._kill(worker)
                    self._workers[slot] = None
                raise


class ProcessEnvPool(RemoteEnvPool):
    """Envs in `num_workers` worker processes (started with "spawn", on first use)."""

    def __init__(self, num_workers: int, timeout_s: float) -> None:
        if getattr(multiprocessing.current_process(), "_inheriting", False):  # a worker importing __main__
            raise ConfigError(f"a process worker is re-running the script that started it: {MAIN_GUARD}")
        super().__init__(num_workers, timeout_s)
        self._context = multiprocessing.get_context("spawn")
        self._io = ThreadPoolExecutor(num_workers, thread_name_prefix="gfcr-env-io")

    def _start(self) -> tuple[multiprocessing.process.BaseProcess, Connection]:
        parent, child = self._context.Pipe()
        process = self._context.Process(target=_serve, args=(child,), daemon=True, name="gfcr-env-worker")
        process.start()
        child.close()
        if not parent.poll(_START_TIMEOUT_S):  # imports take a while; do not bill them to the first call
            process.kill()
            raise EpisodeError(
                "env worker died", f"a worker process did not start in {_START_TIMEOUT_S} s", retryable=True
            )
        try:
            parent.recv()
        except EOFError:  # it died before it was ready: most often a script without a __main__ guard
            process.join(5)
            raise ConfigError(
                f"an env worker process exited (code {process.exitcode}) while starting: {MAIN_GUARD}"
            ) from None
        return process, parent

    async def _invoke(self, worker: Any, method: str, args: tuple, timeout_s: float) -> Any:
        process, connection = worker
        outcome = await asyncio.get_running_loop().run_in_executor(
            self._io, _roundtrip, connection, (method, args), timeout_s
        )
        if outcome[0] == "ok":
            return outcome[1]
        if outcome[0] == "timeout":
            raise EpisodeError("env timeout", f"{method} took over {timeout_s} s")
        if outcome[0] == "died":
            process.join(1)
            raise EpisodeError(
                "env worker died", f"exit code {process.exitcode} during {method}", retryable=True
            )
        if outcome[0] == "failed":  # an EpisodeError the env raised, with its own reason
            raise outcome[1]
        raise EpisodeError("env error", outcome[1])

    def _kill(self, worker: Any) -> None:
        process, connection = worker
        process.kill()
        process.join(5)
        connection.close()

    async def close(self) -> None:
        await super().close()
        self._io.shutdown(wait=False, cancel_futures=True)


def _roundtrip(connection: Connection, message: tuple, timeout_s: float) -> tuple[str, Any]:
    """Send one call to a worker and wait for its answer: (kind, value), kind one of "ok", "failed" (an
    `EpisodeError` of the env's), "error", "timeout", "died"."""
    try:
        connection.send(message)
        if not connection.poll(timeout_s):
            return "timeout", None
        return connection.recv()
    except (EOFError, OSError):
        return "died", None


def _serve(connection: Connection) -> None:
    """A worker process: answer calls on its `EnvHost` until the parent closes the pipe."""
    host = EnvHost()
    connection.send(("ready", None))
    while True:
        try:
            method, args = connection.recv()
        except (EOFError, OSError):
            break
        try:
            connection.send(("ok", getattr(host, method)(*args)))
        except EpisodeError as e:
            connection.send(("failed", e))
        except Exception as e:
            connection.send(("error", describe(e)))
    host.close()
