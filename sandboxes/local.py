"""The local backend: bubblewrap workers, each a warm fork server, in a pool.

A worker is one bubblewrap sandbox running `supervisor.py`; it runs one job at a time, each
in fresh namespaces as a fresh unprivileged uid, with rlimits, a wall clock, output caps and
(where cgroups are writable) the worker's memory and process cgroup. A warm run costs a few
forks, not an interpreter start. Threads and asyncio tasks share the pool; a session holds
a worker for its lifetime and gives it back when closed.

>>> with LocalSandbox() as sandbox:
...     sandbox.run("print(sum(range(10)))").stdout
'45\\n'
"""

from __future__ import annotations

import atexit
import itertools
import json
import logging
import os
import secrets
import select
import signal
import struct
import subprocess
import tempfile
import threading
import time
import weakref
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from gfcr.errors import ConfigError, SandboxError
from gfcr.sandboxes import program
from gfcr.sandboxes.backend import Job, RawOutcome, SandboxBase, SessionBase, limits_dict, make_result
from gfcr.sandboxes.base import ExecResult, Limits
from gfcr.sandboxes.bwrap import check_local_backend, default_python, worker_command, worker_fds
from gfcr.sandboxes.cgroups import Cgroup
from gfcr.sandboxes.pool import WorkerPool

logger = logging.getLogger(__name__)
START_TIMEOUT_S = 30.0
GRACE_S = 10.0  # beyond a run's wall limit, how long the host waits for the worker's answer
WORKER_OVERHEAD_MB = 64  # memory the supervisor itself may use beside a job, in the worker's cgroup
_uids = itertools.count(1_000_000 + secrets.randbelow(1000) * 1_000_000)  # a fresh uid per job
_spawner: tuple[int, ThreadPoolExecutor] | None = None
_spawner_lock = threading.Lock()


def _spawn(argv: list[str], stderr: Any, pass_fds: tuple[int, ...] = ()) -> subprocess.Popen[bytes]:
    """Start a process from one long-lived thread.

    bubblewrap's --die-with-parent ties the sandbox to the *thread* that started it, so a
    worker started from a short-lived thread (a pool thread, `asyncio.to_thread`) would die
    with that thread.
    """
    global _spawner
    with _spawner_lock:
        if _spawner is None or _spawner[0] != os.getpid():
            _spawner = (os.getpid(), ThreadPoolExecutor(1, thread_name_prefix="gfcr-sandbox-spawner"))
        executor = _spawner[1]
    popen = lambda: subprocess.Popen(  # noqa: E731
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, pass_fds=pass_fds
    )
    return executor.submit(popen).result(timeout=START_TIMEOUT_S)


