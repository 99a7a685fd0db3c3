"""A warm pool: up to `size` workers, made on demand, lent to one caller at a time.

Thread-safe; every wait has a timeout. A worker that fails is discarded (closed), not
returned, and a new one is made when needed. After `os.fork()` the child forgets the
parent's workers (they belong to the parent) and makes its own.

>>> made = []
>>> pool = WorkerPool(lambda: made.append(len(made)) or len(made), size=2, close=lambda w: None)
>>> with pool.lend() as first, pool.lend() as second:
...     (first, second)
(1, 2)
>>> with pool.lend() as again:  # a returned worker is lent again, not remade
...     again in (1, 2), len(made)
(True, 2)
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

from gfcr.errors import SandboxError

W = TypeVar("W")


class WorkerPool(Generic[W]):
    """Workers made by `create`, at most `size` lent out at once (`overflow` ones excepted)."""

    def __init__(self, create: Callable[[], W], size: int, close: Callable[[W], None]) -> None:
        self._create, self._close, self.size = create, close, max(1, size)
        self._idle: list[W] = []
        self._lent = 0
        self._condition = threading.Condition()
        self._pid = os.getpid()

    def acquire(self, timeout: float = 60.0, overflow: bool = False) -> W:
        """An idle worker, a new one if fewer than `size` are lent (always, with `overflow`)."""
        with self._condition:
            self._forget_after_fork()
            if not self._condition.wait_for(
                lambda: self._idle or self._lent < self.size or overflow, timeout
            ):
                raise SandboxError(f"no sandbox worker became free within {timeout} s; raise pool_size")
            self._lent += 1
            if self._idle:
                return self._idle.pop()
        try:
            return self._create()
        except BaseException:
            with self._condition:
                self._lent -= 1
                self._condition.notify()
            raise

    def release(self, worker: W) -> None:
        """Give a healthy worker back (closed instead if more than `size` would be idle)."""
        with self._condition:
            if os.getpid() != self._pid:
                return
            self._lent -= 1
            keep = len(self._idle) < self.size
            if keep:
                self._idle.append(worker)
            self._condition.notify()
        if not keep:
            self._close(worker)

    def discard(self, worker: W) -> None:
        """Close a worker that failed; a new one will be made when needed."""
        with self._condition:
            if os.getpid() == self._pid:
                self._lent -= 1
                self._condition.notify()
        self._close(worker)

    @contextmanager
    def lend(self, timeout: float = 60.0, overflow: bool = False) -> Iterator[W]:
        """`acquire`, then `release` — or `discard` if the block raised."""
        worker = self.acquire(timeout, overflow)
        try:
            yield worker
        except BaseException:
            self.discard(worker)
            raise
        self.release(worker)

    def close(self) -> None:
        """Close the idle workers (lent ones are closed when they come back, or by their owners)."""
        with self._condition:
            idle, self._idle = self._idle, []
            forked = os.getpid() != self._pid
        if not forked:
            for worker in idle:
                self._close(worker)

    def _forget_after_fork(self) -> None:
        if os.getpid() != self._pid:
            self._idle, self._lent, self._pid = [], 0, os.getpid()
