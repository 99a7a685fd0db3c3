"""The fork server inside a local sandbox: one warm interpreter, every job in fresh namespaces.

This file runs *inside* bubblewrap (copied in as `gfcr_supervisor.py`), as the sandbox's root
with only CAP_SYS_ADMIN, CAP_SETUID, CAP_SETGID, CAP_CHOWN and CAP_KILL, in a read-only
filesystem without network. It is standard-library only. Per job, two processes:

    server ── fork ──> init: pid 1 of a fresh PID namespace. It reads its own request (so the
                       server never holds job data), unshares mount and IPC namespaces, mounts
                       fresh tmpfs on /work, /tmp, /dev/shm and a /proc of its own, relays
                       stdin/stdout/stderr, enforces the wall clock and the output caps, and
                       reports the result (relay.py)
               init ── fork ──> program: rlimits, a fresh unprivileged uid, no new
                       privileges, the program's seccomp filter (seccomp.py), clean
                       environment; runs the code (Python inline, others exec)

The program cannot signal, trace or see init (pid 1, another uid). When the program is done,
or a limit is hit, init kills everything else in the namespace and exits: no background
process, daemon or double fork outlives its run. The next job is forked from the server,
which never ran job code, so no state passes from one job to the next.

Wire protocol (frames of `program.write_frame`) on the worker's stdin/stdout:
  host -> init : header JSON, code, each file's bytes, then (runs only) the stdin frame
  init -> host : result JSON, stdout bytes, stderr bytes        (sessions: once per call)
"""

from __future__ import annotations

import ctypes
import gc
import os
import resource
import signal
import sys
import traceback
from typing import Any, NoReturn

if __name__ == "__main__":  # inside the sandbox, the other modules sit beside this file as gfcr_*.py
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import gfcr_program as program  # type: ignore[import-not-found]
    import gfcr_relay as relay  # type: ignore[import-not-found]

    del sys.path[0]
else:
    from gfcr.sandboxes import program, relay

CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWPID = 0x00020000, 0x08000000, 0x20000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 0x4000, 1 << 18
PR_SET_DUMPABLE, PR_SET_SECCOMP, PR_SET_NO_NEW_PRIVS, SECCOMP_MODE_FILTER = 4, 22, 38, 2
PROGRAM_FILTER = "/run/gfcr/seccomp-program.bpf"  # seccomp.PROGRAM_FILTER_PATH, put there by bubblewrap
EXIT_NO_MORE_JOBS, EXIT_INTERNAL_ERROR = 3, 70
# Imported once by the server so that jobs find them loaded (HumanEval-style code uses these).
PRELOAD = (
    "abc array ast atexit base64 bisect collections copy dataclasses datetime decimal enum fcntl "
    "fractions functools hashlib heapq io itertools json linecache math operator pickle random re "
    "statistics string textwrap threading traceback types typing"
).split()


def main() -> NoReturn:
    """Start the server: move the control pipes off fds 0/1, preload modules, announce readiness."""
    requests, replies = os.dup(0), os.dup(1)
    try:
        with open(PROGRAM_FILTER, "rb") as file:  # no filter, no jobs: the worker fails to start
            seccomp_filter = SeccompFilter(file.read())
    except OSError as e:
        sys.exit(f"gfcr supervisor: cannot read the programs' seccomp filter: {e}")
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    for name in PRELOAD:
        __import__(name)
    sys.path.insert(0, "/run/gfcr/modules")  # modules the sandbox was asked to preload
    for name in sys.argv[1:]:
        __import__(name)
    del sys.path[0]
    own_pid_namespace = os.open("/proc/self/ns/pid", os.O_RDONLY)
    gc.collect()
    gc.freeze()  # forked jobs then share these pages instead of copying them on the first GC
    program.write_json(replies, {"ready": True, "python": sys.version.split()[0]})
    while True:
        unshare(CLONE_NEWPID)  # the next child is pid 1 of a new PID namespace
        init = os.fork()
        if init == 0:
            _run_job(requests, replies, seccomp_filter)
        _check(_libc.setns(own_pid_namespace, CLONE_NEWPID), "setns")  # so that unshare works again
        _, status = os.waitpid(init, 0)
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) == EXIT_NO_MORE_JOBS:
            os._exit(0)
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) == EXIT_INTERNAL_ERROR:
            program.write_json(replies, {"worker_error": "the job's init process failed; see the worker log"})


def _run_job(requests: int, replies: int, seccomp_filter: SeccompFilter) -> NoReturn:
    try:
        try:
            header = program.read_json(requests)
        except EOFError:
            os._exit(EXIT_NO_MORE_JOBS)
        Job(header, requests, replies, seccomp_filter).serve()
    except BaseException:
        traceback.print_exc()
        os._exit(EXIT_INTERNAL_ERROR)
    os._exit(0)


