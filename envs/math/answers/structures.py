"""The shape of an answer: words, a choice letter, or a collection compared item by item.

Sets and bare lists compare order-free, tuples and intervals in order and with their brackets,
``x=6, y=5`` as a mapping (or by position against ``(6, 5)``), a labelled point ``A(1, 0)`` by its
label and its coordinates. Items are compared by a callback (the cheap tiers, or math-verify), so a
verdict is True/False when every item decides and None when some item is left open.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

from gfcr.envs.math.answers.brackets import opening_bracket, split_top, top_level_index
from gfcr.envs.math.answers.normalize import ASSIGN_RE, words

__all__ = [
    "Compare",
    "Sequence",
    "choice_letter",
    "has_top_level_pm",
    "labelled_point",
    "prose",
    "sequence",
    "sequence_verdict",
]

Compare = Callable[[str, str], "bool | None"]

_PROSE_CHARS_RE = re.compile(r"[A-Za-z0-9\s,.;:!?'\"()-]+")
_MATH_NAMES = frozenset("sqrt sin cos tan log ln exp floor ceil pi sum lim max min gcd lcm mod inf".split())
_SHORT_WORDS = frozenset("yes no none true false all odd one two six ten".split())
_CHOICE_RE = re.compile(r"(?:option |choice )?\(?([A-Za-z])\)?")
_MAX_CHOICE_CHARS = len("choice (b)")

# The "A" of the point "A(1, 0)": one capital, not C (CHAMP writes binomials as C(n, k)), since
# a function's value such as f(1, 2) or \max(1, 2) is a number, not a tuple.
_POINT_LABEL_RE = re.compile(r"([ABD-Z](?:_\{?\w+\}?)?)\s*\(")
_MAX_UNORDERED = 32  # matching is quadratic; larger collections go to math-verify
_WORD_RUN_RE = re.compile(r"[A-Za-z]{2,}")
_LONG_WORD_RE = re.compile(r"[A-Za-z]{3,}")
_COMMAND_OR_AND_RE = re.compile(r"\\[A-Za-z]+|\band\b")
_AND_RE = re.compile(r",?\s+and\s+")


class Sequence(NamedTuple):
    """The items of a collection answer."""

    kind: str  # "set" {..}, "bare" a, b and c, "()" "(]" "[)" "[]" tuples and intervals, "map" x=1, y=2
    items: list[str]
    names: list[str] | None = None  # the variables of a "map"


def prose(text: str) -> str | None:
    """Words of a text answer (``\\text{Yes}``, ``Monotonically increasing``), None for math.

    >>> prose("Monotonically increasing"), prose("x^2")
    ('monotonically increasing', None)
    """
    if not _PROSE_CHARS_RE.fullmatch(text):
        return None
    found = (w.lower() for w in _WORD_RUN_RE.findall(text))
    # Short letter runs ("xy", "abc") are products of variables, "sqrt" and "sin" are math.
    if any((len(w) >= 4 and w not in _MATH_NAMES) or w in _SHORT_WORDS for w in found):
        return words(text)
    return None


def choice_letter(text: str) -> str | None:
    """The letter of a multiple-choice answer (``B``, ``(B)``, ``option b``), lower-case.

    >>> choice_letter("(B)"), choice_letter("B2")
    ('b', None)
    """
    match = _CHOICE_RE.fullmatch(text) if len(text) <= _MAX_CHOICE_CHARS else None
    return match.group(1).lower() if match else None


def has_top_level_pm(text: str) -> bool:
    """Whether a ``\\pm`` stands for two answers: outside brackets (``\\pm 1``, not ``A(\\pm 1, 0)``).

    >>> has_top_level_pm("x = \\\\pm 1"), has_top_level_pm("A(\\\\pm 1, 0)")
    (True, False)
    """
    return "\\pm" in text and top_level_index(text, "\\pm") >= 0


def sequence(text: str) -> Sequence | None:
    """The items of a set, tuple, interval, bare list, assignment list or labelled point; None else.

    >>> sequence("x=6, y=5"), sequence("42")
    (Sequence(kind='map', items=['6', '5'], names=['x', 'y']), None)
    """
    if "," not in text and "and" not in text:
        return None  # one item
    kind, inner = "bare", text
    if text[:2] == "\\{" and text[-2:] == "\\}" and len(text) > 3:
        kind, inner = "set", text[2:-2]
    elif text[0] in "([{" and text[-1] in ")]}" and opening_bracket(text) == 0:
        kind, inner = ("set" if text[0] == "{" else text[0] + text[-1]), text[1:-1]
    elif not _LONG_WORD_RE.search(_COMMAND_OR_AND_RE.sub("", text)):
        inner = _AND_RE.sub(",", text)  # "1, 4 and 9", but not "The limit exists and ..."

    items = [item.strip() for item in split_top(inner)]
    if len(items) < 2:
        return None
    pairs = [ASSIGN_RE.fullmatch(item) for item in items]
    if all(pairs) and kind in ("bare", "()"):
        names = [m.group(1) for m in pairs]  # type: ignore[union-attr]
        values = [m.group(2).strip() for m in pairs]  # type: ignore[union-attr]
        if len(set(names)) == len(names):  # "x=6, y=5": one assignment
            return Sequence("map", values, names)
        if len(set(names)) == 1:  # "x=16 and x=81": the solutions for one unknown
            return Sequence(kind, values)
    return Sequence(kind, items)


def labelled_point(text: str) -> tuple[str, Sequence] | None:
    """``A(\\\\pm 1, 0)`` -> the label and the coordinates; None for anything else.

    >>> labelled_point("A(\\\\pm 1, 0)")
    ('A', Sequence(kind='()', items=['\\\\pm 1', '0'], names=None))
    >>> labelled_point("f(1, 2)"), labelled_point("C(10, 5)"), labelled_point("A(1)")
    (None, None, None)
    """
    match = _POINT_LABEL_RE.match(text)
    if match is None or text[-1] != ")" or opening_bracket(text) != match.end() - 1:
        return None
    items = [item.strip() for item in split_top(text[match.end() : -1])]
    return (match.group(1), Sequence("()", items)) if len(items) >= 2 else None


def sequence_verdict(pred: Sequence, gold: Sequence, compare: Compare) -> bool | None:
    """Compare two collections item by item with ``compare``; None when undecided.

    >>> same = lambda p, g: p.strip() == g.strip()
    >>> sequence_verdict(sequence("\\\\{2, 1\\\\}"), sequence("1, 2"), same), sequence_verdict(
    ...     sequence("(2, 1)"), sequence("(1, 2)"), same)
    (True, False)
    """

    kinds = {pred.kind, gold.kind}
    if kinds <= {"set", "bare"}:
        return _unordered_verdict(pred.items, gold.items, compare)
    if pred.names and gold.names:  # "y=5, x=6" vs "x=6, y=5"
        if sorted(pred.names) != sorted(gold.names):
            return False
        pred_values = dict(zip(pred.names, pred.items, strict=True))
        return _ordered_verdict([pred_values[name] for name in gold.names], gold.items, compare)
    if "map" in kinds and kinds <= {"map", "()", "bare"}:  # "(6, 5)" vs "x=6, y=5"
        return _ordered_verdict(pred.items, gold.items, compare)
    if kinds <= {"()", "(]", "[)", "[]"}:
        return False if len(kinds) > 1 else _ordered_verdict(pred.items, gold.items, compare)
    return None


def _ordered_verdict(pred: list[str], gold: list[str], compare: Compare) -> bool | None:
    if len(pred) != len(gold):
        return False
    verdicts = [compare(p, g) for p, g in zip(pred, gold, strict=True)]
    return False if False in verdicts else None if None in verdicts else True


def _unordered_verdict(pred: list[str], gold: list[str], compare: Compare) -> bool | None:
    if len(pred) != len(gold):  # a set of other size, unless a ± stands for two items
        return None if any(has_top_level_pm(item) for item in pred + gold) else False
    if len(pred) > _MAX_UNORDERED:
        return None
    unmatched, undecided = list(gold), False
    for item in pred:
        for index, candidate in enumerate(unmatched):
            verdict = compare(item, candidate)
            if verdict:
                del unmatched[index]
                break
            undecided = undecided or verdict is None
    return True if not unmatched else None if undecided else False
