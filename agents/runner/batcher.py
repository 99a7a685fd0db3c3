"""`Batcher`: requests from many episodes (or server clients) gathered into policy batches.

Continuous batching: a batch goes out as soon as the policy has room for it and either it is
full, or everyone who could still join is already waiting (`ready()`), or it has waited for
stragglers long enough since the policy had room: `batch_timeout_s`, or by default a tenth of a
recent batch's duration (20 ms to 1 s; 1 s for the first batch, while envs are made). So a slow
env never holds the policy back for long, and a request never waits for the slowest episode of
another batch. At most `policy.max_concurrent_batches` batches are in flight (1 for a local
model; more for servers and replicas that batch on their side).

Blocking `generate` runs in a thread of its own; an `AsyncPolicy` is awaited directly. A batch
that fails or passes `timeout_s` fails each of its requests with an `EpisodeError`;
`failed_in_a_row` counts such batches since the last good one (the runner stops a run whose
policy keeps failing).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence

from gfcr.agents.runner.busy import BusyClock
from gfcr.agents.runner.threads import DaemonThreads
from gfcr.core.policy import AsyncPolicy, Completion, Policy, Request
from gfcr.errors import ConfigError, EpisodeError, PolicyError

logger = logging.getLogger(__name__)


class Batcher:
    """Submit one request at a time; it comes back with its completions (`request.sampling.n`)."""

    def __init__(
        self,
        policy: Policy,
        *,
        max_batch_size: int,
        batch_timeout_s: float | None,
        timeout_s: float,
        ready: Callable[[], bool] = lambda: True,
    ) -> None:
        if max_batch_size < 1 or (batch_timeout_s or 0) < 0 or timeout_s <= 0:
            raise ConfigError(
                f"need max_batch_size >= 1, batch_timeout_s >= 0, timeout_s > 0; "
                f"got {max_batch_size}, {batch_timeout_s}, {timeout_s}"
            )
        self.policy = policy
        self.max_batch_size = max_batch_size
        self.batch_timeout_s = batch_timeout_s
        self.timeout_s = timeout_s
        self.ready = ready
        self.max_in_flight = policy.max_concurrent_batches if isinstance(policy, AsyncPolicy) else 1
        self.clock = BusyClock()  # batches in flight, and the seconds with at least one
        self._batch_s = 0.0  # moving average of a batch's duration
        self._free_since = 0.0  # when a batch slot last came free (time.monotonic)
        self.batches = 0
        self.failed_in_a_row = 0  # batches that failed since the last one that did not
        self._pending: list[tuple[Request, asyncio.Future[tuple[list[Completion], float]], float]] = []
        self._wake = asyncio.Event()
        self._dispatcher: asyncio.Task | None = None
        self._executor = DaemonThreads(1, "gfcr-policy")

    async def submit(self, request: Request) -> list[Completion]:
        """Queue `request` for the next batch and wait for its completions."""
        return (await self.submit_timed(request))[0]

    async def submit_timed(self, request: Request) -> tuple[list[Completion], float]:
        """`submit`, with the request's share of its batch's seconds: a batch of `t` seconds and `S`
        samples charges each request t * n / S, so the shares of all requests sum to the policy's
        time, not to each batch's time once per request (nor does the wait for a batch count)."""
        if self._dispatcher is None:
            self._dispatcher = asyncio.create_task(self._dispatch())
        future: asyncio.Future[tuple[list[Completion], float]] = asyncio.get_running_loop().create_future()
        self._pending.append((request, future, time.monotonic()))
        self._wake.set()
        return await future

    def poke(self) -> None:
        """Re-check whether to send a batch now (call when `ready()` may have changed)."""
        self._wake.set()

    async def close(self) -> None:
        if self._dispatcher is not None:
            self._dispatcher.cancel()
        self._executor.shutdown(wait=False, cancel_futures=True)

    async def _dispatch(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._pending and self.clock.in_flight < self.max_in_flight:
                # stragglers are waited for from when the policy had room, not from the first request
                waited = time.monotonic() - max(self._pending[0][2], self._free_since)
                patience = self._patience()
                if len(self._pending) < self.max_batch_size and not self.ready() and waited < patience:
                    await self._sleep(patience - waited)
                    continue
                batch, self._pending = (
                    self._pending[: self.max_batch_size],
                    self._pending[self.max_batch_size :],
                )
                self.clock.enter()
                asyncio.create_task(self._run(batch))

    def _patience(self) -> float:
        """How long the oldest request may wait for stragglers."""
        if self.batch_timeout_s is not None:
            return self.batch_timeout_s
        if self.batches == 0:  # the first batch: envs are being made and reset, give them time
            return 1.0
        return min(max(0.1 * self._batch_s, 0.02), 1.0)

    async def _sleep(self, seconds: float) -> None:
        """Until `seconds` pass or something changes."""
        try:
            await asyncio.wait_for(self._wake.wait(), seconds)
        except TimeoutError:
            pass
        self._wake.clear()

    async def _run(
        self, batch: Sequence[tuple[Request, asyncio.Future[tuple[list[Completion], float]], float]]
    ) -> None:
        requests = [request for request, _, _ in batch]
        started = time.perf_counter()
        try:
            completions = await asyncio.wait_for(self._generate(requests), self.timeout_s)
            if len(completions) != sum(r.sampling.n for r in requests):
                raise PolicyError(
                    f"{self.policy.name} returned {len(completions)} completions for "
                    f"{sum(r.sampling.n for r in requests)} samples; "
                    "a policy must return n per request, in order"
                )
        except Exception as e:
            if isinstance(e, TimeoutError) and not isinstance(self.policy, AsyncPolicy):
                self._executor.abandon()  # the hung call keeps its thread; later batches get another
            error = _as_episode_error(e, self.timeout_s)
            self.failed_in_a_row += 1
            for _, future, _ in batch:
                if not future.done():
                    future.set_exception(error)
        else:
            self.failed_in_a_row = 0
            per_sample = (time.perf_counter() - started) / max(len(completions), 1)
            start = 0
            for request, future, _ in batch:
                if not future.done():
                    n = request.sampling.n
                    future.set_result((completions[start : start + n], per_sample * n))
                start += request.sampling.n
        finally:
            duration = time.perf_counter() - started
            self._batch_s = duration if self.batches == 0 else 0.8 * self._batch_s + 0.2 * duration
            self.batches += 1
            self.clock.exit()
            self._free_since = time.monotonic()
            self._wake.set()

    async def _generate(self, requests: list[Request]) -> list[Completion]:
        if isinstance(self.policy, AsyncPolicy):
            return await self.policy.agenerate(requests)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._generate_in_thread, requests)

    def _generate_in_thread(self, requests: list[Request]) -> list[Completion]:
        try:
            return self.policy.generate(requests)
        except StopIteration as e:  # asyncio cannot raise it into a Future: the batch would never end
            name = self.policy.name
            raise PolicyError(f"{name}.generate raised StopIteration (an exhausted iterator?)") from e


def _as_episode_error(error: Exception, timeout_s: float) -> EpisodeError:
    if isinstance(error, EpisodeError):
        return error
    if isinstance(error, TimeoutError):
        return EpisodeError("policy timeout", f"no answer in {timeout_s} s")
    retryable = isinstance(error, PolicyError) and error.retryable
    reason = "policy unavailable" if retryable else "policy error"
    logger.debug("policy batch failed", exc_info=error)
    return EpisodeError(reason, f"{type(error).__name__}: {error}", retryable=retryable)
