"""`DaemonThreads`: a thread pool whose hung calls can be abandoned.

`concurrent.futures.ThreadPoolExecutor` joins its threads when the interpreter exits, so one env
step or policy call stuck forever keeps a finished run from exiting, and every abandoned call
takes a worker for good. Here the workers are daemon threads, and `abandon()` adds a worker in
place of one left to a hang.

>>> pool = DaemonThreads(2, "demo")
>>> pool.submit(sum, [1, 2, 3]).result()
6
>>> pool.shutdown()
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from itertools import count
from typing import Any


class DaemonThreads(Executor):
    """`num_workers` daemon threads taking calls from one queue."""

    def __init__(self, num_workers: int, name: str) -> None:
        self._queue: queue.SimpleQueue[tuple[Future, Callable[..., Any], tuple, dict] | None] = (
            queue.SimpleQueue()
        )
        self._name = name
        self._ids = count()
        self._workers = 0
        for _ in range(num_workers):
            self._spawn()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        future: Future = Future()
        self._queue.put((future, fn, args, kwargs))
        return future

    def abandon(self) -> None:
        """A call was given up on while still running: start a worker to take its thread's place."""
        self._spawn()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Let idle workers exit; busy ones finish their call (or hang on) without blocking the caller."""
        if cancel_futures:
            while True:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is not None:
                    item[0].cancel()
        for _ in range(self._workers):
            self._queue.put(None)

    def _spawn(self) -> None:
        self._workers += 1
        name = f"{self._name}_{next(self._ids)}"
        threading.Thread(target=self._work, name=name, daemon=True).start()

    def _work(self) -> None:
        while (item := self._queue.get()) is not None:
            future, fn, args, kwargs = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as error:  # noqa: BLE001 - handed to the caller through the future
                future.set_exception(error)
