"""Admission control: a concurrency limit with a queue deadline, and the waits it measures.

A shared resource — an env server, a sandbox pool, an LLM judge or simulated user — admits at
most `max_concurrency` calls at once; a call beyond them waits its turn in the queue, for at most
`queue_timeout_s`, and past it fails with `QueueTimeoutError` naming the resource: an
infrastructure failure of that resource, never the agent's.

Every wait is recorded in the ledger of the env call it happened in: an env's `reset` and `step`
decorated with `reports_waits` return the seconds their admissions waited in `info["wait_s"]`
(resource -> seconds), the runner adds them to the episode's `Cost.wait_s`, and `gfcr serve-env`
adds its own queue's wait ("env_server") to its answer.

>>> gate = Admission("judge", max_concurrency=1, queue_timeout_s=5.0)
>>> with collect_waits() as waits:
...     with gate.admit() as waited:
...         pass
>>> list(waits), waited < 1.0
(['judge'], True)
>>> quick = Admission("sandbox", max_concurrency=1, queue_timeout_s=0.01)
>>> with quick.admit(), quick.admit():  # its one slot is taken: the second call queues, then fails
...     pass
Traceback (most recent call last):
...
gfcr.errors.QueueTimeoutError: sandbox queue timeout: waited ... s for a slot (1 at once); ...
"""

from __future__ import annotations

import contextvars
import functools
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from gfcr.core.config import setting
from gfcr.errors import ConfigError, QueueTimeoutError

# The resources gfcr gates, as `Cost.wait_s` and the metrics name them.
RESOURCES = ("env_server", "sandbox", "judge", "user")

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class AdmissionConfig:
    """A resource's admission settings: how many calls at once, how long one may queue.

    >>> from gfcr.core.config import from_dict
    >>> from_dict(AdmissionConfig, {"max_concurrency": 4}).gate("user").max_concurrency
    4
    """

    max_concurrency: int | None = setting(
        None, "Calls the resource serves at once; more wait in a queue (default: no limit)."
    )
    queue_timeout_s: float = setting(
        60.0,
        "Longest a call waits in the queue, in seconds; past it the call fails as an infrastructure "
        "failure of the resource (`<resource> queue timeout`), not the agent's.",
    )

    def __post_init__(self) -> None:
        check(self.max_concurrency, self.queue_timeout_s)

    def gate(self, resource: str) -> Admission:
        """A new gate for `resource` with these settings."""
        return Admission(resource, self.max_concurrency, self.queue_timeout_s)

    def shared_gate(self, resource: str, key: str) -> Admission:
        """The gate of `resource` at `key` (e.g. a model's name) with these settings, one per process:
        every component calling the same model with the same settings queues at the same gate."""
        with _shared_lock:
            return _shared.setdefault((resource, key, self), self.gate(resource))


class Admission:
    """At most `max_concurrency` holders at once (no limit if None); others queue for up to
    `queue_timeout_s`, then fail with `QueueTimeoutError`. Thread-safe."""

    def __init__(
        self, resource: str, max_concurrency: int | None = None, queue_timeout_s: float = 60.0
    ) -> None:
        check(max_concurrency, queue_timeout_s)
        self.resource, self.max_concurrency, self.queue_timeout_s = resource, max_concurrency, queue_timeout_s
        self._slots = threading.Semaphore(max_concurrency) if max_concurrency is not None else None
        self._lock = threading.Lock()
        self.waiting = 0  # calls in the queue now
        self.running = 0  # calls admitted and not yet done

    @contextmanager
    def admit(self) -> Iterator[float]:
        """Hold a slot for the block; yields the seconds waited for it (recorded too: `collect_waits`)."""
        started = time.perf_counter()
        if self._slots is not None:
            with self._lock:
                self.waiting += 1
            try:
                admitted = self._slots.acquire(timeout=self.queue_timeout_s)
            finally:
                with self._lock:
                    self.waiting -= 1
            waited = time.perf_counter() - started
            record_wait(self.resource, waited)  # a wait that timed out was waited all the same
            if not admitted:
                raise QueueTimeoutError(self.resource, waited, self.max_concurrency)
        else:
            waited = 0.0
        with self._lock:
            self.running += 1
        try:
            yield waited
        finally:
            with self._lock:
                self.running -= 1
            if self._slots is not None:
                self._slots.release()

    def describe(self) -> dict[str, Any]:
        """The settings and the queue now, for a server's status page."""
        return {
            "resource": self.resource,
            "max_concurrency": self.max_concurrency,
            "queue_timeout_s": self.queue_timeout_s,
            "running": self.running,
            "waiting": self.waiting,
        }


