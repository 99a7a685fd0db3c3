"""Bracket scanning for answer strings: split on top-level commas, find matching brackets.

Every bracket kind (``([{`` against ``)]}``) counts the same, so a half-open interval such as
``[0, 1)`` is one balanced group. Linear scans, no regex backtracking.
"""

from __future__ import annotations

import re

__all__ = ["closing_bracket", "nesting_depth", "opening_bracket", "split_top", "top_level_index"]

_OPEN, _CLOSE = "([{", ")]}"
# The scans below visit only these characters (a C-level regex search skips the rest).
_BRACKETS_RE = re.compile(r"[()\[\]{}]")
_BRACKETS_OR_COMMA_RE = re.compile(r"[()\[\]{},]")


def split_top(text: str) -> list[str]:
    """Split on commas outside any bracket.

    >>> split_top("(1, 2), 3")
    ['(1, 2)', ' 3']
    """
    if "," not in text:
        return [text]
    parts, depth, start = [], 0, 0
    for match in _BRACKETS_OR_COMMA_RE.finditer(text):
        char = match.group()
        if char == ",":
            if depth == 0:
                parts.append(text[start : match.start()])
                start = match.end()
        else:
            depth += 1 if char in _OPEN else -1
    return [*parts, text[start:]]


def opening_bracket(text: str) -> int:
    """Index of the bracket that the last character (one of ``)]}``) closes, -1 if none.

    >>> opening_bracket("f(1, (2))"), opening_bracket("1)")
    (1, -1)
    """
    if not text or text[-1] not in _CLOSE:
        return -1
    depth = 0
    for index in reversed([match.start() for match in _BRACKETS_RE.finditer(text)]):
        depth += 1 if text[index] in _CLOSE else -1
        if depth == 0:
            return index
    return -1


def closing_bracket(text: str, start: int) -> int:
    """Index of the bracket closing the one at ``start`` (any of ``([{``), -1 if none.

    >>> closing_bracket("sqrt(x+(1))+2", 4)
    10
    """
    depth = 0
    for index in range(start, len(text)):
        depth += 1 if text[index] in _OPEN else -1 if text[index] in _CLOSE else 0
        if depth == 0:
            return index
    return -1


def nesting_depth(text: str) -> int:
    """The deepest bracket nesting in ``text``.

    >>> nesting_depth("((1), [2])")
    2
    """
    depth = deepest = 0
    for char in text:
        depth += 1 if char in _OPEN else -1 if char in _CLOSE else 0
        deepest = max(deepest, depth)
    return deepest


def top_level_index(text: str, needle: str) -> int:
    """Index of the first ``needle`` outside every bracket, -1 if none.

    >>> top_level_index("A(\\\\pm 1, 0)", "\\\\pm"), top_level_index("\\\\pm 1", "\\\\pm")
    (-1, 0)
    """
    index = text.find(needle)
    while index >= 0:
        if _depth_at(text, index) == 0:
            return index
        index = text.find(needle, index + 1)
    return -1


def _depth_at(text: str, index: int) -> int:
    depth = 0
    for char in text[:index]:
        depth += 1 if char in _OPEN else -1 if char in _CLOSE else 0
    return depth
