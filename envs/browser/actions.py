"""Browser actions written as function calls in the model's text: `click("e5")`, `fill(e7, "Ada")`.

The env offers the same actions as native tools; this module reads them from plain text, one or
more per message, anywhere in it (reasoning first is fine). Arguments are Python/JSON literals;
a bare word stands for itself (`click(e5)`, `press(Enter)`). Keyword arguments work too.
Nothing is evaluated: arguments go through `ast.literal_eval`.

>>> signatures = {"fill": ["ref", "text"], "click": ["ref"]}
>>> calls, problems = parse_calls('I will type, then submit.\\nfill(e6, "Keli")\\nclick("e7")', signatures)
>>> [(c.name, c.arguments) for c in calls], problems
([('fill', {'ref': 'e6', 'text': 'Keli'}), ('click', {'ref': 'e7'})], [])
>>> parse_calls("click(e5, e6)", {"click": ["ref"]})[1]
['click(e5, e6): click takes 1 argument (ref), got 2']
>>> format_call("fill", "e6", 'say "hi"')
'fill("e6", "say \\\\"hi\\\\"")'
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from gfcr.core import ToolCall
from gfcr.core.python_ast import parse_python

MAX_CALLS = 50


def parse_calls(text: str, signatures: Mapping[str, Sequence[str]]) -> tuple[list[ToolCall], list[str]]:
    """The calls of the actions named in `signatures` (name -> parameter names) found in `text`."""
    if not signatures:
        return [], []
    start = re.compile(r"(?<![\w.])(" + "|".join(map(re.escape, signatures)) + r")\(")
    calls: list[ToolCall] = []
    problems: list[str] = []
    position = 0
    while len(calls) + len(problems) < MAX_CALLS and (match := start.search(text, position)):
        end = _closing_paren(text, match.end() - 1)
        source = text[match.start() : end]
        position = end
        try:
            calls.append(_to_call(source, match.group(1), signatures[match.group(1)], len(calls)))
        except ValueError as e:
            problems.append(f"{_clip(source)}: {e}")
    return calls, problems


def format_call(name: str, *args: Any) -> str:
    """The text of a call, arguments as JSON literals (which Python reads the same)."""
    return f"{name}({', '.join(json.dumps(a, ensure_ascii=False) for a in args)})"


def _closing_paren(text: str, open_at: int) -> int:
    """Index just past the `)` matching the `(` at `open_at`, skipping strings; end of line if none."""
    depth, quote, escaped = 0, "", False
    for i in range(open_at, len(text)):
        char = text[i]
        if quote:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        elif char == "\n" and depth == 1:
            break
    newline = text.find("\n", open_at)
    return len(text) if newline < 0 else newline


def _to_call(source: str, name: str, parameters: Sequence[str], number: int) -> ToolCall:
    try:
        tree = parse_python(source.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise ValueError(
            f"not a valid call; write e.g. {name}({', '.join(repr('...') for _ in parameters)})"
        ) from None
    if not isinstance(tree, ast.Call) or tree.keywords and any(k.arg is None for k in tree.keywords):
        raise ValueError(f"not a plain call of {name}")
    if len(tree.args) > len(parameters):
        raise ValueError(
            f"{name} takes {len(parameters)} argument{'s' * (len(parameters) != 1)} "
            f"({', '.join(parameters) or 'none'}), got {len(tree.args)}"
        )
    arguments = {parameters[i]: _literal(node) for i, node in enumerate(tree.args)}
    for keyword in tree.keywords:
        if keyword.arg in arguments:
            raise ValueError(f"{keyword.arg} is given twice")
        arguments[str(keyword.arg)] = _literal(keyword.value)
    return ToolCall(name, arguments, f"text_{number}")


def _literal(node: ast.expr) -> Any:
    if isinstance(node, ast.Name):  # a bare word: click(e5), press(Enter)
        return node.id
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        raise ValueError(
            f'argument {ast.unparse(node)[:40]!r} is not a literal (quote text: "...")'
        ) from None


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
