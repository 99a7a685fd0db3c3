"""The one exception base of gfcr and its specific subclasses.

Every message names the bad value, what is allowed, and how to fix it.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


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
        self.kind, self.name, self.known = kind, name, known

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
