"""DuckDB queries in killable worker processes, so that every query ends near its time limit.

A single DuckDB function call can outrun `interrupt()` by seconds (see `duckdb_worker`). Each
`DuckDBWorkers` belongs to one read-only DuckDB engine; a query borrows an idle worker (or starts
one), so threads still run their queries side by side. The host waits for the answer until the
time limit plus `kill_grace`; a worker still busy then is killed (SIGKILL: it opened the database
read-only, so nothing is left half-written) and a replacement starts at once, while the caller
goes on. The limit counts from the moment the query is sent: a worker's start (about 0.5 s, on
the first query and after a kill) is not part of it.

No worker outlives its engine: `close()` (called by the engine's `dispose()`) and interpreter exit
end them all, a forked child lets its parent's workers be, and a worker whose host dies without
closing ends on its own.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import subprocess
import sys
import threading
import weakref
from multiprocessing import Pipe
from pathlib import Path
from typing import Any

from gfcr.envs.sql.engines.duckdb_worker import Reply
from gfcr.errors import DataError

logger = logging.getLogger(__name__)

_WORKER_SCRIPT = str(Path(__file__).with_name("duckdb_worker.py"))
_START_TIMEOUT_S = 60.0  # python, `import duckdb`, open the file: about 0.5 s; far more on a busy host
_EXIT_TIMEOUT_S = 5.0  # an idle worker exits at once when its channel closes; a killed one as fast
_ALL: weakref.WeakSet[DuckDBWorkers] = weakref.WeakSet()


def kill_grace(timeout_s: float) -> float:
    """How long past its limit an interrupted query may take to answer before its worker is killed.

    A quarter of the limit, kept between 0.1 s and 1 s: with the kill, a query still ends within
    1.5x its limit (for limits of 0.2 s and more).

    >>> kill_grace(1.0), kill_grace(5.0), kill_grace(60.0)
    (0.25, 1.0, 1.0)
    """
    return min(max(0.25 * timeout_s, 0.1), 1.0)


class _Worker:
    """One worker process (`duckdb_worker.main`) and the host's end of its channel."""

    def __init__(self, path: str, config: dict[str, Any]) -> None:
        self.channel, worker_end = Pipe()
        with worker_end:
            fd = worker_end.fileno()
            self.process = subprocess.Popen(
                [sys.executable, _WORKER_SCRIPT, str(fd), path, json.dumps(config)],
                pass_fds=[fd],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,  # the host's stdout may be a protocol (a served env)
            )
        self.path = path
        self.ready = False
        self.usable = True  # False once killed, crashed or closed

    def run(self, sql: str, max_rows: int, timeout_s: float) -> Reply:
        if not self.ready:
            self._wait_until_ready()
        try:
            self.channel.send((sql, max_rows, timeout_s))
            reply: Reply | None = None
            if self.channel.poll(timeout_s + kill_grace(timeout_s)):
                reply = self.channel.recv()
        except (EOFError, OSError):  # it died: killed from outside, out of memory, a crash
            self.close(kill=True)
            ended = f"the query's process ended (exit status {self.process.returncode})"
            return ("error", "error", f"{ended}; the query may need too much memory")
        if reply is None:
            self.close(kill=True)
            return ("error", "time limit", "the worker was killed")
        return reply

    def _wait_until_ready(self) -> None:
        message: Reply = ("failed", f"no answer within {_START_TIMEOUT_S:g} s")
        try:
            if self.channel.poll(_START_TIMEOUT_S):
                message = self.channel.recv()
        except (EOFError, OSError) as e:
            message = ("failed", f"it exited at start ({e!r})")
        if message[0] != "ready":
            self.close(kill=True)
            logger.error("DuckDB worker for %s failed to start:\n%s", self.path, message[1])
            last_line = str(message[1]).strip().splitlines()[-1]
            raise DataError(f"cannot open the DuckDB database {self.path} in a worker process: {last_line}")
        self.ready = True

    def close(self, *, kill: bool = False) -> None:
        """End the process: an idle worker exits when its channel closes; a busy one is killed."""
        self.usable = False
        if kill:
            self.process.kill()
        self.channel.close()
        try:
            self.process.wait(_EXIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(_EXIT_TIMEOUT_S)


class DuckDBWorkers:
    """The worker processes of one read-only DuckDB database file (see the module doc).

    `run` returns `duckdb_worker`'s reply tuple; `close` ends every worker (a later query starts
    a new one, as a disposed SQLAlchemy engine opens new connections).
    """

    def __init__(self, path: str, config: dict[str, Any]) -> None:
        self.path = path
        self.config = dict(config)
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()
        self._generation = 0  # bumped by close(): a worker busy then is closed when it comes back
        _ALL.add(self)

    def run(self, sql: str, max_rows: int, timeout_s: float) -> Reply:
        with self._lock:
            worker = self._idle.pop() if self._idle else None
            generation = self._generation
        if worker is not None and worker.process.poll() is not None:  # it died while idle
            worker.close()
            worker = None
        worker = worker or _Worker(self.path, self.config)
        try:
            reply = worker.run(sql, max_rows, timeout_s)
        except BaseException:  # a failed start, or an interrupt (Ctrl-C) while the query still runs
            worker.close(kill=True)
            raise
        with self._lock:
            keep = generation == self._generation
            if keep:  # a killed worker's replacement starts now, while the caller reads the reply
                self._idle.append(worker if worker.usable else _Worker(self.path, self.config))
        if not keep:
            worker.close()
        return reply

    def close(self) -> None:
        """End every idle worker now, and each busy one when its query ends."""
        with self._lock:
            self._generation += 1
            idle, self._idle = self._idle, []
        for worker in idle:  # told all at once, they exit side by side
            worker.channel.close()
        for worker in idle:
            worker.close()

    def _forget(self) -> None:
        """In a forked child: drop (do not end) the parent's workers, whose channels were copied."""
        self._lock = threading.Lock()
        self._generation += 1
        for worker in self._idle:
            worker.channel.close()
        self._idle = []


def _close_all() -> None:
    for workers in list(_ALL):
        workers.close()


def _forget_all() -> None:
    for workers in list(_ALL):
        workers._forget()


atexit.register(_close_all)
os.register_at_fork(after_in_child=_forget_all)
