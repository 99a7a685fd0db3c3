"""Tool specs: OpenAI function schemas, built by hand or from a plain Python function; and the
deadline of a running tool call (`time_left`), which tools that start something slow obey."""

from __future__ import annotations

import inspect
import re
import time
import types
import typing
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal

from gfcr.errors import ConfigError, ToolError

_JSON_TYPES: dict[type, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_ARG_LINE = re.compile(r"^\s*(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
MIN_TIME_LEFT_S = 0.01  # what a call that starts at its deadline is still given: limits must be positive
# The `time.monotonic()` instant the running tool call must end by; a context variable, so each
# thread (and asyncio task) running tool calls has its own.
_DEADLINE: ContextVar[float | None] = ContextVar("gfcr_tool_deadline", default=None)


@dataclass(frozen=True)
class ToolSpec:
    """A tool the agent may call: name, description, JSON-schema parameters, and its function.

    `function` is what the env runs; it is not part of the schema sent to the model.

    >>> def add(a: int, b: int = 0) -> int:
    ...     '''Add two integers.
    ...
    ...     Args:
    ...         a: The first addend.
    ...         b: The second addend.
    ...     '''
    ...     return a + b
    >>> spec = ToolSpec.from_function(add)
    >>> spec.parameters["required"], spec.parameters["properties"]["a"]
    (['a'], {'type': 'integer', 'description': 'The first addend.'})
    >>> spec(a=2, b=3)
    5
    """

    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    function: Callable[..., Any] | None = field(default=None, compare=False, repr=False)

    @classmethod
    def from_function(cls, function: Callable[..., Any], name: str | None = None) -> ToolSpec:
        """Build the schema from the signature (type hints) and the docstring (summary + `Args:`)."""
        doc = inspect.getdoc(function) or ""
        summary, arg_help = _parse_docstring(doc)
        hints = typing.get_type_hints(function)
        properties: dict[str, Any] = {}
        required: list[str] = []
        for param in inspect.signature(function).parameters.values():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                continue
            schema = _schema_for(hints.get(param.name, str))
            if param.name in arg_help:
                schema["description"] = arg_help[param.name]
            properties[param.name] = schema
            if param.default is inspect.Parameter.empty:
                required.append(param.name)
        parameters = {"type": "object", "properties": properties, "required": required}
        return cls(name or function.__name__, summary, parameters, function)

    def to_openai(self) -> dict[str, Any]:
        """The spec as an OpenAI `tools` entry: `{"type": "function", "function": {...}}`."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    def check_arguments(self, arguments: dict[str, Any]) -> None:
        """Raise `ToolError` naming the problem if `arguments` do not fit the schema."""
        properties = self.parameters.get("properties", {})
        missing = [p for p in self.parameters.get("required", []) if p not in arguments]
        unknown = [a for a in arguments if a not in properties]
        if missing or unknown:
            problems = [f"missing {missing}" if missing else "", f"unexpected {unknown}" if unknown else ""]
            raise ToolError(
                f"{self.name}() arguments: {', '.join(p for p in problems if p)}; "
                f"expected {sorted(properties)} (required: {self.parameters.get('required', [])})"
            )
        for key, value in arguments.items():
            expected = properties[key].get("type")
            if expected and not _fits(value, expected):
                got = type(value).__name__
                raise ToolError(f"{self.name}() argument {key!r} must be {expected}, got {got}")

    def __call__(self, **arguments: Any) -> Any:
        if self.function is None:
            raise ToolError(f"tool {self.name!r} has no function to run")
        self.check_arguments(arguments)
        return self.function(**arguments)


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into its summary paragraph and `Args:` descriptions."""
    summary = doc.split("\n\n", 1)[0].replace("\n", " ").strip()
    arg_help: dict[str, str] = {}
    in_args, current, indent = False, "", 0
    for line in doc.splitlines():
        depth = len(line) - len(line.lstrip())
        if line.strip() in ("Args:", "Arguments:", "Parameters:"):
            in_args, current = True, ""
        elif in_args and line.strip() and depth == 0:
            in_args = False
        elif in_args and current and depth > indent and line.strip():  # a wrapped description line
            arg_help[current] += " " + line.strip()
        elif in_args and (match := _ARG_LINE.match(line)):
            current, indent = match.group(1), depth
            arg_help[current] = match.group(2).strip()
    return summary, arg_help


def _schema_for(hint: Any) -> dict[str, Any]:
    """JSON schema of one parameter from its type hint."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        non_null = [a for a in args if a is not type(None)]
        if len(non_null) == 1:
            return _schema_for(non_null[0])
        return {"anyOf": [_schema_for(a) for a in non_null]}
    if origin is Literal:
        return {"type": _JSON_TYPES.get(type(args[0]), "string"), "enum": list(args)}
    if origin in (list, tuple, set, frozenset) or hint in (list, tuple):
        return {"type": "array", "items": _schema_for(args[0])} if args else {"type": "array"}
    if origin is dict or hint is dict:
        return {"type": "object"}
    if hint in _JSON_TYPES:
        return {"type": _JSON_TYPES[hint]}
    raise ConfigError(f"cannot express type {hint!r} as JSON schema; use str, int, float, bool, list, dict")


def _fits(value: Any, json_type: str) -> bool:
    if json_type == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if json_type == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    python_type = {"string": str, "boolean": bool, "array": list, "object": dict}.get(json_type)
    return python_type is None or isinstance(value, python_type)


@contextmanager
def tool_deadline(deadline: float | None) -> Iterator[None]:
    """Run the tool calls inside by `deadline`, a `time.monotonic()` instant (None: no deadline).

    Envs wrap each tool call in it (`TextEnv.run_tools` does), so that tools can read `time_left`.
    """
    token = _DEADLINE.set(deadline)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def time_left(limit: float) -> float:
    """Seconds the running tool call may still take: `limit`, or less where its step's time runs out sooner.

    A tool that starts something slow (a sandbox run, a query, a request, a wait) gives it
    `time_left(its own timeout)` as its timeout, so no call runs past its env's step budget.

    >>> time_left(10.0)
    10.0
    >>> with tool_deadline(time.monotonic() + 2.0):
    ...     0 < time_left(10.0) <= 2.0
    True
    """
    deadline = _DEADLINE.get()
    if deadline is None:
        return limit
    return min(limit, max(deadline - time.monotonic(), MIN_TIME_LEFT_S))
