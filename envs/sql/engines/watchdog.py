"""A deadline thread: run a callback (interrupt a query) if a block of code outlives its time.

One daemon thread serves every deadline of the process, so arming one costs a heap push, not a
thread start (`threading.Timer` starts a thread per call, about 100 µs). The thread is woken
only when a new deadline becomes the earliest; finished blocks are dropped lazily.
"""

from __future__ import annotations

import heapq
import itertools
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class _Deadline:
    __slots__ = ("lock", "done", "on_expire")

    def __init__(self, on_expire: Callable[[], object]) -> None:
        self.lock = threading.Lock()
        self.done = False
        self.on_expire = on_expire


class Watchdog:
    """Calls `on_expire()` when a `deadline(...)` block is still running after `seconds`.

    The callback runs at most once, and never after the block has exited (it holds the block's
    lock), so an interrupt cannot hit the next query on the same connection.

    >>> fired = []
    >>> with WATCHDOG.deadline(0.05, lambda: fired.append(True)):
    ...     time.sleep(0.2)
    >>> with WATCHDOG.deadline(0.05, lambda: fired.append(False)):
    ...     pass
    >>> time.sleep(0.1); fired
    [True]
    """

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, _Deadline]] = []
        self._order = itertools.count()
        self._wake = threading.Condition()
        self._pid = -1  # the process whose thread serves the heap (a forked child starts its own)

    @contextmanager
    def deadline(self, seconds: float, on_expire: Callable[[], object]) -> Iterator[None]:
        entry = _Deadline(on_expire)
        self._arm(time.monotonic() + seconds, entry)
        try:
            yield
        finally:
            with entry.lock:
                entry.done = True

    def _arm(self, when: float, entry: _Deadline) -> None:
        with self._wake:
            if self._pid != os.getpid():
                self._heap, self._pid = [], os.getpid()
                threading.Thread(target=self._loop, name="gfcr-sql-watchdog", daemon=True).start()
            heapq.heappush(self._heap, (when, next(self._order), entry))
            if self._heap[0][2] is entry:
                self._wake.notify()

    def _loop(self) -> None:
        while True:
            with self._wake:
                while self._heap and self._heap[0][2].done:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._wake.wait()
                    continue
                delay = self._heap[0][0] - time.monotonic()
                if delay > 0:
                    self._wake.wait(delay)
                    continue
                entry = heapq.heappop(self._heap)[2]
            with entry.lock:
                if not entry.done:
                    entry.done = True
                    try:
                        entry.on_expire()
                    except Exception:  # an interrupt that fails (the query just ended) changes nothing
                        pass


WATCHDOG = Watchdog()
