"""Bugs to inject: small source mutations found with `ast`, each a one-place edit of the text.

The operators are the classic mutation-testing ones (as SWE-smith's procedural bugs and
mutmut use): a comparison flipped (`<` → `<=`, `==` → `!=`, `in` → `not in` …), an arithmetic
operator swapped (`+` ↔ `-`, `*` → `//`), `and` ↔ `or`, a `not` dropped, a small integer off by
one, `True` ↔ `False`, an augmented assignment reversed (`+=` ↔ `-=`). The edit touches only the
operator's characters, so the bug's diff is one line and the rest of the file is byte-identical.

>>> source = "def f(a, b):\\n    return a < b\\n"
>>> [(m.operator, m.apply(source).splitlines()[1]) for m in mutations(source)]
[('compare', '    return a <= b')]
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass

COMPARE = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "==", "is": "is not", "is not": "is"}
COMPARE |= {"in": "not in", "not in": "in"}
ARITHMETIC = {"+": "-", "-": "+", "*": "//", "//": "*"}
BOOLEAN = {"and": "or", "or": "and"}
AUGMENTED = {"+=": "-=", "-=": "+="}
_TOKEN = {
    op: re.compile(r"(?<![\w<>=!*/])" + re.escape(op).replace(r"\ ", r"\s+") + r"(?![\w<>=*/])")
    for op in {**COMPARE, **ARITHMETIC, **BOOLEAN, **AUGMENTED}
}


@dataclass(frozen=True)
class Mutation:
    """One edit: replace `source[start:end]` (character offsets) by `replacement`."""

    operator: str
    start: int
    end: int
    replacement: str
    line: int
    function: str  # the enclosing function or class ("" at module level)

    def apply(self, source: str) -> str:
        """`source` with this bug in it."""
        return source[: self.start] + self.replacement + source[self.end :]


def mutations(source: str) -> list[Mutation]:
    """Every mutation of `source`, in source order (an empty list if it does not parse)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    offsets = _line_offsets(source)
    found = [m for m in _visit(tree, source, offsets, "") if m is not None]
    return sorted(found, key=lambda m: (m.start, m.operator))


def _line_offsets(source: str) -> list[int]:
    """Character offset of each line's start (ast columns are UTF-8 bytes: converted in `_at`)."""
    starts, total = [0], 0
    for line in source.splitlines(keepends=True):
        total += len(line)
        starts.append(total)
    return starts


def _at(source: str, offsets: list[int], line: int, col_bytes: int) -> int:
    start = offsets[line - 1]
    text = source[start : offsets[line] if line < len(offsets) else len(source)]
    return start + len(text.encode("utf-8")[:col_bytes].decode("utf-8", "ignore"))


def _visit(node: ast.AST, source: str, offsets: list[int], scope: str) -> Iterator[Mutation | None]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        scope = f"{scope}.{node.name}" if scope else node.name
    if (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    ):
        return  # a docstring
    yield from _of(node, source, offsets, scope)
    for child in ast.iter_child_nodes(node):
        yield from _visit(child, source, offsets, scope)


def _of(node: ast.AST, source: str, offsets: list[int], scope: str) -> Iterator[Mutation | None]:
    """The mutations of `node` itself."""

    def at(n: ast.expr | ast.stmt, end: bool = False) -> int:  # a node's start (or end) as a character offset
        line, col = (n.end_lineno, n.end_col_offset) if end else (n.lineno, n.col_offset)
        return _at(source, offsets, line or 0, col or 0)

    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        yield _swap(source, at(node.left, True), at(node.comparators[0]), COMPARE, "compare", node, scope)
    elif isinstance(node, ast.BinOp):
        yield _swap(source, at(node.left, True), at(node.right), ARITHMETIC, "arithmetic", node, scope)
    elif isinstance(node, ast.BoolOp) and len(node.values) == 2:
        yield _swap(source, at(node.values[0], True), at(node.values[1]), BOOLEAN, "boolean", node, scope)
    elif isinstance(node, ast.AugAssign):
        yield _swap(source, at(node.target, True), at(node.value), AUGMENTED, "augmented", node, scope)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield Mutation("negation", at(node), at(node.operand), "", node.lineno, scope)
    elif isinstance(node, ast.Constant) and node.lineno == node.end_lineno:
        value = node.value
        if isinstance(value, bool):
            yield Mutation("boolean constant", at(node), at(node, True), str(not value), node.lineno, scope)
        elif isinstance(value, int) and 0 <= value <= 9 and source[at(node) : at(node, True)] == str(value):
            yield Mutation(
                "off by one",
                at(node),
                at(node, True),
                str(value + 1 if value < 2 else value - 1),
                node.lineno,
                scope,
            )


def _swap(
    source: str, gap_start: int, gap_end: int, table: dict[str, str], operator: str, node: ast.AST, scope: str
) -> Mutation | None:
    """Swap the one operator token between two operands (None if the gap is not just that)."""
    gap = source[gap_start:gap_end]
    if "#" in gap or "\\" in gap:
        return None
    for token in sorted(table, key=len, reverse=True):
        found = list(_TOKEN[token].finditer(gap))
        if len(found) == 1 and not gap.replace(found[0].group(), "").strip(" \t\n()"):
            match = found[0]
            return Mutation(
                operator,
                gap_start + match.start(),
                gap_start + match.end(),
                table[token],
                getattr(node, "lineno", 0),
                scope,
            )
    return None
