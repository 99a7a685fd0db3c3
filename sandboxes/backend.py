"""What gfcr's backends share: the contract's common half, written once.

`gfcr.sandboxes.base` holds the contract, the `Sandbox` and `Session` Protocols, which any
backend (a third party's too) satisfies. gfcr's own backends subclass `SandboxBase` and
`SessionBase` here, which subclass those Protocols (so the type checker holds them to the
contract) and implement everything but the backend's own work, `_run` and `session`:

- `run` checks what every backend checks first — the language, the files' paths, that code and
  stdin are text — and hands the backend a `Job`; a bad path or language is a `ConfigError`,
  text that cannot be encoded an "error" result (nothing runs, no slot is taken);
- `run` then admits at most the backend's concurrency of runs at once, the others queue
  (`queue_timeout_s`, see `gfcr.core.admission`: their wait is recorded as "sandbox", past the
  deadline they fail with a `QueueTimeoutError`);
- `arun`, `close` and the context manager.

Backends report raw facts (exit code, signal, why they stopped the program, resource use) and
`make_result` turns those into an `ExecResult` the same way for all of them.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import signal
from abc import ABC, abstractmethod
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, ClassVar, Self

from gfcr.core.admission import Admission
from gfcr.errors import ConfigError
from gfcr.sandboxes.base import ExecResult, Files, Limits, Sandbox, Session, Status
from gfcr.sandboxes.languages import Language, get_language

TRUNCATION_MARKER = "\n…[gfcr: output truncated at {limit} bytes]"
MAX_FILE_PATH = 255


@dataclass(frozen=True)
class RawOutcome:
    """The facts a backend reports about one run, before classification."""

    exit_code: int | None
    signal: int | None
    stopped_for: str | None  # "timeout" or "output_limit" when the backend stopped the program
    wall_s: float
    cpu_s: float
    max_rss_kb: float
    stdout: bytes
    stderr: bytes
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    out_of_memory: bool = False  # the memory cgroup (or container) killed something


def make_result(raw: RawOutcome, limits: Limits) -> ExecResult:
    """Classify `raw` into an `ExecResult` with a status, decoded text and truncation markers.

    >>> raw = RawOutcome(None, 24, None, 1.0, 2.0, 9000, b"", b"", False, False)  # SIGXCPU
    >>> make_result(raw, Limits()).status
    'timeout'
    """
    stderr = decode(raw.stderr, raw.stderr_truncated, limits.max_output_bytes)
    exit_code = raw.exit_code if raw.exit_code is not None else (-raw.signal if raw.signal else None)
    result = ExecResult(
        status=_status(raw, stderr, limits),
        exit_code=exit_code,
        stdout=decode(raw.stdout, raw.stdout_truncated, limits.max_output_bytes),
        stderr=stderr,
        wall_s=round(raw.wall_s, 6),
        cpu_s=round(raw.cpu_s, 6),
        max_rss_mb=round(raw.max_rss_kb / 1024, 3),
    )
    return result


def _status(raw: RawOutcome, stderr: str, limits: Limits) -> Status:
    if raw.stopped_for in ("timeout", "output_limit"):
        return raw.stopped_for  # type: ignore[return-value]
    if raw.out_of_memory:
        return "memory"
    if raw.signal is not None:
        cpu_limit_hit = raw.signal == signal.SIGXCPU or (
            raw.signal == signal.SIGKILL and raw.cpu_s >= limits.cpu_s
        )
        return "timeout" if cpu_limit_hit else "killed"
    if raw.exit_code == 0:
        return "ok"
    if raw.exit_code is None:
        return "killed"
    last_line = stderr.rstrip().rpartition("\n")[2]
    return "memory" if last_line.startswith("MemoryError") else "error"


def encode_text(**texts: str) -> list[bytes] | ExecResult:
    """The texts (code, stdin …) as UTF-8 bytes, or an "error" result if one cannot be encoded.

    Bytes that a `surrogateescape` decode turned into U+DC80–U+DCFF go back as those bytes;
    any other lone surrogate is not text, and the run fails like a program its interpreter
    rejects: status "error", exit code 1, the reason on stderr — nothing runs, no worker is used.

    >>> encode_text(code="print(1)", stdin="\\udc80")
    [b'print(1)', b'\\x80']
    >>> encode_text(code="'\\ud800'").status
    'error'
    """
    encoded = []
    for what, text in texts.items():
        try:
            encoded.append(text.encode("utf-8", "surrogateescape"))
        except UnicodeEncodeError as e:
            message = f"gfcr: the {what} is not valid text, nothing was run: {e}\n"
            return ExecResult("error", 1, "", message, wall_s=0.0, cpu_s=0.0, max_rss_mb=0.0)
    return encoded


def decode(data: bytes, truncated: bool, limit: int) -> str:
    """Output bytes as text (invalid UTF-8 replaced), marked when cut at the cap.

    >>> decode(b"abc", True, 3)
    'abc\\n…[gfcr: output truncated at 3 bytes]'
    """
    text = data.decode("utf-8", "replace")
    return text + TRUNCATION_MARKER.format(limit=limit) if truncated else text


def check_files(files: Files | None) -> list[tuple[str, bytes]]:
    """The files of a run as (relative path, bytes); ConfigError for a path that could escape.

    >>> check_files({"data/in.txt": "1 2"})
    [('data/in.txt', b'1 2')]
    >>> check_files({"../etc/passwd": ""})
    Traceback (most recent call last):
    ...
    gfcr.errors.ConfigError: file path '../etc/passwd' must be relative, without '..', '.' or empty parts
    """
    checked = []
    for path, content in (files or {}).items():
        parts = path.split("/") if isinstance(path, str) else []
        if not parts or path.startswith("/") or any(p in ("", ".", "..") for p in parts) or "\0" in path:
            raise ConfigError(f"file path {path!r} must be relative, without '..', '.' or empty parts")
        if len(path) > MAX_FILE_PATH:
            raise ConfigError(
                f"file path {path[:40]!r}… has {len(path)} characters; the limit is {MAX_FILE_PATH}"
            )
        if not isinstance(content, (str, bytes)):
            raise ConfigError(f"file {path!r} must be str or bytes, got {type(content).__name__}")
        checked.append((path, content.encode() if isinstance(content, str) else content))
    return checked


@dataclass(frozen=True)
class Job:
    """One run (or one session call) as a backend gets it: checked by `Job.check`.

    >>> job = Job.check("print(1)", "", get_language("python"), Limits(), {"in.txt": "1"})
    >>> job.code_bytes, job.files
    (b'print(1)', [('in.txt', b'1')])
    """

    code: str
    stdin: str
    language: Language
    limits: Limits
    files: list[tuple[str, bytes]]

    @classmethod
    def check(
        cls, code: str, stdin: str, language: Language, limits: Limits, files: Files | None = None
    ) -> Job | ExecResult:
        """The job, or the "error" result of text that cannot be encoded (`encode_text`);
        `ConfigError` for a file path that could escape (`check_files`)."""
        checked = check_files(files)
        refused = encode_text(code=code, stdin=stdin)
        return refused if isinstance(refused, ExecResult) else cls(code, stdin, language, limits, checked)

    @property
    def code_bytes(self) -> bytes:
        return self.code.encode("utf-8", "surrogateescape")  # `check` made sure this encodes

    @property
    def stdin_bytes(self) -> bytes:
        return self.stdin.encode("utf-8", "surrogateescape")


def limits_dict(limits: Limits) -> dict[str, Any]:
    """The limits as plain JSON for a worker."""
    return {name: getattr(limits, name) for name in Limits.__dataclass_fields__}


class SandboxBase(Sandbox, ABC):
    """The shared half of a backend: checks, admission, `arun` on a thread pool, context manager."""

    backend: ClassVar[str]

    def __init__(self, limits: Limits | None, max_concurrency: int, queue_timeout_s: float = 60.0) -> None:
        self.limits = limits or Limits()
        self._max_concurrency = max(1, max_concurrency)
        self.admission = Admission("sandbox", self._max_concurrency, queue_timeout_s)
        self._executor: ThreadPoolExecutor | None = None

    def run(
        self,
        code: str,
        *,
        language: str = "python",
        stdin: str = "",
        files: Files | None = None,
        limits: Limits | None = None,
    ) -> ExecResult:
        """Check the run, then run it once one of the backend's slots is free (see the module docstring)."""
        job = Job.check(code, stdin, get_language(language), limits or self.limits, files)
        if isinstance(job, ExecResult):
            return job
        with self.admission.admit():
            return self._run(job)

    @abstractmethod
    def _run(self, job: Job) -> ExecResult:
        """The backend's run, once checked and admitted."""

    @abstractmethod
    def session(self, language: str = "python", *, limits: Limits | None = None) -> Session: ...

    async def arun(
        self,
        code: str,
        *,
        language: str = "python",
        stdin: str = "",
        files: Files | None = None,
        limits: Limits | None = None,
    ) -> ExecResult:
        """`run` without blocking the event loop, in the caller's context (its waits are recorded)."""
        if self._executor is None:  # threads beyond the slots wait in the admission queue: measured
            self._executor = ThreadPoolExecutor(
                4 * self._max_concurrency, thread_name_prefix=f"gfcr-{self.backend}"
            )
        call = functools.partial(
            contextvars.copy_context().run,
            self.run, code, language=language, stdin=stdin, files=files, limits=limits,
        )  # fmt: skip
        return await asyncio.get_running_loop().run_in_executor(self._executor, call)

    def close(self) -> None:
        """Stop every worker; the sandbox can be used again afterwards (workers restart on demand)."""
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(limits={self.limits})"


class SessionBase(Session, ABC):
    """The shared half of a session: its language checked, each call's text checked, context manager."""

    def __init__(self, language: str, limits: Limits) -> None:
        self.spec = get_language(language)
        if self.spec.session is None:
            raise ConfigError(f"language {language!r} has no sessions; use one of: python, bash")
        self.language = language
        self.limits = limits
        self.restarts = 0

    @property
    @abstractmethod
    def alive(self) -> bool: ...

    def run(self, code: str, *, stdin: str = "", limits: Limits | None = None) -> ExecResult:
        """Run one call; text that cannot be encoded is an "error" result and leaves the session untouched."""
        job = Job.check(code, stdin, self.spec, limits or self.limits)
        return job if isinstance(job, ExecResult) else self._run(job)

    @abstractmethod
    def _run(self, job: Job) -> ExecResult:
        """The backend's call, once checked."""

    @abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
