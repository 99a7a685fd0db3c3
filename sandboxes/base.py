"""The sandbox contract: `Sandbox`, `Session`, `Limits` and `ExecResult`.

A sandbox runs untrusted code and reports what happened; it never raises because of what the
code did (a crash, a loop, a flood of output is a `status`), only when the sandbox itself cannot
work (`gfcr.errors.SandboxError`). Backends live in their own modules; `make_sandbox` picks one.

`Sandbox` and `Session` are Protocols: the contract that code taking a sandbox is typed against,
and all a third party's backend must provide (`isinstance(x, Sandbox)` checks it at run time).
gfcr's own backends do not repeat it: they subclass `gfcr.sandboxes.backend.SandboxBase` and
`SessionBase`, which subclass these Protocols (the type checker holds them to the contract) and
implement the half every backend shares.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, Protocol, Self, runtime_checkable

from gfcr.errors import ConfigError

Status = Literal["ok", "error", "timeout", "memory", "output_limit", "killed"]
STATUSES: tuple[Status, ...] = ("ok", "error", "timeout", "memory", "output_limit", "killed")
Files = Mapping[str, str | bytes]


@dataclass(frozen=True)
class Limits:
    """Resource limits of one run (or of one call in a session).

    `wall_s` is real time (it stops `sleep` as well as loops), `cpu_s` CPU time per process,
    `memory_mb` the memory of everything the run starts, `max_processes` the processes and
    threads it may have at once, `max_output_bytes` the cap on stdout and on stderr each,
    `disk_mb` the size of its writable directories and of any one file it writes.

    >>> Limits(wall_s=2).wall_s, Limits().memory_mb
    (2, 512)
    >>> Limits(memory_mb=0)
    Traceback (most recent call last):
    ...
    gfcr.errors.ConfigError: Limits.memory_mb must be a positive number, got 0
    """

    wall_s: float = 10.0
    cpu_s: float = 10.0
    memory_mb: int = 512
    max_processes: int = 64
    max_output_bytes: int = 1_000_000
    disk_mb: int = 64

    def __post_init__(self) -> None:
        for name in ("wall_s", "cpu_s", "memory_mb", "max_processes", "max_output_bytes", "disk_mb"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ConfigError(f"Limits.{name} must be a positive number, got {value!r}")


@dataclass(frozen=True)
class ExecResult:
    """What a run did.

    `status`: "ok" (exit 0), "error" (non-zero exit), "timeout" (wall or CPU limit),
    "memory" (memory limit), "output_limit" (stdout or stderr over `max_output_bytes`; the run
    was stopped), "killed" (ended by a signal for another reason). `exit_code` is the exit
    status, or minus the signal number, or None if unknown. `stdout`/`stderr` are decoded as
    UTF-8; text cut at the cap ends with a line saying so.

    >>> ExecResult("ok", 0, "4\\n", "", 0.01, 0.01, 9.5).ok
    True
    """

    status: Status
    exit_code: int | None
    stdout: str
    stderr: str
    wall_s: float
    cpu_s: float
    max_rss_mb: float

    @property
    def ok(self) -> bool:
        """Whether the run exited with status 0 within its limits."""
        return self.status == "ok"


@runtime_checkable
class Session(Protocol):
    """A persistent interpreter (Python) or shell (bash): state survives between `run` calls.

    Each call has its own limits; a call that hits one ends the session's process (`alive`
    turns False), and the next call starts a fresh one (`restarts` counts how often).
    `close()` always cleans up; sessions are context managers.
    """

    language: str
    restarts: int

    @property
    def alive(self) -> bool:
        """Whether the session's process is running, with its state."""
        ...

    def run(self, code: str, *, stdin: str = "", limits: Limits | None = None) -> ExecResult: ...

    def close(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc_info: object) -> None: ...


@runtime_checkable
class Sandbox(Protocol):
    """Runs code in isolation: `run` from any thread, `arun` from asyncio, `session` for state."""

    limits: Limits

    @property
    def backend(self) -> str:
        """The backend's name: "local", "docker" or "unsafe-process"."""
        ...

    def run(
        self,
        code: str,
        *,
        language: str = "python",
        stdin: str = "",
        files: Files | None = None,
        limits: Limits | None = None,
    ) -> ExecResult:
        """Run `code` as a program in a fresh, private work directory holding `files`."""
        ...

    async def arun(
        self,
        code: str,
        *,
        language: str = "python",
        stdin: str = "",
        files: Files | None = None,
        limits: Limits | None = None,
    ) -> ExecResult: ...

    def session(self, language: str = "python", *, limits: Limits | None = None) -> Session: ...

    def close(self) -> None: ...