# -- kernel calls Python 3.11 does not wrap -----------------------------------------------------

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def unshare(flags: int) -> None:
    _check(_libc.unshare(flags), "unshare")


def mount(source: str, target: str, fstype: str | None, flags: int, options: str | None = None) -> None:
    encoded = [x.encode() if x is not None else None for x in (source, target, fstype, options)]
    _check(_libc.mount(encoded[0], encoded[1], encoded[2], flags, encoded[3]), f"mount {target}")


def prctl(option: int, value: int) -> None:
    _check(_libc.prctl(option, value, 0, 0, 0), f"prctl({option})")


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


class _SockFprog(ctypes.Structure):  # struct sock_fprog
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


class SeccompFilter:
    """A compiled BPF program (struct sock_filter[]), ready to install; kept for every job."""

    def __init__(self, bpf: bytes) -> None:
        if not bpf or len(bpf) % 8:
            raise ValueError(f"a seccomp BPF program is a non-empty multiple of 8 bytes, got {len(bpf)}")
        self._buffer = ctypes.create_string_buffer(bpf, len(bpf))
        self._program = _SockFprog(len(bpf) // 8, ctypes.addressof(self._buffer))

    def install(self) -> None:
        """Apply the filter to this process and all it starts (needs no_new_privs or CAP_SYS_ADMIN)."""
        _check(_libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(self._program), 0, 0), "seccomp")


def clear_inheritable_capabilities() -> None:
    """Empty the inheritable set (bubblewrap fills it with the worker's capabilities)."""
    header, data = _CapHeader(0x20080522, 0), (_CapData * 2)()  # _LINUX_CAPABILITY_VERSION_3
    _check(_libc.capget(ctypes.byref(header), data), "capget")
    for item in data:
        item.inheritable = 0
    _check(_libc.capset(ctypes.byref(header), data), "capset")


# -- one job ---------------------------------------------------------------------------------------


