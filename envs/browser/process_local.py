"""`ProcessLocal`: one lazily built object per process, rebuilt in a forked child.

The browser host and the loopback server each run threads; threads do not survive `fork`
(Gymnasium's async vector envs fork their workers), so a child must build its own and must never
touch its parent's. Objects with a `close()` are closed at interpreter exit, including in
multiprocessing workers, which leave through `os._exit` and skip `atexit`.

>>> counter = ProcessLocal(lambda: object())
>>> counter.get() is counter.get()
True
"""

from __future__ import annotations

import atexit
import multiprocessing.util
import os
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class ProcessLocal(Generic[T]):
    """A value built by `build()` on first `get()` in each process."""

    def __init__(self, build: Callable[[], T]) -> None:
        self._build = build
        self._lock = threading.Lock()
        self._value: T | None = None
        self._cleanup_pid = 0  # the process that registered `close` for its exit
        os.register_at_fork(after_in_child=self._forget)

    def get(self) -> T:
        with self._lock:
            if self._value is None:
                self._value = self._build()
                if hasattr(self._value, "close") and self._cleanup_pid != os.getpid():
                    self._cleanup_pid = os.getpid()
                    atexit.register(self.close)
                    multiprocessing.util.Finalize(self, self.close, exitpriority=10)
            return self._value

    def close(self) -> None:
        """Close and drop this process's value, if any (the next `get()` builds a new one)."""
        with self._lock:
            value, self._value = self._value, None
        if value is not None and hasattr(value, "close"):
            value.close()

    def _forget(self) -> None:
        # In a forked child: the parent's value (and maybe a held lock) belong to the parent.
        self._lock = threading.Lock()
        self._value = None
