"""`unsafe-process`: a plain child process with rlimits — for trusted code only.

No isolation at all: the code sees the host's files, network and environment of the user
running gfcr. It exists for code you wrote yourself and for machines without bubblewrap or
Docker, and it warns when made. Limits: CPU, address space and file size (rlimits), the wall
clock (the process group is killed), output caps. Background processes that leave the
process group (setsid, daemons) are not tracked.
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path
from typing import Any

from gfcr.errors import SandboxError
from gfcr.sandboxes import program
from gfcr.sandboxes.backend import Job, RawOutcome, SandboxBase, SessionBase, make_result
from gfcr.sandboxes.base import ExecResult, Limits

WARNING = "make_sandbox('unsafe-process') runs code WITHOUT isolation; use it for trusted code only"
PROGRAM = str(Path(__file__).with_name("program.py"))


class UnsafeProcessSandbox(SandboxBase):
    """Runs code as a child process of gfcr with rlimits (see the module docstring).

    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     UnsafeProcessSandbox().run("echo $((6 * 7))", language="bash").stdout
    '42\\n'
    """

    backend = "unsafe-process"

    def __init__(
        self,
        *,
        limits: Limits | None = None,
        pool_size: int | None = None,
        python: str | None = None,
        modules: object = None,  # accepted for a uniform make_sandbox(); only local workers preload
        queue_timeout_s: float = 60.0,
    ) -> None:
        warnings.warn(WARNING, RuntimeWarning, stacklevel=3)
        super().__init__(limits, pool_size or os.cpu_count() or 2, queue_timeout_s)
        self.python = python or sys.executable

    def _run(self, job: Job) -> ExecResult:
        spec, limits = job.language, job.limits
        with tempfile.TemporaryDirectory(prefix="gfcr-unsafe-") as work:
            for path, data in job.files:
                target = Path(work, path)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            source = Path(work, ".gfcr", spec.filename)
            source.parent.mkdir()
            source.write_bytes(job.code_bytes)
            interpreter = self.python if spec.name == "python" else shutil.which(spec.argv[0]) or spec.argv[0]
            process = _start(spec.command(str(source), interpreter), work, limits)
            pump = Pump(process, limits)
            return make_result(pump.until_exit(job.stdin_bytes), limits)

    def session(self, language: str = "python", *, limits: Limits | None = None) -> UnsafeSession:
        return UnsafeSession(self, language, limits or self.limits)


def _environment(work: str) -> dict[str, str]:
    return {**program.ENV, "HOME": work, "TMPDIR": work}


def _start(
    argv: list[str], work: str, limits: Limits, pass_fds: tuple[int, ...] = ()
) -> subprocess.Popen[bytes]:
    def set_limits() -> None:  # runs in the child between fork and exec
        import resource

        cpu, disk = int(limits.cpu_s + 0.999), limits.disk_mb << 20
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        resource.setrlimit(resource.RLIMIT_AS, ((limits.memory_mb + 256) << 20,) * 2)
        resource.setrlimit(resource.RLIMIT_FSIZE, (disk, disk))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    pipe = subprocess.PIPE
    return subprocess.Popen(
        argv, cwd=work, env=_environment(work), stdin=pipe, stdout=pipe, stderr=pipe,
        start_new_session=True, preexec_fn=set_limits, pass_fds=pass_fds,
    )  # fmt: skip


class Pump:
    """Feeds a process's stdin and reads its capped output until it exits or a limit stops it."""

    def __init__(self, process: subprocess.Popen[bytes], limits: Limits) -> None:
        assert process.stdin and process.stdout and process.stderr
        self.process, self.limits = process, limits
        self.outputs = {process.stdout.fileno(): bytearray(), process.stderr.fileno(): bytearray()}
        self.truncated = dict.fromkeys(self.outputs, False)
        self.stopped_for: str | None = None

    def until_exit(self, stdin: bytes) -> RawOutcome:
        started = time.monotonic()
        self.feed(stdin, close=True)
        open_fds = set(self.outputs)
        deadline = started + self.limits.wall_s
        while open_fds and self.stopped_for is None:
            self.read(open_fds, deadline)
        if self.stopped_for:
            self.kill()
        try:
            self.process.wait(timeout=max(deadline - time.monotonic(), 0) + 1)
        except subprocess.TimeoutExpired:
            self.stopped_for = self.stopped_for or "timeout"
            self.kill()
            self.process.wait()
        self.kill()  # whatever the program left behind in its process group
        return self.outcome(self.process.returncode, started)

    def feed(self, data: bytes, close: bool) -> None:
        """Write stdin from a thread (a program may not read it at all)."""
        stdin = self.process.stdin
        assert stdin is not None

        def write() -> None:
            try:
                stdin.write(data)
                stdin.flush()
                if close:
                    stdin.close()
            except (BrokenPipeError, ValueError, OSError):
                pass

        threading.Thread(target=write, daemon=True).start()

    def read(self, open_fds: set[int], deadline: float, extra: int | None = None) -> list[int]:
        """Read what is ready (returns the ready fds not in `outputs`, e.g. a marker pipe)."""
        timeout = deadline - time.monotonic()
        if timeout <= 0:
            self.stopped_for = "timeout"
            return []
        ready = select.select(
            [*open_fds, *([extra] if extra is not None else [])], [], [], min(timeout, 1.0)
        )[0]
        for fd in ready:
            if fd not in self.outputs:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                open_fds.discard(fd)
                continue
            buffer, room = self.outputs[fd], self.limits.max_output_bytes - len(self.outputs[fd])
            buffer += chunk[: max(room, 0)]
            if len(chunk) > room:
                self.truncated[fd] = True
                self.stopped_for = "output_limit"
        return [fd for fd in ready if fd not in self.outputs]

    def kill(self) -> None:
        _kill_group(self.process.pid)

    def outcome(
        self, returncode: int | None, started: float, cpu_s: float = 0.0, alive: bool = False
    ) -> RawOutcome:
        stdout, stderr = (bytes(b) for b in self.outputs.values())
        truncated = list(self.truncated.values())
        exit_code = signal_number = None
        if returncode is not None:
            exit_code, signal_number = (returncode, None) if returncode >= 0 else (None, -returncode)
        for buffer in self.outputs.values():
            buffer.clear()
        self.truncated = dict.fromkeys(self.outputs, False)
        wall = time.monotonic() - started
        return RawOutcome(
            exit_code,
            signal_number,
            self.stopped_for,
            wall,
            cpu_s,
            0.0,
            stdout,
            stderr,
            truncated[0],
            truncated[1],
        )


