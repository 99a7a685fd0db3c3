"""The job's I/O relay, inside a local sandbox: stdin in, capped stdout/stderr out, the wall clock.

Runs in a job's init process (pid 1 of the job's PID namespace, see supervisor.py); standard
library only, copied into the sandbox as `gfcr_relay.py`. `Relay` feeds the program its stdin
(streamed from the host), reads its output up to the caps, watches the clock, reaps every
process of the job, and when the program is done — or a limit is hit — kills whatever is
left in the namespace and reports.
"""

from __future__ import annotations

import json
import os
import resource
import select
import signal
import struct
import time
from typing import Any

LENGTH = struct.Struct(">I")  # a frame's length
CHUNK = 1 << 16
MAX_MARKER = 1 << 16  # the longest cell-done message a session loop writes


class Pipes:
    """The pipes between init and the program, and who keeps which end.

    program fds: 0 stdin, 1 stdout, 2 stderr; sessions add 3 (cells in, Python only) and
    4 (cell-done messages out).
    """

    def __init__(self, session: bool) -> None:
        self.stdin = os.pipe()
        self.stdout = os.pipe()
        self.stderr = os.pipe()
        self.cells = os.pipe() if session else None
        self.markers = os.pipe() if session else None

    def keep_init_ends(self) -> None:
        """In init: keep the writing end of stdin and cells and the reading end of the rest."""
        to_program = [self.stdin, *filter(None, (self.cells,))]
        for pipe in [self.stdin, self.stdout, self.stderr, *filter(None, (self.cells, self.markers))]:
            os.close(pipe[0] if pipe in to_program else pipe[1])
        for _, write_end in to_program:
            os.set_blocking(write_end, False)

    def become_program_fds(self, source_fd: int | None) -> None:
        """In the program: fds 0-2 (and 3-4, or the source file at 3), every other fd closed."""
        wanted = {0: self.stdin[0], 1: self.stdout[1], 2: self.stderr[1]}
        if self.cells and self.markers:
            wanted.update({3: self.cells[0], 4: self.markers[1]})
        elif source_fd is not None:
            wanted[3] = source_fd
        moved = {target: os.dup(fd) for target, fd in wanted.items()}  # dup first: targets may collide
        for target, fd in moved.items():
            os.dup2(fd, target, inheritable=True)
        os.closerange(len(wanted), 1 << 16)


def freeze_everyone_else(timeout_s: float = 1.0) -> None:
    """From pid 1: stop every other process of the namespace (SIGSTOP cannot be caught or ignored).

    A session is frozen between calls, so what a cell leaves running (a thread, a child, a
    daemon) takes no CPU while the session is idle. A process forked while the signal is being
    delivered is caught by the next round; the loop ends when every process is stopped or dead.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            os.kill(-1, signal.SIGSTOP)
        except ProcessLookupError:
            return
        if all(state in "TtZX" for state, _ in _others()) or time.monotonic() > deadline:
            return
        time.sleep(0.001)


def thaw_everyone_else() -> None:
    """From pid 1: let every process stopped by `freeze_everyone_else` run again."""
    try:
        os.kill(-1, signal.SIGCONT)
    except ProcessLookupError:
        pass


def namespace_cpu_seconds() -> float:
    """CPU seconds of every process this PID namespace has run, from its pid 1.

    The reaped ones are in pid 1's children usage (a process counts the descendants it reaped);
    each living or unreaped one adds its own time and that of the children it reaped.
    """
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    ticks = sum(cpu for _, cpu in _others())
    return usage.ru_utime + usage.ru_stime + ticks / os.sysconf("SC_CLK_TCK")


def _others() -> list[tuple[str, int]]:
    """(state, utime + stime + cutime + cstime in clock ticks) of every process but pid 1."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or name == "1":
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as file:
                fields = file.read().rpartition(b")")[2].split()  # the command name may hold spaces
        except OSError:  # gone meanwhile
            continue
        found.append((fields[0].decode(), sum(int(x) for x in fields[11:15])))
    return found


def kill_everyone_else() -> None:
    """From pid 1: SIGKILL every other process of the namespace, then reap them all."""
    try:
        os.kill(-1, signal.SIGKILL)
    except ProcessLookupError:
        pass
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


