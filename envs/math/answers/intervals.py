"""Unions of intervals with numeric endpoints, compared as sets of real numbers.

``[-\\frac{1}{4}, 0) \\cup (0, 2)`` is read as a list of intervals whose endpoints are closed forms
(see ``constants``) or ``\\pm\\infty``. A union is *canonical* when its intervals are non-empty,
sorted and apart (consecutive ones neither overlap nor touch at a point either of them holds);
two canonical unions denote the same set iff they list the same intervals. So when both sides are
canonical the verdict is final; a union that is not (``[0, 1] \\cup [1, 2]``), a variable endpoint
or an order the floats cannot settle gives None, for math-verify.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import NamedTuple

from gfcr.envs.math.answers.arithmetic import Value, certain_order
from gfcr.envs.math.answers.brackets import opening_bracket, split_top, top_level_index
from gfcr.envs.math.answers.constants import evaluate, evaluate_gold

__all__ = ["is_union", "union_verdict"]

Evaluate = Callable[[str], "Value | None"]

_INFINITY = {"\\infty": 1, "+\\infty": 1, "-\\infty": -1}
_VARIABLE_RE = re.compile(r"(?<![\\A-Za-z])[A-Za-df-z]")  # a letter other than e, outside a command
_MAX_INTERVALS = 16


class _Interval(NamedTuple):
    left_closed: bool
    left: Value | int  # an endpoint; an infinity is the int sign in ``left_infinite``
    right: Value | int
    right_closed: bool
    left_infinite: int = 0  # -1 for -infinity
    right_infinite: int = 0  # +1 for +infinity


def union_verdict(pred: str, gold: str) -> bool | None:
    """Whether two unions of intervals are the same set; None when they cannot be compared.

    >>> union_verdict("(0, 2) \\\\cup [-\\\\frac14, 0)", "[-\\\\frac{1}{4}, 0) \\\\cup (0, 2)")
    True
    >>> union_verdict("(-\\\\infty,-1)\\\\cup(7,+\\\\infty)", "(-\\\\infty,-1)\\\\cup(6,\\\\infty)")
    False
    """
    pred_union, (gold_readable, gold_union) = _union(pred, evaluate), _gold_union(gold)
    if pred_union is None and gold_readable:
        return False if evaluate(pred) is not None else None  # a number is not a set
    if not gold_readable and pred_union is not None:
        return False if evaluate_gold(gold) is not None else None
    pred_union = _canonical(pred_union)
    if pred_union is None or gold_union is None:
        return None
    if len(pred_union) != len(gold_union):
        return False
    verdicts = [_same_interval(p, g) for p, g in zip(pred_union, gold_union, strict=True)]
    return False if False in verdicts else None if None in verdicts else True


def is_union(text: str) -> bool:
    """Whether ``text`` has a top-level ``\\cup``.

    >>> is_union("(0, 1) \\\\cup (2, 3)"), is_union("\\\\{x \\\\cup y\\\\}")
    (True, False)
    """
    return "\\cup" in text and top_level_index(text, "\\cup") >= 0


@functools.lru_cache(maxsize=4096)  # a group of samples shares its gold
def _gold_union(gold: str) -> tuple[bool, tuple[_Interval, ...] | None]:
    """Whether the gold reads as intervals (one or a union), and their canonical form (None if none)."""
    union = _union(gold, evaluate_gold)
    canonical = _canonical(union)
    return union is not None, None if canonical is None else tuple(canonical)


def _union(text: str, evaluate_endpoint: Evaluate) -> list[_Interval] | None:

    parts = _split_cup(text)
    if len(parts) > _MAX_INTERVALS:
        return None
    intervals = [_interval(part.strip(), evaluate_endpoint) for part in parts]
    return None if None in intervals else intervals  # type: ignore[return-value]


def _split_cup(text: str) -> list[str]:
    parts, start = [], 0
    while (index := top_level_index(text[start:], "\\cup")) >= 0:
        parts.append(text[start : start + index])
        start += index + len("\\cup")
    return [*parts, text[start:]]


def _interval(text: str, evaluate_endpoint: Evaluate) -> _Interval | None:
    if len(text) < 5 or text[0] not in "([" or text[-1] not in ")]" or opening_bracket(text) != 0:
        return None
    ends = [end.strip() for end in split_top(text[1:-1])]
    if len(ends) != 2:
        return None
    left_infinite, right_infinite = _INFINITY.get(ends[0], 0), _INFINITY.get(ends[1], 0)
    left = 0 if left_infinite else _endpoint(ends[0], evaluate_endpoint)
    right = 0 if right_infinite else _endpoint(ends[1], evaluate_endpoint)
    if left is None or right is None or left_infinite == 1 or right_infinite == -1:
        return None
    left_closed, right_closed = text[0] == "[", text[-1] == "]"
    if (left_infinite and left_closed) or (right_infinite and right_closed):
        return None  # "[-\infty, 0)" is no interval of real numbers
    return _Interval(left_closed, left, right, right_closed, left_infinite, right_infinite)


def _endpoint(text: str, evaluate_endpoint: Evaluate) -> Value | None:
    if _VARIABLE_RE.search(text):
        return None  # "(0, a)": the order of its ends depends on a
    return evaluate_endpoint(text)


def _canonical(union: list[_Interval] | None) -> list[_Interval] | None:
    """The intervals sorted, if non-empty and apart; None if not canonical or not decidable."""
    if not union:
        return None
    for interval in union:
        if _order_right_left(interval, interval) != 1:
            return None  # empty or a single point: not a canonical interval
    ordered: list[_Interval] = []
    for interval in union:  # insertion sort: the order needs certain comparisons
        position = len(ordered)
        while position > 0:
            order = _order_left(ordered[position - 1], interval)
            if order is None or order == 0:
                return None  # two intervals start together: they overlap
            if order < 0:
                break
            position -= 1
        ordered.insert(position, interval)
    for first, second in zip(ordered, ordered[1:], strict=False):
        order = _order_right_left(first, second)  # the first's right end against the second's left
        touching_apart = order == 0 and not first.right_closed and not second.left_closed
        if not (order == -1 or touching_apart):
            return None  # they overlap or merge, or the floats cannot tell
    return ordered


def _order_left(a: _Interval, b: _Interval) -> int | None:
    if a.left_infinite or b.left_infinite:  # only -infinity can be a left end
        return (a.left_infinite == 0) - (b.left_infinite == 0)
    return certain_order(a.left, b.left)


def _order_right_left(a: _Interval, b: _Interval) -> int | None:
    """Order of ``a``'s right end against ``b``'s left end (for ``a is b``: whether it is non-empty)."""
    if a.right_infinite or b.left_infinite:
        return 1
    return certain_order(a.right, b.left)


def _same_interval(a: _Interval, b: _Interval) -> bool | None:
    if (a.left_closed, a.right_closed, a.left_infinite, a.right_infinite) != (
        b.left_closed,
        b.right_closed,
        b.left_infinite,
        b.right_infinite,
    ):
        return False
    left = 0 if a.left_infinite else certain_order(a.left, b.left)
    right = 0 if a.right_infinite else certain_order(a.right, b.right)
    if left is None or right is None:
        return None
    return left == 0 and right == 0
