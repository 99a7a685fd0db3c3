"""The one exception base of gfcr and its specific subclasses.

Every message names the bad value, what is allowed, and how to fix it.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager


class GfcrError(Exception):
    """Base class of every error gfcr raises on purpose."""


class ConfigError(GfcrError, ValueError):
    """A configuration value (keyword argument, CLI option, TOML field) is invalid."""


class UnknownNameError(ConfigError, KeyError):
    """A name (env id, suite, dataset, agent spec, task id) is not known.

    >>> str(UnknownNameError("suite", "mth", ["math", "code"]))
    "unknown suite 'mth'; did you mean 'math'? Known: code, math"
    """

    def __init__(self, kind: str, name: str, known: Iterable[str], hint: str = "") -> None:
        known = sorted(known)
        close = difflib.get_close_matches(name, known, n=1)
        suggestion = f"; did you mean {close[0]!r}?" if close else ""
        shown = ", ".join(known[:20]) + (f", … ({len(known)} in all)" if len(known) > 20 else "")
        message = f"unknown {kind} {name!r}{suggestion} Known: {shown}"
        super().__init__(message + (f". {hint}" if hint else ""))
        self.kind, self.name, self.known, self.hint = kind, name, known, hint

    def __reduce__(self) -> tuple:  # rebuilt from its parts across processes (Ray, multiprocessing)
        return (type(self), (self.kind, self.name, self.known, self.hint))

    def __str__(self) -> str:  # KeyError would wrap the message in quotes
        return str(self.args[0])


class DataError(GfcrError):
    """Task data is missing or malformed (a package not installed, a bad JSONL line)."""


class ToolError(GfcrError):
    """A tool call cannot be carried out; the env turns it into an error observation."""


class QueryError(ToolError):
    """A SQL query failed: a syntax error, an engine error, a timeout or a result over its cap."""


class UnsafeQueryError(QueryError):
    """A SQL query was refused because it could change a database or reach outside it."""


class BrowserError(GfcrError):
    """The browser cannot be found, started or driven (no Chromium installed, a crash, a timeout)."""


class PolicyError(GfcrError):
    """A policy cannot be built or its call failed (model not found, server unreachable, bad output).

    `retryable` marks failures a later call may not repeat (a server restarting, a dropped connection).
    """

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable

    def __reduce__(self) -> tuple:  # keep `retryable` across processes (Ray, multiprocessing)
        return (_rebuild, (type(self), (self.args[0],), {"retryable": self.retryable}))


class EpisodeError(GfcrError):
    """One episode failed for a reason outside the agent's control; the run goes on without it.

    `reason` is the short category that reports group failures by (e.g. "env timeout");
    `retryable` marks failures a fresh attempt may not repeat (a lost worker, a dead server).

    >>> str(EpisodeError("env timeout", "step took over 5.0 s"))
    'env timeout: step took over 5.0 s'
    """

    def __init__(self, reason: str, detail: str, *, retryable: bool = False) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail, self.retryable = reason, detail, retryable

    def __reduce__(self) -> tuple:
        return (_rebuild, (type(self), (self.reason, self.detail), {"retryable": self.retryable}))


class QueueTimeoutError(EpisodeError):
    """A call waited in a shared resource's queue past its deadline (`gfcr.core.admission`).

    The resource (an env server, a sandbox pool, an LLM judge or user) was too busy: an
    infrastructure failure of that resource, named in `reason`, never the agent's; retryable,
    since the queue may have cleared.

    >>> error = QueueTimeoutError("sandbox", 2.0, 4)
    >>> error.reason, error.resource, error.retryable
    ('sandbox queue timeout', 'sandbox', True)
    >>> str(error)  # doctest: +ELLIPSIS
    'sandbox queue timeout: waited 2.0 s for a slot (4 at once); raise its max_concurrency or ...'
    """

    def __init__(self, resource: str, waited_s: float, max_concurrency: int | None) -> None:
        super().__init__(
            f"{resource} queue timeout",
            f"waited {waited_s:.1f} s for a slot ({max_concurrency} at once); raise its max_concurrency "
            "or queue_timeout_s, or send less work at once",
            retryable=True,
        )
        self.resource, self.waited_s, self.max_concurrency = resource, waited_s, max_concurrency

    def __reduce__(self) -> tuple:
        return (type(self), (self.resource, self.waited_s, self.max_concurrency))


class MissingExtraError(GfcrError, ImportError):
    """An optional dependency is not installed; the message names the extra that installs it.

    >>> str(MissingExtraError("the hf: backend", "transformers", "hf"))
    "the hf: backend needs `transformers`, which is not installed: pip install -e '.[hf]' (or 'gfcr[hf]')"
    """

    def __init__(self, what: str, module: str, extra: str) -> None:
        super().__init__(
            f"{what} needs `{module}`, which is not installed: "
            f"pip install -e '.[{extra}]' (or 'gfcr[{extra}]')"
        )
        self.what, self.module, self.extra = what, module, extra

    def __reduce__(self) -> tuple:
        return (type(self), (self.what, self.module, self.extra))


# The pyproject extra that installs each optional top-level module.
EXTRA_OF = {
    "torch": "hf", "transformers": "hf", "gguf": "hf", "fastapi": "serve", "uvicorn": "serve",
    "openenv": "remote", "playwright": "browser", "miniwob": "browser", "psycopg": "postgres",
    "ray": "ray", "vllm": "gpu", "openai": "openai", "trl": "trl", "datasets": "trl", "peft": "train",
    "tensorboard": "train", "matplotlib": "train",
}  # fmt: skip


@contextmanager
def needs_extra(what: str) -> Iterator[None]:
    """Turn a missing optional module imported in the block into a `MissingExtraError` naming its extra.

    >>> import sys
    >>> sys.modules["fastapi"], saved = None, sys.modules.get("fastapi")  # as if not installed
    >>> try:
    ...     with needs_extra("gfcr serve"):
    ...         import fastapi
    ... except MissingExtraError as e:
    ...     print(e.extra)
    serve
    >>> sys.modules["fastapi"] = saved
    """
    try:
        yield
    except ModuleNotFoundError as e:
        module = (e.name or "").split(".")[0]
        if module not in EXTRA_OF:
            raise
        raise MissingExtraError(what, module, EXTRA_OF[module]) from e


def _rebuild(cls: type, args: tuple, kwargs: dict) -> GfcrError:
    return cls(*args, **kwargs)


class SandboxError(GfcrError):
    """A sandbox cannot run code: its worker died, it could not start, or a request was malformed.

    What the code itself does (crash, loop, flood) is never an error: it is the run's `status`.
    """


class SandboxUnavailableError(SandboxError):
    """No sandbox backend works on this machine, or the one asked for does not; says what to install."""


class StorageError(GfcrError):
    """A replay buffer or skill library cannot open, read or write its database."""


class RunStoppedError(GfcrError):
    """The runner ended a run early: a place it needs (an env server, the policy) kept failing.

    The message names the place, how many failures in a row and the last one; everything written
    so far stays, and running again with `resume=True` (`--resume`) finishes the run.
    """