class LocalWorker:
    """One bubblewrap sandbox with its supervisor: sends jobs, reads results, within deadlines."""

    def __init__(self, python: str | None = None, modules: Mapping[str, str | Path] | None = None) -> None:
        self.cgroup = Cgroup.create()
        self._log = tempfile.TemporaryFile()
        with worker_fds(modules) as fds:
            command = worker_command(python, fds=fds)
            if self.cgroup is not None:  # join the group before bubblewrap starts, so every process is in it
                join = 'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 97; '
                join += 'shift; n=$((n-1)); done; exec "$@"'
                files = [str(path) for path in self.cgroup.procs_files()]
                command = ["/bin/sh", "-c", join, "sh", str(len(files)), *files, *command]
            self.process = _spawn(command, self._log, pass_fds=fds.all())
        assert self.process.stdin is not None and self.process.stdout is not None
        self._to_worker, self._from_worker = self.process.stdin.fileno(), self.process.stdout.fileno()
        self._applied: tuple[int, int] | None = None
        try:
            self.read_json(time.monotonic() + START_TIMEOUT_S)
        except SandboxError:
            self.close()
            raise
        self.base_memory = self.cgroup.memory_usage() if self.cgroup else 0
        _live_workers.add(self)

    # -- one job ------------------------------------------------------------------------------

    def start(
        self, header: dict[str, Any], code: bytes, files: list[tuple[str, bytes]], limits: Limits
    ) -> None:
        """Send a job's header, code and files (a run then `send`s its stdin frame)."""
        self._apply(limits)
        header = {**header, "limits": limits_dict(limits), "uid": next(_uids)}
        header["files"] = [{"path": path} for path, _ in files]
        if self.cgroup is None:
            header["address_space_mb"] = limits.memory_mb + WORKER_OVERHEAD_MB
        deadline = time.monotonic() + START_TIMEOUT_S
        self._write(_frame(program.json_bytes(header)), deadline)
        self._write(_frame(code), deadline)
        for _, data in files:
            self._write(_frame(data), deadline)

    def send(self, data: bytes, deadline: float) -> None:
        """Send raw bytes (frames) to the worker, within `deadline`."""
        self._write(data, deadline)

    def result(self, limits: Limits, deadline: float, oom_before: int) -> tuple[RawOutcome, bool]:
        """Read one result (and whether the job's program is still alive, for sessions)."""
        outcome = self.read_json(deadline)
        if "worker_error" in outcome:
            raise SandboxError(f"{outcome['worker_error']}{self._log_tail()}")
        stdout = self._read_frame(deadline)
        stderr = self._read_frame(deadline)
        raw = RawOutcome(
            exit_code=outcome["exit_code"],
            signal=outcome["signal"],
            stopped_for=outcome["stopped_for"],
            wall_s=outcome["wall_s"],
            cpu_s=outcome["cpu_s"],
            max_rss_kb=outcome["max_rss_kb"],
            stdout=stdout,
            stderr=stderr,
            stdout_truncated=outcome["stdout_truncated"],
            stderr_truncated=outcome["stderr_truncated"],
            out_of_memory=self.oom_kills() > oom_before,
        )
        return raw, bool(outcome["alive"])

    def oom_kills(self) -> int:
        return self.cgroup.oom_kills() if self.cgroup else 0

    def _apply(self, limits: Limits) -> None:
        wanted = ((limits.memory_mb + WORKER_OVERHEAD_MB) << 20, limits.max_processes + 8)
        if self.cgroup is not None and wanted != self._applied:
            self.cgroup.set_limits(max(wanted[0], self.base_memory + (limits.memory_mb << 20)), wanted[1])
            self._applied = wanted

    # -- pipes with deadlines -----------------------------------------------------------------

    def _write(self, data: bytes, deadline: float) -> None:
        view = memoryview(data)
        while view:
            self._wait(self._to_worker, deadline, write=True)
            try:
                view = view[os.write(self._to_worker, view[: 1 << 16]) :]
            except BrokenPipeError as e:
                raise SandboxError(f"the sandbox worker died{self._log_tail()}") from e

    def _read_exact(self, size: int, deadline: float) -> bytes:
        chunks, left = [], size
        while left:
            self._wait(self._from_worker, deadline, write=False)
            chunk = os.read(self._from_worker, min(left, 1 << 20))
            if not chunk:
                raise SandboxError(f"the sandbox worker died{self._log_tail()}")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def _read_frame(self, deadline: float) -> bytes:
        (size,) = struct.unpack(">I", self._read_exact(4, deadline))
        return self._read_exact(size, deadline)

    def read_json(self, deadline: float) -> dict[str, Any]:
        """One JSON frame from the worker."""
        return json.loads(self._read_frame(deadline))

    def _wait(self, fd: int, deadline: float, write: bool) -> None:
        timeout = deadline - time.monotonic()
        ready = (
            select.select([], [fd], [], max(timeout, 0))[1]
            if write
            else select.select([fd], [], [], max(timeout, 0))[0]
        )
        if not ready:
            raise SandboxError(f"the sandbox worker did not answer in time{self._log_tail()}")

    def _log_tail(self) -> str:
        try:
            self._log.seek(0)
            tail = self._log.read()[-2000:].decode(errors="replace").strip()
        except (OSError, ValueError):
            return ""
        return f"; its log ends:\n{tail}" if tail else ""

    def close(self) -> None:
        """Stop the worker (every job process dies with it) and remove its cgroup.

        An idle worker exits by itself when its request pipe closes; one that does not within
        a second (a job is running) is killed.
        """
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()
        try:
            self.process.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self._log.close()
        if self.cgroup is not None:
            self.cgroup.remove()