def check(max_concurrency: int | None, queue_timeout_s: float) -> None:
    """Refuse a limit below 1 or a queue timeout that is not positive."""
    if max_concurrency is not None and (isinstance(max_concurrency, bool) or max_concurrency < 1):
        raise ConfigError(f"max_concurrency must be >= 1 (or None: no limit), got {max_concurrency!r}")
    if not queue_timeout_s > 0:
        raise ConfigError(f"queue_timeout_s must be > 0 seconds, got {queue_timeout_s!r}")


# -- the ledger: the waits of the current env call ----------------------------------------------


class WaitLedger(dict[str, float]):
    """Seconds waited by resource, within one `collect_waits` block (thread-safe adds)."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()

    def add(self, resource: str, seconds: float) -> None:
        with self._lock:
            self[resource] = self.get(resource, 0.0) + seconds


_ledger: contextvars.ContextVar[WaitLedger | None] = contextvars.ContextVar("gfcr_wait_ledger", default=None)
_shared: dict[tuple[str, str, AdmissionConfig], Admission] = {}
_shared_lock = threading.Lock()


@contextmanager
def collect_waits() -> Iterator[WaitLedger]:
    """Record the waits of every admission in the block (in this context: threads started with a
    copy of it, `asyncio.to_thread` among them, count too); an inner block keeps its own."""
    ledger = WaitLedger()
    token = _ledger.set(ledger)
    try:
        yield ledger
    finally:
        _ledger.reset(token)


def record_wait(resource: str, seconds: float) -> None:
    """Add a wait to the ledger open in this context (none open: nobody asked, nothing kept)."""
    ledger = _ledger.get()
    if ledger is not None:
        ledger.add(resource, seconds)


def waited() -> float:
    """Seconds waited in all, so far, by the admissions of the `collect_waits` block open in this
    context (0.0 if none is open)."""
    ledger = _ledger.get()
    return sum(ledger.values()) if ledger is not None else 0.0


def add_waits(total: Mapping[str, float] | None, more: Mapping[str, float] | None) -> dict[str, float]:
    """`total` and `more` summed by resource (either may be None or hold junk from the wire: a
    non-number is left out rather than trusted).

    >>> add_waits({"sandbox": 1.0}, {"sandbox": 0.5, "judge": 2.0, "user": "x"})
    {'sandbox': 1.5, 'judge': 2.0}
    """
    summed: dict[str, float] = {}
    for waits in (total, more):
        if not isinstance(waits, Mapping):
            continue
        for resource, seconds in waits.items():
            if isinstance(seconds, int | float) and not isinstance(seconds, bool) and seconds >= 0:
                summed[str(resource)] = summed.get(str(resource), 0.0) + float(seconds)
    return summed


def reports_waits(method: F) -> F:
    """Decorator for an env's `reset` or `step`: the waits of the admissions inside the call are
    added to the `info["wait_s"]` it returns (info is the last item of its result)."""

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with collect_waits() as waits:
            result = method(*args, **kwargs)
        if waits:
            info = result[-1]
            info["wait_s"] = add_waits(info.get("wait_s"), waits)
        return result

    return wrapper  # type: ignore[return-value]
