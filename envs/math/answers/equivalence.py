"""Decide whether a predicted final answer means the same as a gold answer.

``is_equivalent`` checks in tiers, cheapest first; the first tier that can decide, decides:

1. **strings** (``normalize``) — after light normalisation (``$``, ``\\left``/``\\right``, spacing
   commands, ``\\text{}`` wrappers, ``\\dfrac``, degree signs, units and count nouns after a number,
   a leading ``x =``, remarks such as ``(i.e., ...)``, trailing periods), equal strings are equivalent.
2. **numbers** (``numeric``) — integers, decimals, ``a/b``, ``\\frac{a}{b}``, ``a^b``, scientific
   notation, thousands separators and percentages are compared exactly as ``fractions.Fraction``.
   When both sides are plain numbers this verdict is final. Tolerance rule: a *decimal* (written
   with a point) also matches an exact value it correctly rounds, ``|d - v| <= ulp(d) / 2``, if it
   shows at least 3 significant digits (``0.333`` and ``0.333333`` match ``1/3``; ``0.33`` and
   ``0.334`` do not); two decimals must be equal. ``50\\%`` matches both ``50`` and ``0.5``.
3. **structure** (``structures``, ``intervals``) — sets and bare lists compare order-free, tuples
   and intervals ordered with their brackets, ``x=6, y=5`` as a mapping (or by position against
   ``(6, 5)``), labelled points ``A(1, 0)``, unions of intervals as sets of reals, multiple-choice
   letters, words (case- and punctuation-free, for yes/no and text answers), "no solutions" ~
   ``\\emptyset``; items go through these tiers again.
4. **closed forms** (``constants``, ``arithmetic``) — ``2\\sqrt{3}``, ``\\frac{\\sqrt{7}}{5}``,
   ``8\\sqrt{5}-16``, ``\\pi/2`` are evaluated: exactly while rational, else as floats with error
   bounds; values that certainly differ are not equivalent, values that agree to 1e-12 relative
   are (decimals keep the rounding rule of tier 2, with 4 significant digits against ``\\pi`` or
   ``e``: ``3.14`` is no ``\\pi``). With variables (``10^{2^n-n-1}``) only a difference is final,
   found at a sample point. ``2\\frac{1}{2}`` is the mixed number 5/2; ``2\\cdot\\frac{1}{2}`` is 1.
5. **math-verify** (``bounded``) — what the tiers above cannot decide goes to ``math_verify.parse``
   and ``math_verify.verify`` (symbolic equivalence, ~0.2-15 ms per call; imported lazily), item by
   item inside sets and tuples, under a time bound that holds in any thread; a free ``i`` is the
   imaginary unit there (``e^{i\\pi} = -1``, ``\\sqrt{-1} = i``).

Gold answers may be free text (the CHAMP dataset): ``"C(10, 5), or equivalently 252"`` accepts
either form, ``"999 (i.e., all ...)"`` the part before the remark, ``"The limit exists and is equal to
X"`` accepts X, and plain-text math (``sqrt(3)/3``, ``2^(n-1)``) is turned into LaTeX for math-verify.
"""

from __future__ import annotations

import functools
import logging
import time
from typing import NamedTuple

from gfcr.envs.math.answers.bounded import verify_bounded
from gfcr.envs.math.answers.constants import evaluate, evaluate_gold, numeric_verdict
from gfcr.envs.math.answers.intervals import is_union, union_verdict
from gfcr.envs.math.answers.normalize import MAX_ANSWER_CHARS, gold_forms, normalize
from gfcr.envs.math.answers.numeric import Number, any_number_match, parse_numbers
from gfcr.envs.math.answers.structures import (
    Sequence,
    choice_letter,
    has_top_level_pm,
    labelled_point,
    prose,
    sequence,
    sequence_verdict,
)

__all__ = ["is_equivalent"]

logger = logging.getLogger(__name__)

_MAX_INPUT_CHARS = 100_000  # longer raw input is no final answer (and is cheap to reject)
_GOLD_CACHE_SIZE = 4096


class _Gold(NamedTuple):
    """What the cheap tiers read from one normalised gold form (or gold item), computed once."""

    prose: str | None
    compact: str
    numbers: tuple[Number, ...]
    union: bool
    choice: str | None
    sequence: Sequence | None