class Job:
    """One run or session, served by its init process: namespaces, mounts, the program, the relay."""

    def __init__(
        self, header: dict[str, Any], requests: int, replies: int, seccomp_filter: SeccompFilter
    ) -> None:
        self.header, self.requests, self.replies = header, requests, replies
        self.seccomp_filter = seccomp_filter
        self.limits: dict[str, Any] = header["limits"]
        self.uid: int = header["uid"]
        self.code = program.read_frame(requests).decode("utf-8", "surrogateescape")
        self.files = [(spec, program.read_frame(requests)) for spec in header["files"]]
        self.session: str | None = header.get("session")

    def serve(self) -> None:
        self._isolate()
        pipes = relay.Pipes(session=self.session is not None)
        child = os.fork()
        if child == 0:
            try:
                self._become_program(pipes)
            except BaseException:
                traceback.print_exc()
            os._exit(72)
        pipes.keep_init_ends()
        if self.session is not None:
            self._serve_session(pipes, child)
            return
        stdin_size = relay.LENGTH.unpack(program.read_exact(self.requests, relay.LENGTH.size))[0]
        self._report(
            relay.Relay(pipes, self.limits, self.requests, child, stdin_size=stdin_size).until_exit()
        )

    # -- namespaces, mounts, files --------------------------------------------------------------

    def _isolate(self) -> None:
        unshare(CLONE_NEWNS | CLONE_NEWIPC)
        mount("none", "/", None, MS_REC | MS_PRIVATE)
        mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)  # this PID namespace's
        size = f"size={int(self.limits['disk_mb'])}m,nr_inodes=16384"
        mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, f"{size},mode=1777")
        if os.path.isdir("/dev/shm"):
            mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, f"{size},mode=1777")
        mount("tmpfs", "/work", "tmpfs", MS_NOSUID | MS_NODEV, f"{size},mode=0755")
        for spec, data in self.files:
            self._write_file(spec["path"], data, spec.get("mode", 0o644))
        for root, directories, files in os.walk("/work"):  # hand /work over to the job's uid
            for name in directories + files:
                os.lchown(os.path.join(root, name), self.uid, self.uid)
        os.chmod("/work", 0o700)
        os.chown("/work", self.uid, self.uid)

    def _write_file(self, path: str, data: bytes, mode: int) -> None:
        parts = path.split("/")
        if path.startswith("/") or any(part in ("", ".", "..") for part in parts):
            raise ValueError(f"file path {path!r} is not a plain relative path")
        directory = "/work"
        for part in parts[:-1]:
            directory = f"{directory}/{part}"
            if not os.path.isdir(directory):
                os.mkdir(directory, 0o755)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
        fd = os.open(f"{directory}/{parts[-1]}", flags, mode & 0o777)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)

    # -- the program ------------------------------------------------------------------------------

    def _become_program(self, pipes: relay.Pipes) -> NoReturn:
        os.setsid()
        self._set_rlimits()
        with open("/proc/self/oom_score_adj", "w") as f:  # the OOM killer takes the job, not the server
            f.write("1000")
        source_fd = None
        if self.session is None and not self.header.get("inline"):
            source_fd = os.memfd_create("program", 0)
            os.write(source_fd, self.code.encode("utf-8", "surrogateescape"))
            os.lseek(source_fd, 0, os.SEEK_SET)
        pipes.become_program_fds(source_fd)
        clear_inheritable_capabilities()
        os.setgroups([])
        os.setresgid(self.uid, self.uid, self.uid)
        os.setresuid(self.uid, self.uid, self.uid)  # drops every capability too
        prctl(PR_SET_NO_NEW_PRIVS, 1)
        prctl(PR_SET_DUMPABLE, 1)  # the uid change cleared it; programs expect /proc/self as usual
        self.seccomp_filter.install()  # last: no namespaces, mounts, keyrings, tracing … (seccomp.py)
        os.chdir("/work")
        os.environ.clear()
        os.environ.update(program.ENV)
        if self.session == "python":
            program.python_session(3, 4)
        if self.header.get("inline"):
            program.run_python(self.code)
        for number in (signal.SIGPIPE, signal.SIGXFSZ):  # Python ignores them; programs expect defaults
            signal.signal(number, signal.SIG_DFL)
        argv = self.header["argv"]
        os.execvpe(argv[0], argv, program.ENV)

    def _set_rlimits(self) -> None:
        limits = self.limits
        cpu = int(limits["cpu_s"] + 0.999)
        if self.session is not None:
            cpu = max(cpu * 100, 3600)  # a session's budget; each call gets `cpu_s` more (program.py)
        disk = int(limits["disk_mb"]) << 20
        settings = {
            resource.RLIMIT_CPU: (cpu, cpu + 1),
            resource.RLIMIT_NPROC: (limits["max_processes"],) * 2,
            resource.RLIMIT_FSIZE: (disk, disk),
            resource.RLIMIT_CORE: (0, 0),
            resource.RLIMIT_NOFILE: (1024, 1024),
        }
        if self.header.get("address_space_mb"):  # no cgroup to bound memory: bound the address space
            size = int(self.header["address_space_mb"]) << 20
            settings[resource.RLIMIT_AS] = (size, size)
        for kind, value in settings.items():
            resource.setrlimit(kind, value)

    # -- reporting ------------------------------------------------------------------------------

    def _report(self, outcome: dict[str, Any]) -> None:
        stdout, stderr = outcome.pop("stdout"), outcome.pop("stderr")
        program.write_json(self.replies, outcome)
        program.write_frame(self.replies, stdout)
        program.write_frame(self.replies, stderr)

    def _serve_session(self, pipes: relay.Pipes, child: int) -> None:
        """Relay calls until the host closes the session or the program ends."""
        if self.session == "python":
            os.close(pipes.stdin[1])  # cells bring their own stdin; fd 0 reads end of file
        program.write_json(self.replies, {"ready": True})
        spent = relay.namespace_cpu_seconds()
        while True:
            try:
                call = program.read_json(self.requests)
            except EOFError:
                call = {"kind": "close"}
            if call["kind"] == "close":
                relay.kill_everyone_else()  # every process of the session is gone after this
                program.write_json(self.replies, {"closed": True})
                return
            code = program.read_frame(self.requests).decode("utf-8", "surrogateescape")
            stdin = program.read_frame(self.requests).decode("utf-8", "surrogateescape")
            limits = {**self.limits, **call["limits"]}
            nonce = os.urandom(8).hex()
            relay.thaw_everyone_else()
            cells = relay.Relay(pipes, limits, self.requests, child)
            if self.session == "python":
                request = {"code": code, "stdin": stdin, "cpu_s": limits["cpu_s"], "nonce": nonce}
                cell = program.json_bytes(request)
                outcome = cells.until_cell_done(relay.LENGTH.pack(len(cell)) + cell, nonce, framed=True)
            else:
                outcome = cells.until_cell_done(program.bash_cell(code, stdin, 4, nonce), nonce, framed=False)
            if outcome["alive"]:
                relay.freeze_everyone_else()  # what the cell left running waits for the next call
            # every process of the session, the ones the cell left running included, since the last call
            total = relay.namespace_cpu_seconds()
            outcome["cpu_s"], spent = total - spent, total
            self._report(outcome)
            if not outcome["alive"]:
                return


if __name__ == "__main__":
    main()