class Relay:
    """init's event loop for one run or session call."""

    def __init__(
        self, pipes: Pipes, limits: dict[str, Any], requests: int, program: int, *, stdin_size: int = 0
    ) -> None:
        self.pipes, self.requests, self.program = pipes, requests, program
        self.program_fd = os.pidfd_open(program)  # readable once the program has exited
        self.stdin_left = stdin_size  # bytes of the host's stdin frame not yet read
        self.pending = b""  # bytes read for the program, not yet written to it
        self.input_fd = pipes.stdin[1]  # where `pending` goes: the program's stdin, or its cells pipe
        self.cap = int(limits["max_output_bytes"])
        self.output = {pipes.stdout[0]: bytearray(), pipes.stderr[0]: bytearray()}
        self.truncated = {pipes.stdout[0]: False, pipes.stderr[0]: False}
        self.open_outputs = set(self.output)
        self.started = time.monotonic()
        self.deadline = self.started + float(limits["wall_s"])
        self.status: int | None = None  # the program's wait status, once it has exited
        self.stopped_for: str | None = None
        self.cell: dict[str, Any] | None = None  # a session cell's reply, once it is done
        self.cell_nonce: str | None = None  # a session call's nonce, which its done message carries
        self.framed = False  # a session's done messages are JSON frames (Python), not lines (bash)
        self.markers = b""

    # -- the two ways to run -----------------------------------------------------------------

    def until_exit(self) -> dict[str, Any]:
        """A run: until the program has exited (or was stopped), everything else killed, output drained."""
        if self.stdin_left == 0:
            self._close_input()
        while self.status is None and self.stopped_for is None:
            self._step()
        return self._finish()

    def until_cell_done(self, cell: bytes, nonce: str, *, framed: bool) -> dict[str, Any]:
        """A session call: send `cell`, run until the program says it is done, exits or is stopped.

        The program says so with the call's `nonce`: in a JSON frame (`framed`, Python cells, sent
        on their own pipe) or a `<nonce> <status>` line (bash). Messages with another nonce are
        dropped, so a cell that writes one cannot put the replies out of step with the calls.
        """
        self.pending, self.cell_nonce, self.framed = cell, nonce, framed
        if framed:
            assert self.pipes.cells is not None
            self.input_fd = self.pipes.cells[1]
        while self.status is None and self.cell is None and self.stopped_for is None:
            self._step()
        if self.cell is None or self.status is not None or self.stopped_for:
            return self._finish()
        self._drain(blocking=False)
        reply = self.cell
        return self._outcome(
            int(reply.get("exit_code", 1)), None, reply.get("cpu_s", 0.0), reply.get("max_rss_kb", 0)
        )

    # -- the loop ----------------------------------------------------------------------------

    def _step(self) -> None:
        timeout = self.deadline - time.monotonic()
        if timeout <= 0:
            self.stopped_for = "timeout"
            return
        readers = [*self.open_outputs, self.program_fd]
        if self.pipes.markers:
            readers.append(self.pipes.markers[0])
        if self.stdin_left and len(self.pending) < CHUNK:
            readers.append(self.requests)
        writers = [self.input_fd] if self.pending and self.input_fd >= 0 else []
        readable, writable, _ = select.select(readers, writers, [], min(timeout, 1.0))
        for fd in readable:
            if fd == self.program_fd:
                self._reap()
            elif self.pipes.markers and fd == self.pipes.markers[0]:
                self._read_marker()
            elif fd == self.requests:
                self._read_stdin_from_host()
            elif self._read_output(fd):
                self.stopped_for = "output_limit"
        if writable:
            self._write_input()
        self._reap()  # orphans the program left behind end up here, as zombies

    def _reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.program:
                self.status = status

    def _read_stdin_from_host(self) -> None:
        chunk = os.read(self.requests, min(self.stdin_left, CHUNK))
        if not chunk:
            raise EOFError("the host closed the pipe in the middle of stdin")
        self.stdin_left -= len(chunk)
        if self.input_fd >= 0:
            self.pending += chunk

    def _write_input(self) -> None:
        try:
            written = os.write(self.input_fd, self.pending[:CHUNK])
        except BlockingIOError:
            return
        except BrokenPipeError:  # the program closed its stdin: the rest is dropped
            self.pending = b""
            self._close_input()
            return
        self.pending = self.pending[written:]
        if not self.pending and not self.stdin_left and self.cell_nonce is None and not self.pipes.cells:
            self._close_input()  # a run's stdin is complete: the program sees end of file

    def _close_input(self) -> None:
        if self.input_fd >= 0:
            os.close(self.input_fd)
            self.input_fd = -1

    def _read_output(self, fd: int) -> bool:
        """Read what `fd` has; True if the output is now over its cap."""
        chunk = os.read(fd, CHUNK)
        if not chunk:
            self.open_outputs.discard(fd)
            return False
        buffer = self.output[fd]
        room = self.cap - len(buffer)
        buffer += chunk[: max(room, 0)]
        if len(chunk) > room:
            self.truncated[fd] = True
        return self.truncated[fd]

    def _read_marker(self) -> None:
        """A session's cell-done message: a frame (Python) or a `<nonce> <status>` line (bash)."""
        assert self.pipes.markers is not None
        self.markers += os.read(self.pipes.markers[0], 1 << 16)
        if self.framed:
            while len(self.markers) >= LENGTH.size:
                (size,) = LENGTH.unpack(self.markers[: LENGTH.size])
                if size > MAX_MARKER:  # not a reply of the session loop: nothing after it can be framed
                    self.markers = b""
                    break
                end = LENGTH.size + size
                if len(self.markers) < end:
                    break
                frame, self.markers = self.markers[LENGTH.size : end], self.markers[end:]
                try:
                    reply = dict(json.loads(frame))
                except (ValueError, TypeError):
                    continue
                if reply.get("nonce") == self.cell_nonce:
                    self.cell = reply
        else:
            lines = self.markers.split(b"\n")
            for line in lines[:-1]:
                parts = line.decode("ascii", "replace").split()
                if len(parts) == 2 and parts[0] == self.cell_nonce and parts[1].lstrip("-").isdigit():
                    self.cell = {"exit_code": int(parts[1])}
            self.markers = lines[-1][-MAX_MARKER:]
        if self.cell is not None:
            self.markers = b""

    def _drain(self, *, blocking: bool, deadline: float = 0.0) -> None:
        """Read what is left of the output, up to the caps (blocking: until end of file or deadline)."""
        while self.open_outputs:
            wait = max(deadline - time.monotonic(), 0) if blocking else 0
            readable, _, _ = select.select(list(self.open_outputs), [], [], wait)
            if not readable:
                return
            for fd in readable:
                self._read_output(fd)

    # -- the result --------------------------------------------------------------------------

    def _finish(self) -> dict[str, Any]:
        """The program is done or stopped: kill and reap the rest, drain, keep the protocol in step."""
        kill_everyone_else()
        self._drain(blocking=True, deadline=time.monotonic() + 2.0)  # every writer is dead: EOF comes
        while self.stdin_left:  # consume the stdin the program never read
            chunk = os.read(self.requests, min(self.stdin_left, CHUNK))
            if not chunk:
                raise EOFError("the host closed the pipe in the middle of stdin")
            self.stdin_left -= len(chunk)
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # the program and every process it left
        exit_code = signal_number = None
        if self.status is not None and self.stopped_for is None:
            if os.WIFEXITED(self.status):
                exit_code = os.WEXITSTATUS(self.status)
            elif os.WIFSIGNALED(self.status):
                signal_number = os.WTERMSIG(self.status)
        return self._outcome(
            exit_code, signal_number, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, alive=False
        )

    def _outcome(
        self, exit_code: int | None, signal_number: int | None, cpu: float, rss: int, alive: bool = True
    ) -> dict[str, Any]:
        stdout, stderr = self.pipes.stdout[0], self.pipes.stderr[0]
        os.close(self.program_fd)
        return {
            "exit_code": exit_code,
            "signal": signal_number,
            "stopped_for": self.stopped_for,
            "wall_s": time.monotonic() - self.started,
            "cpu_s": cpu,
            "max_rss_kb": rss,
            "stdout_truncated": self.truncated[stdout],
            "stderr_truncated": self.truncated[stderr],
            "alive": alive,
            "stdout": bytes(self.output[stdout]),
            "stderr": bytes(self.output[stderr]),
        }