@functools.lru_cache(maxsize=_GOLD_CACHE_SIZE)  # a group of samples shares its gold
def _gold(gold: str) -> _Gold:
    compact = gold.replace(" ", "")
    return _Gold(
        prose(gold), compact, parse_numbers(compact), is_union(gold), choice_letter(gold), sequence(gold)
    )


_normalize_gold = functools.lru_cache(maxsize=_GOLD_CACHE_SIZE)(normalize)


@functools.lru_cache(maxsize=_GOLD_CACHE_SIZE)
def _gold_numbers(gold: str) -> tuple[Number, ...]:
    return parse_numbers(gold.replace(" ", ""))


def is_equivalent(predicted: str, gold: str, *, timeout_s: float = 3.0) -> bool:
    """True iff the predicted final answer means the same as the gold answer.

    ``predicted`` is a final answer (a ``\\boxed{...}`` in it is unwrapped); ``gold`` may list
    alternatives in free text. Never raises: non-str or hostile input gives False within about
    ``timeout_s`` seconds (``bounded`` says how that bound is kept).

    >>> is_equivalent("204", "204"), is_equivalent("203", "204")
    (True, False)
    >>> is_equivalent("\\\\dfrac{1}{2}", "0.5"), is_equivalent("0.05", "0.5"), is_equivalent("50\\\\%", "0.5")
    (True, False, True)
    >>> is_equivalent("x = \\\\{2, 1\\\\}", "{1,2}"), is_equivalent("(0, 1]", "[0, 1]")
    (True, False)
    >>> is_equivalent("\\\\text{(B)}", "B"), is_equivalent("252", "C(10, 5), or equivalently 252")
    (True, True)
    >>> is_equivalent("2\\\\sqrt{2}", "\\\\sqrt{8}"), is_equivalent("2\\\\sqrt{3}", "2\\\\sqrt{2}")
    (True, False)
    """
    if not isinstance(predicted, str) or not isinstance(gold, str):
        return False
    pred, gold = predicted.strip(), gold.strip()
    if pred == gold:
        return bool(gold)
    # The common case in math RL: two plain integers. Keep it to a few string operations.
    if pred.isdigit() and gold.isdigit() and pred.isascii() and gold.isascii():
        return pred.lstrip("0") == gold.lstrip("0")
    if (verdict := _signed_integers_verdict(pred, gold)) is not None:
        return verdict
    if len(pred) > _MAX_INPUT_CHARS or len(gold) > _MAX_INPUT_CHARS:
        return False
    try:
        return _is_equivalent(pred, gold, time.monotonic() + timeout_s)
    except Exception:  # a checker must never crash an episode: a bug here reads as "not equivalent"
        logger.debug("equivalence check failed for %.80r vs %.80r", pred, gold, exc_info=True)
        return False


def _signed_integers_verdict(pred: str, gold: str) -> bool | None:
    """``-3`` against ``-2`` or ``+5`` against ``5`` without parsing; None unless both are such integers."""
    pred_sign, gold_sign = pred[:1] in ("+", "-"), gold[:1] in ("+", "-")
    if not (pred_sign or gold_sign):
        return None
    pred_magnitude, gold_magnitude = pred[pred_sign:], gold[gold_sign:]
    digits = pred_magnitude + gold_magnitude
    if not (pred_magnitude.isdigit() and gold_magnitude.isdigit() and digits.isascii()):
        return None
    pred_magnitude, gold_magnitude = pred_magnitude.lstrip("0"), gold_magnitude.lstrip("0")
    if pred_magnitude != gold_magnitude:
        return False
    return not pred_magnitude or (pred[0] == "-") == (gold[0] == "-")  # -0 is 0


def _is_equivalent(pred: str, gold: str, deadline: float) -> bool:
    # Plain numbers on both sides ("-3", "0.5", "\frac{1}{2}") decide before any normalisation.
    raw_compact = pred.replace(" ", "")
    pred_numbers = parse_numbers(raw_compact)
    gold_numbers = _gold_numbers(gold) if pred_numbers else ()
    if gold_numbers:
        return any_number_match(pred_numbers, gold_numbers)
    pred = normalize(pred)
    if len(pred) > MAX_ANSWER_CHARS:
        return False
    known_numbers = pred_numbers if pred.replace(" ", "") == raw_compact else None  # often unchanged
    undecided = []
    for gold_form in gold_forms(gold):
        verdict = _cheap_verdict(pred, gold_form, known_numbers)
        if verdict:
            return True
        if verdict is None:
            undecided.append(gold_form)
    # The alternatives share one time budget.
    return any(time.monotonic() < deadline and _deep_verdict(pred, form, deadline) for form in undecided)