def _frame(payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + payload


class LocalSandbox(SandboxBase):
    """Runs code in bubblewrap workers; see the module docstring.

    `pool_size` workers run at once (default: twice the number of CPUs; more runs queue for up to
    `queue_timeout_s`, then fail with `QueueTimeoutError`); `warm=False` starts a fresh
    worker for every run (for comparison); `python` is the interpreter inside (default
    /usr/bin/python3), whose standard library and site packages the code can import;
    `modules` (name -> file of a standard-library-only module) are imported by every warm
    worker at start, so that code importing them pays nothing.
    """

    backend = "local"

    def __init__(
        self,
        *,
        limits: Limits | None = None,
        pool_size: int | None = None,
        warm: bool = True,
        python: str | None = None,
        modules: Mapping[str, str | Path] | None = None,
        queue_timeout_s: float = 60.0,
    ) -> None:
        check_local_backend()
        size = pool_size or 2 * (os.cpu_count() or 1)  # jobs also wait (pipes, the host): 2 per core
        if size < 1:
            raise ConfigError(f"pool_size must be >= 1, got {pool_size}")
        super().__init__(limits, size, queue_timeout_s)
        self.warm = warm
        self.python = python or default_python()
        self.modules = dict(modules or {})
        self._pool: WorkerPool[LocalWorker] = WorkerPool(self._new_worker, size, LocalWorker.close)
        self._sessions: weakref.WeakSet[LocalSession] = weakref.WeakSet()
        _open_sandboxes.add(self)

    def _run(self, job: Job) -> ExecResult:
        if not self.warm:
            worker = self._new_worker()
            try:
                return self._run_on(worker, job)
            finally:
                worker.close()
        with self._pool.lend() as worker:
            return self._run_on(worker, job)

    def _new_worker(self) -> LocalWorker:
        return LocalWorker(self.python, self.modules)

    def _run_on(self, worker: LocalWorker, job: Job) -> ExecResult:
        limits, spec = job.limits, job.language
        header = {"inline": spec.inline, "argv": spec.command("/dev/fd/3"), "session": None}
        deadline = time.monotonic() + limits.wall_s + GRACE_S
        oom_before = worker.oom_kills()
        worker.start(header, job.code_bytes, job.files, limits)
        worker.send(_frame(job.stdin_bytes), deadline)
        raw, _ = worker.result(limits, deadline, oom_before)
        return make_result(raw, limits)

    def session(self, language: str = "python", *, limits: Limits | None = None) -> LocalSession:
        """A persistent Python interpreter or bash shell in its own worker (see `Session`)."""
        session = LocalSession(self, language, limits or self.limits)
        self._sessions.add(session)
        return session

    def close(self) -> None:
        super().close()
        for session in list(self._sessions):
            session.close()
        self._pool.close()


class LocalSession(SessionBase):
    """A session on a worker of a `LocalSandbox`'s pool, given back when the session closes.

    >>> with LocalSandbox() as sandbox, sandbox.session() as session:
    ...     _ = session.run("x = 6 * 7")
    ...     session.run("print(x)").stdout
    '42\\n'
    """

    def __init__(self, sandbox: LocalSandbox, language: str, limits: Limits) -> None:
        super().__init__(language, limits)
        self._sandbox = sandbox
        self._header = {"inline": False, "argv": self.spec.command("-")[:-1], "session": self.spec.session}
        self._worker: LocalWorker | None = None
        self._alive = False
        self._lock = threading.Lock()

    def _run(self, job: Job) -> ExecResult:
        limits = job.limits
        with self._lock:
            if not self._alive:
                self._start()
            worker = self._worker
            assert worker is not None
            deadline = time.monotonic() + limits.wall_s + GRACE_S
            call = {"kind": "call", "limits": limits_dict(limits)}
            try:
                oom_before = worker.oom_kills()
                worker.send(
                    _frame(program.json_bytes(call)) + _frame(job.code_bytes) + _frame(job.stdin_bytes),
                    deadline,
                )
                raw, self._alive = worker.result(limits, deadline, oom_before)
            except SandboxError:
                self._drop_worker()
                raise
            return make_result(raw, limits)

    @property
    def alive(self) -> bool:
        return self._alive

    def _start(self) -> None:
        if self._worker is None:
            self._worker = self._sandbox._pool.acquire(overflow=True)
        else:
            self.restarts += 1
        try:
            self._worker.start(self._header, b"", [], self.limits)
            reply = self._worker.read_json(time.monotonic() + START_TIMEOUT_S)
            if "worker_error" in reply:
                raise SandboxError(f"the session could not start: {reply['worker_error']}")
        except SandboxError:
            self._drop_worker()
            raise
        self._alive = True

    def _drop_worker(self) -> None:
        if self._worker is not None:
            self._sandbox._pool.discard(self._worker)
        self._worker, self._alive = None, False

    def close(self) -> None:
        """End the session's processes and give the worker back to the pool."""
        with self._lock:
            worker, self._worker = self._worker, None
            if worker is None:
                return
            try:
                if self._alive:
                    deadline = time.monotonic() + GRACE_S
                    worker.send(_frame(program.json_bytes({"kind": "close"})), deadline)
                    worker.read_json(deadline)  # the session's processes are gone
                self._sandbox._pool.release(worker)
            except SandboxError:
                self._sandbox._pool.discard(worker)
            self._alive = False


_open_sandboxes: weakref.WeakSet[LocalSandbox] = weakref.WeakSet()
_live_workers: weakref.WeakSet[LocalWorker] = weakref.WeakSet()


def _drop_inherited_workers() -> None:
    """In a forked child: close the parent's worker pipes (the workers stay the parent's).

    Otherwise the child would hold their request pipes open, and a worker the parent closes
    would not see the end of its input.
    """
    for worker in list(_live_workers):
        for pipe in (worker.process.stdin, worker.process.stdout):
            if pipe is not None:
                try:
                    pipe.close()  # the file object, so that it never closes a reused fd number later
                except (OSError, ValueError):
                    pass
    _live_workers.clear()


os.register_at_fork(after_in_child=_drop_inherited_workers)


@atexit.register
def _close_all() -> None:
    for sandbox in list(_open_sandboxes):
        try:
            sandbox.close()
        except Exception as e:  # exiting anyway: log, do not mask the real exit
            logger.debug("closing %r at exit: %s", sandbox, e)
