"""The bubblewrap command line of a local sandbox worker, and whether bubblewrap works here.

The worker sees the host's `/usr` (and the merged-/usr links `/bin`, `/lib` …) read-only,
a handful of `/etc` files, fresh `/proc` and `/dev`, and nothing else of the host: not `/etc`,
`/home`, `/root`, the project, or any process. It has no network and its own PID, IPC and UTS
namespaces; it keeps only the capabilities the supervisor needs to build each job's namespaces
and to drop to the job's uid (see supervisor.py). As root, bubblewrap would otherwise keep
every capability, which is why this list is explicit. bubblewrap applies the worker's seccomp
filter, and hands the program's filter to the supervisor as a file (see seccomp.py).

Files the worker needs (the supervisor's modules, the program's filter) go in as copies
(`--ro-bind-data` from memfds), not bind mounts: no host path shows in `/proc/self/mountinfo`.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from gfcr.errors import SandboxUnavailableError
from gfcr.sandboxes.program import ENV
from gfcr.sandboxes.seccomp import PROGRAM_FILTER_PATH, program_filter, worker_filter

INSIDE = "/run/gfcr"
CAPABILITIES = ("CAP_SYS_ADMIN", "CAP_SETUID", "CAP_SETGID", "CAP_CHOWN", "CAP_KILL")
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "alternatives", "mime.types")
MERGED_USR = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
HERE = Path(__file__).resolve().parent


def default_python() -> str:
    """The interpreter workers run: Debian's /usr/bin/python3 where present, else this one's base."""
    if Path("/usr/bin/python3").exists():
        return "/usr/bin/python3"
    return os.path.realpath(getattr(sys, "_base_executable", sys.executable))


@dataclass(frozen=True)
class WorkerFds:
    """Readable fds that one worker's bubblewrap reads to their end: fresh ones for each worker.

    `seccomp` holds the worker's filter; `files` maps a path inside the sandbox to the fd holding
    its content (the supervisor's modules, preloaded modules, the programs' filter).
    """

    seccomp: int
    files: dict[str, int]

    def all(self) -> tuple[int, ...]:
        """Every fd, for `subprocess.Popen(pass_fds=...)`."""
        return (self.seccomp, *self.files.values())


@contextlib.contextmanager
def worker_fds(modules: Mapping[str, str | Path] | None = None) -> Iterator[WorkerFds]:
    """The fds of one worker's command (`worker_command(fds=...)`), closed on leaving the block.

    `modules` (name -> file) are placed in the sandbox and imported by the supervisor at start,
    so that every job finds them already imported.
    """
    contents = {f"{INSIDE}/gfcr_{name}.py": _own_module(name) for name in ("supervisor", "program", "relay")}
    for name, source in (modules or {}).items():
        contents[f"{INSIDE}/modules/{name}.py"] = Path(source).read_bytes()
    contents[PROGRAM_FILTER_PATH] = program_filter()
    with contextlib.ExitStack() as stack:
        seccomp = stack.enter_context(_memfd("seccomp-worker", worker_filter()))
        files = {path: stack.enter_context(_memfd(Path(path).name, data)) for path, data in contents.items()}
        yield WorkerFds(seccomp, files)


@functools.cache
def _own_module(name: str) -> bytes:
    return (HERE / f"{name}.py").read_bytes()


@contextlib.contextmanager
def _memfd(name: str, data: bytes) -> Iterator[int]:
    """An anonymous in-memory file holding `data`, positioned at its start."""
    fd = os.memfd_create(f"gfcr-{name}", os.MFD_CLOEXEC)
    try:
        os.write(fd, data)
        os.lseek(fd, 0, os.SEEK_SET)
        yield fd
    finally:
        os.close(fd)


def worker_command(
    python: str | None = None, bwrap: str | None = None, fds: WorkerFds | None = None
) -> list[str]:
    """The full command that starts one worker (bubblewrap, then the supervisor inside).

    `fds` come from `worker_fds()` (pass them to the process: `fds.all()`); the supervisor
    cannot start without them, so only a command for something else (a benchmark) leaves them out.

    >>> command = worker_command("/usr/bin/python3", "/usr/bin/bwrap")
    >>> command[0], "--unshare-net" in command, command[-3:]
    ('/usr/bin/bwrap', True, ['/usr/bin/python3', '-I', '/run/gfcr/gfcr_supervisor.py'])
    """
    python = python or default_python()
    command = [bwrap or find_bwrap(), "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    command += [
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        "--clearenv",
        "--hostname",
        "sandbox",
    ]
    command += ["--cap-drop", "ALL"]
    for capability in CAPABILITIES:
        command += ["--cap-add", capability]
    command += ["--ro-bind", "/usr", "/usr"]
    for name in MERGED_USR:
        path = Path("/") / name
        if path.is_symlink():
            command += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            command += ["--ro-bind", str(path), str(path)]
    command += [
        "--perms",
        "0755",
        "--dir",
        "/etc",
        "--perms",
        "0755",
        "--dir",
        INSIDE,
    ]  # else bwrap makes 0700
    for name in ETC_FILES:
        command += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    prefix = _install_prefix(python)
    if prefix is not None:  # an interpreter outside /usr (pyenv, conda): its install tree, read-only
        command += ["--ro-bind", prefix, prefix]
    command += ["--proc", "/proc", "--dev", "/dev", "--dir", "/tmp", "--dir", "/work"]
    preloaded: list[str] = []
    if fds is not None:
        command += ["--seccomp", str(fds.seccomp)]
        for inside, fd in fds.files.items():
            command += ["--perms", "0644", "--ro-bind-data", str(fd), inside]
        preloaded = [Path(inside).stem for inside in fds.files if inside.startswith(f"{INSIDE}/modules/")]
    for key, value in ENV.items():
        command += ["--setenv", key, value]
    supervisor = [python, "-I", f"{INSIDE}/gfcr_supervisor.py", *preloaded]
    return [*command, "--remount-ro", "/", "--chdir", "/", *supervisor]


def _install_prefix(python: str) -> str | None:
    real = Path(os.path.realpath(python))
    if real.is_relative_to("/usr") or real.is_relative_to("/bin"):
        return None
    return str(real.parent.parent)  # <prefix>/bin/python3.X


def find_bwrap() -> str:
    """The bubblewrap executable; `SandboxUnavailableError` saying how to install it if missing."""
    path = shutil.which("bwrap") or ("/usr/bin/bwrap" if Path("/usr/bin/bwrap").exists() else None)
    if path is None:
        raise SandboxUnavailableError(
            "bubblewrap is not installed; install it (Debian/Ubuntu: apt-get install bubblewrap, "
            "Fedora: dnf install bubblewrap) or run `make setup`"
        )
    return path


@functools.cache
def check_local_backend() -> None:
    """Raise `SandboxUnavailableError` naming the fix unless local sandboxes can start here."""
    if not sys.platform.startswith("linux"):
        raise SandboxUnavailableError(f"the local sandbox needs Linux namespaces; this is {sys.platform}")
    bwrap = find_bwrap()
    if os.geteuid() != 0:
        raise SandboxUnavailableError(
            "the local sandbox runs each job as its own unprivileged uid, which needs root; run as root "
            "(as CI does), or use make_sandbox('docker') with a Docker engine"
        )
    try:
        with worker_fds() as fds:  # the worker's sandbox, seccomp filter included, running `true`
            probe = [*worker_command(bwrap=bwrap, fds=fds)[:-3], "/usr/bin/true"]
            result = subprocess.run(probe, capture_output=True, timeout=30, pass_fds=fds.all())
    except (OSError, subprocess.TimeoutExpired) as e:
        raise SandboxUnavailableError(f"bubblewrap could not run ({e}); check that {bwrap} works") from e
    if result.returncode != 0:
        message = result.stderr.decode(errors="replace").strip()
        raise SandboxUnavailableError(
            f"bubblewrap cannot create namespaces here ({message}); in a container, allow it "
            "(e.g. docker run --privileged, or --security-opt seccomp=unconfined --cap-add SYS_ADMIN)"
        )