class UnsafeSession(SessionBase):
    """A session in a child process (Python: gfcr's session loop; bash: a shell fed cells)."""

    def __init__(self, sandbox: UnsafeProcessSandbox, language: str, limits: Limits) -> None:
        super().__init__(language, limits)
        self._sandbox = sandbox
        self._process: subprocess.Popen[bytes] | None = None
        self._work: tempfile.TemporaryDirectory[str] | None = None
        self._fds: tuple[int, int] = (-1, -1)  # ours: cells out, markers in
        self._started = False

    def _run(self, job: Job) -> ExecResult:
        code, stdin, limits = job.code, job.stdin, job.limits
        if self._process is None or self._process.poll() is not None:
            self._start()
        assert self._process is not None
        pump = Pump(self._process, limits)
        started = time.monotonic()
        nonce = os.urandom(8).hex()
        if self.language == "python":
            request = program.json_bytes({"code": code, "stdin": stdin, "cpu_s": limits.cpu_s})
            _write_all(self._fds[0], len(request).to_bytes(4, "big") + request)
        else:
            pump.feed(program.bash_cell(code, stdin, self._marker_fd, nonce), close=False)
        reply = self._wait_for_cell(pump, nonce, started + limits.wall_s)
        if reply is None:
            pump.kill()
            returncode = self._process.wait()
            self._close_process()
            return make_result(
                pump.outcome(returncode if pump.stopped_for is None else None, started), limits
            )
        return make_result(
            pump.outcome(int(reply.get("exit_code", 1)), started, reply.get("cpu_s", 0.0)), limits
        )

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def _wait_for_cell(self, pump: Pump, nonce: str, deadline: float) -> dict[str, Any] | None:
        """The cell's reply, or None if the process died or a limit stopped it."""
        open_fds, marker, buffer = set(pump.outputs), self._fds[1], b""
        while pump.stopped_for is None and open_fds:
            if pump.read(open_fds, deadline, extra=marker):
                chunk = os.read(marker, 4096)
                if not chunk:
                    return None
                buffer += chunk
                reply = _parse_reply(buffer, nonce if self.language == "bash" else None)
                if reply is not None:
                    _drain(pump, open_fds)
                    return reply
        return None

    def _start(self) -> None:
        if self._started:
            self.restarts += 1
        self._close_process()
        self._started = True
        self._work = tempfile.TemporaryDirectory(prefix="gfcr-unsafe-session-")
        cells_read, cells_write = os.pipe()
        markers_read, markers_write = os.pipe()
        if self.language == "python":
            argv = [self._sandbox.python, "-I", PROGRAM, "session", "--fds", f"{cells_read},{markers_write}"]
        else:
            argv = ["bash", "--norc", "--noprofile"]
        limits = Limits(**{**self.limits.__dict__, "cpu_s": max(self.limits.cpu_s * 100, 3600)})
        self._process = _start(argv, self._work.name, limits, pass_fds=(cells_read, markers_write))
        os.close(cells_read)
        os.close(markers_write)
        self._fds, self._marker_fd = (cells_write, markers_read), markers_write

    def _close_process(self) -> None:
        if self._process is not None:
            _kill_group(self._process.pid)
            self._process.wait()
            for pipe in (self._process.stdin, self._process.stdout, self._process.stderr):
                if pipe is not None:
                    pipe.close()
            self._process = None
        for fd in self._fds:
            if fd >= 0:
                os.close(fd)
        self._fds = (-1, -1)
        if self._work is not None:
            self._work.cleanup()
            self._work = None

    def close(self) -> None:
        self._close_process()


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _parse_reply(buffer: bytes, nonce: str | None) -> dict[str, Any] | None:
    import json

    if nonce is not None:
        for line in buffer.split(b"\n")[:-1]:
            parts = line.decode("ascii", "replace").split()
            if len(parts) == 2 and parts[0] == nonce:
                return {"exit_code": int(parts[1])}
        return None
    if len(buffer) >= 4 and len(buffer) >= 4 + int.from_bytes(buffer[:4], "big"):
        return json.loads(buffer[4 : 4 + int.from_bytes(buffer[:4], "big")])
    return None


def _drain(pump: Pump, open_fds: set[int]) -> None:
    while open_fds and pump.stopped_for is None:
        ready = select.select(list(open_fds), [], [], 0)[0]
        if not ready:
            return
        pump.read(set(ready), time.monotonic() + 1.0)


def _write_all(fd: int, data: bytes) -> None:
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except BrokenPipeError as e:
        raise SandboxError("the session's process is gone") from e