def _cheap_verdict(pred: str, gold: str, pred_numbers: tuple[Number, ...] | None = None) -> bool | None:
    """True/False when strings, numbers, structure or closed forms decide; None for math-verify.

    ``gold`` is always the gold side (its reading is cached); ``pred`` is read lazily, cheapest first
    (``pred_numbers``: its plain-number readings, when the caller has them).
    """
    if pred == gold:
        return True
    if not pred or not gold:
        return False
    gold_info = _gold(gold)
    pred_prose = prose(pred)
    if pred_prose is not None or gold_info.prose is not None:  # words match words, never math
        return pred_prose == gold_info.prose
    pred_compact = pred.replace(" ", "")
    if pred_compact == gold_info.compact:
        return True
    if pred_numbers is None:
        pred_numbers = parse_numbers(pred_compact)
    gold_numbers = gold_info.numbers

    if pred_numbers and gold_numbers:
        return any_number_match(pred_numbers, gold_numbers)
    if (gold_info.union or is_union(pred)) and (verdict := union_verdict(pred, gold)) is not None:
        return verdict
    pred_choice = choice_letter(pred)
    if pred_choice and gold_info.choice:
        return pred_choice == gold_info.choice
    pred_seq, gold_seq = sequence(pred), gold_info.sequence
    if pred_seq and gold_seq:
        return sequence_verdict(pred_seq, gold_seq, _cheap_item_verdict)
    if pred_seq or gold_seq:
        return _one_collection_verdict(pred, gold, pred_seq, gold_seq, bool(gold_numbers))
    if (pred[-1] == ")" or gold[-1] == ")") and (verdict := _point_verdict(pred, gold)) is not None:
        return verdict
    return numeric_verdict(pred, gold, pred_numbers, gold_numbers)


def _cheap_item_verdict(pred: str, gold: str) -> bool | None:
    return True if pred == gold else _cheap_verdict(normalize(pred), _normalize_gold(gold))


def _one_collection_verdict(
    pred: str, gold: str, pred_seq: Sequence | None, gold_seq: Sequence | None, gold_is_number: bool
) -> bool | None:
    """One side is a collection, the other is not: one answer for several is wrong, unless a
    top-level ``\\pm`` stands for two (``\\pm 1`` for ``\\{1, -1\\}``)."""
    if has_top_level_pm(pred) or has_top_level_pm(gold):
        return None
    if gold_seq and gold_seq.kind in ("set", "bare", "map"):
        return False
    scalar = evaluate(pred) if gold_seq else (gold_is_number or evaluate_gold(gold))
    return False if scalar is not None else None  # a number is no tuple or interval


def _point_verdict(pred: str, gold: str) -> bool | None:
    """``A(1, 0)`` against ``A(2, 0)`` by label and coordinates; a point is no number.

    math-verify cannot check these: it reads ``A(\\pm 5, 0)`` as its last number, 0.
    """
    pred_point, gold_point = labelled_point(pred), labelled_point(gold)
    if pred_point and gold_point:
        if pred_point[0] != gold_point[0]:
            return False  # "B(1, 0)" for "A(1, 0)" names another point (math-verify reads both as 0)
        return sequence_verdict(pred_point[1], gold_point[1], _cheap_item_verdict)
    if pred_point and evaluate_gold(gold) is not None:
        return False
    if gold_point and evaluate(pred) is not None:
        return False
    return None


def _deep_verdict(pred: str, gold: str, deadline: float) -> bool:
    """math-verify for what the cheap tiers left open: item by item inside matching structures."""
    pred_seq, gold_seq = sequence(pred), sequence(gold)
    if pred_seq and gold_seq:

        def compare(p: str, g: str) -> bool:
            p, g = normalize(p), _normalize_gold(g)

            verdict = _cheap_verdict(p, g)
            return verify_bounded(p, g, deadline) if verdict is None else verdict

        verdict = sequence_verdict(pred_seq, gold_seq, compare)
        if verdict is not None:
            return verdict
    return verify_bounded(pred, gold, deadline)
