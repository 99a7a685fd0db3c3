"""Decide whether a predicted final answer means the same as a gold answer.

``is_equivalent`` checks in tiers, cheapest first; the first tier that can decide, decides:

1. **strings** — after light normalisation (``$``, ``\\left``/``\\right``, spacing commands, ``\\text{}``
   wrappers, ``\\dfrac``, degree signs, units and count nouns after a number, a leading ``x =``,
   remarks such as ``(i.e., ...)``, trailing periods), equal strings are equivalent.
2. **numbers** — integers, decimals, ``a/b``, ``\\frac{a}{b}``, ``a^b``, scientific notation,
   thousands separators and percentages are compared exactly as ``fractions.Fraction``. When both
   sides are plain numbers this verdict is final. Tolerance rule: a *decimal* (written with a point)
   also matches an exact value it correctly rounds, ``|d - v| <= ulp(d) / 2``, if it shows at least
   3 significant digits (``0.333`` and ``0.333333`` match ``1/3``; ``0.33`` and ``0.334`` do not); two
   decimals must be equal. ``50\\%`` matches both ``50`` and ``0.5``.
3. **structure** — sets and bare lists compare order-free, tuples and intervals ordered with their
   brackets, ``x=6, y=5`` as a mapping (or by position against ``(6, 5)``), multiple-choice letters,
   words (case- and punctuation-free, for yes/no and text answers), "no solutions" ~ ``\\emptyset``.
4. **math-verify** — what the tiers above cannot decide goes to ``math_verify.parse`` and
   ``math_verify.verify`` (symbolic equivalence, ~0.2-5 ms per call; imported lazily), item by item
   inside sets and tuples.

Gold answers may be free text (the CHAMP dataset): ``"C(10, 5), or equivalently 252"`` accepts
either form, ``"999 (i.e., all ...)"`` the part before the remark, ``"The limit exists and is equal to
X"`` accepts X, and plain-text math (``sqrt(3)/3``, ``2^(n-1)``) is turned into LaTeX for math-verify.

Time bounds. math-verify's timeouts use ``signal.alarm``, which works only in the main thread, and
no signal interrupts C-level big-integer arithmetic. So inputs that could explode (over
``_MAX_MV_CHARS`` characters, numeric power towers such as ``9^9^9``, huge exponents or factorials,
deep nesting) are rejected before math-verify sees them. In the main thread math-verify runs
in-process with its own timeouts: each of its calls (two parses, one verify) gets the time left,
rounded up to the whole seconds ``signal.alarm`` takes, so a check ends within ``timeout_s`` + 1 s.
In any other thread it runs in a lazily started single-worker ``multiprocessing`` pool (forkserver
context; the worker runs math-verify in its own main thread, where its alarms work), and the caller
waits ``timeout_s`` + 1 s on ``AsyncResult.get``; on timeout the pool is terminated and the next call
starts a fresh one (under a lock). Checks from several threads queue for the one worker, and the
wait counts against each caller's budget. Starting the worker takes a second or two, not charged to
``timeout_s``; like any multiprocessing user, a script that calls this from threads needs an
``if __name__ == "__main__":`` guard (the worker imports the main module).
"""

from __future__ import annotations

import functools
import logging
import math
import multiprocessing
import re
import threading
import time
from collections.abc import Callable
from fractions import Fraction
from typing import TYPE_CHECKING, NamedTuple

from gfcr.envs.math.extract import extract_boxed, matching_brace

if TYPE_CHECKING:
    from multiprocessing.pool import Pool

__all__ = ["is_equivalent"]

logger = logging.getLogger(__name__)

_MAX_INPUT_CHARS = 100_000  # longer raw input is no final answer (and is cheap to reject)
_MAX_ANSWER_CHARS = 2_000  # after normalisation
_MAX_MV_CHARS = 1_000  # math-verify (sympy) input cap
_MAX_POWER_DIGITS = 100_000  # a^b is computed exactly only below this many digits
_MAX_NESTING = 12  # math-verify's parser slows by ~0.1 s per level of brackets
_WORKER_STARTUP_S, _WORKER_RETRY_S = 30.0, 60.0
_WORKER_GRACE_S = 1.0  # the worker's alarms round up to whole seconds

_REPLACEMENTS = (
    ("\\$", ""), ("$", ""), ("\\displaystyle", ""), ("\\dfrac", "\\frac"), ("\\tfrac", "\\frac"),
    ("{,}", ","), ("\\%", "%"), ("^{\\circ}", ""), ("^\\circ", ""), ("\\circ", ""), ("\\degree", ""),
    ("°", ""), ("\\!", ""), ("\\,", ""), ("\\;", " "), ("\\:", " "), ("\\qquad", " "), ("\\quad", " "),
    ("\\ ", " "), ("~", " "), ("−", "-"), ("∞", "\\infty"), ("+\\infty", "\\infty"), ("±", "\\pm "),
    ("\\(", ""), ("\\)", ""), ("\\[", ""), ("\\]", ""),
)  # fmt: skip
_SPECIAL_CHARS_RE = re.compile(r"[\\$^{°~−∞±]")
_LEFT_RIGHT_RE = re.compile(r"\\(?:left|right)(?:\.|(?![A-Za-z]))")
_TEXT_CMD_RE = re.compile(r"\\(?:text|textbf|textit|textrm|mathrm|mathbf|mbox|operatorname)\s*\{")
_SPACE_RE = re.compile(r"\s+")
_ASSIGN_RE = re.compile(r"([A-Za-z]|\\[a-z]+)(?:_\{?\w+\}?)?\s*(?:=|\\in(?![a-z]))\s*(.+)", re.DOTALL)
_HEAD_WORDS_RE = re.compile(r"(\S+)\s+([A-Za-z][A-Za-z\s,.'-]*)")
_NOT_A_LABEL = frozenset("not no never except or and nor than more less least most but if".split())
_EMPTY_LATEX = frozenset(("\\emptyset", "\\varnothing", "∅", "\\{\\}", "{}"))
_EMPTY_WORDS_RE = re.compile(
    r"(?:there (?:are|is|exist|exists) )?no (?:[a-z-]+ ){0,3}(?:solutions?|values?|roots?|zeros?|"
    r"numbers?|pairs?|primes?|integers?|such [a-z]+)\b.*|none|empty set|the empty set"
)
_PROSE_CHARS_RE = re.compile(r"[A-Za-z0-9\s,.;:!?'\"()-]+")
_MATH_NAMES = frozenset("sqrt sin cos tan log ln exp floor ceil pi sum lim max min gcd lcm mod inf".split())
_SHORT_WORDS = frozenset("yes no none true false all odd one two six ten".split())
_CHOICE_RE = re.compile(r"(?:option |choice )?\(?([A-Za-z])\)?")
_NUMBER_WORDS = {word: str(n) for n, word in enumerate("zero one two three four five six seven".split())}

_INT = r"[+-]?\d+"
_DECIMAL_RE = re.compile(r"([+-]?)(\d*)(?:\.(\d*))?(?:e([+-]?\d{1,4}))?", re.IGNORECASE)
_THOUSANDS_RE = re.compile(r"[+-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_SLASH_RE = re.compile(rf"({_INT})/({_INT})")
_FRAC_RE = re.compile(rf"([+-]?)\\[dt]?frac(?:\{{({_INT})\}}\{{({_INT})\}}|(\d)(\d))")
_POWER_RE = re.compile(rf"([+-]?)(\d+)\^(?:\{{({_INT})\}}|(\d))")
_SCIENTIFIC_RE = re.compile(r"([+-]?[\d.]+)(?:\\times|\\cdot|\*)10\^\{?([+-]?\d{1,4})\}?")


def is_equivalent(predicted: str, gold: str, *, timeout_s: float = 3.0) -> bool:
    """True iff the predicted final answer means the same as the gold answer.

    ``predicted`` is a final answer (a ``\\boxed{...}`` in it is unwrapped); ``gold`` may list
    alternatives in free text. Never raises: non-str or hostile input gives False within about
    ``timeout_s`` seconds (see the module docstring for how that bound is kept).

    >>> is_equivalent("204", "204"), is_equivalent("203", "204")
    (True, False)
    >>> is_equivalent("\\\\dfrac{1}{2}", "0.5"), is_equivalent("0.05", "0.5"), is_equivalent("50\\\\%", "0.5")
    (True, False, True)
    >>> is_equivalent("x = \\\\{2, 1\\\\}", "{1,2}"), is_equivalent("(0, 1]", "[0, 1]")
    (True, False)
    >>> is_equivalent("\\\\text{(B)}", "B"), is_equivalent("252", "C(10, 5), or equivalently 252")
    (True, True)
    >>> is_equivalent("2\\\\sqrt{2}", "\\\\sqrt{8}")
    True
    """
    if not isinstance(predicted, str) or not isinstance(gold, str):
        return False
    pred, gold = predicted.strip(), gold.strip()
    if pred == gold:
        return bool(gold)
    # The common case in math RL: two plain integers. Keep it to a few string operations.
    if pred.isdigit() and gold.isdigit() and pred.isascii() and gold.isascii():
        return pred.lstrip("0") == gold.lstrip("0")
    if len(pred) > _MAX_INPUT_CHARS or len(gold) > _MAX_INPUT_CHARS:
        return False
    try:
        return _is_equivalent(pred, gold, time.monotonic() + timeout_s)
    except Exception:  # a checker must never crash an episode: a bug here reads as "not equivalent"
        logger.debug("equivalence check failed for %.80r vs %.80r", pred, gold, exc_info=True)
        return False


def _is_equivalent(pred: str, gold: str, deadline: float) -> bool:
    # Plain numbers on both sides ("-3", "0.5", "\frac{1}{2}") decide before any normalisation.
    pred_numbers = _numbers(pred.replace(" ", ""))
    gold_numbers = _numbers(gold.replace(" ", "")) if pred_numbers else ()
    if gold_numbers:
        return _any_number_match(pred_numbers, gold_numbers)
    pred = _normalize(pred)
    if len(pred) > _MAX_ANSWER_CHARS:
        return False
    undecided = []
    for gold_form in _gold_forms(gold):
        verdict = _cheap_verdict(pred, gold_form)
        if verdict:
            return True
        if verdict is None:
            undecided.append(gold_form)
    # The alternatives share one time budget.
    return any(time.monotonic() < deadline and _deep_verdict(pred, form, deadline) for form in undecided)


# ----------------------------------------------------------------------------- tier 1: normalisation


def _normalize(text: str) -> str:
    """Canonical string form of one answer (either side)."""
    if "\\boxed" in text or "\\fbox" in text:
        boxed = extract_boxed(text)
        text = text if boxed is None else boxed
    if len(text) > _MAX_ANSWER_CHARS:
        return text
    if _SPECIAL_CHARS_RE.search(text):  # most answers have none: skip the LaTeX clean-up
        text = _LEFT_RIGHT_RE.sub("", text)
        for old, new in _REPLACEMENTS:
            if old in text:
                text = text.replace(old, new)
        text = _unwrap_text_commands(text)
    text = _SPACE_RE.sub(" ", text).strip().rstrip(".").strip()
    text = _strip_remark(text) if text.endswith(")") else text
    text = _strip_assignment(text) if "=" in text or "\\in" in text else text
    text = _strip_trailing_words(text) if " " in text else text
    maybe_empty_words = text[:1] in "NnTtE" and _EMPTY_WORDS_RE.fullmatch(_words(text))
    if maybe_empty_words or text.replace(" ", "") in _EMPTY_LATEX:
        return "∅"  # "No integer solutions", "\emptyset", "none": all the empty set
    return text


def _unwrap_text_commands(text: str) -> str:
    """``5\\text{cm}`` -> ``5 cm``: keep the words, drop the command (spaces keep words apart)."""
    while match := _TEXT_CMD_RE.search(text):
        close = matching_brace(text, match.end() - 1)
        if close < 0:
            return text
        text = f"{text[: match.start()]} {text[match.end() : close]} {text[close + 1 :]}"
    return text


def _strip_remark(text: str) -> str:
    """``100 (i.e., all values)`` -> ``100``: drop a trailing parenthesis of words.

    The parenthesis holds no digit unless it starts with "i.e."/"e.g.": ``5 (or 6)`` is a hedge.
    """
    start = _opening_bracket(text)
    inner = text[start + 1 : -1].lstrip()
    is_remark = re.match(r"i\.e\.|e\.g\.", inner) or (
        re.match(r"[A-Za-z]{2,}\b", inner) and not re.search(r"\d", inner)
    )
    return text[:start].rstrip() if is_remark and start > 0 and text[start - 1] == " " else text


def _strip_assignment(text: str) -> str:
    """``x = 2`` -> ``2`` and ``x \\in [0, 1]`` -> ``[0, 1]``, for a single assignment only."""
    match = _ASSIGN_RE.fullmatch(text)
    if match and "=" not in match.group(2) and len(_split_top(match.group(2))) == 1:
        return match.group(2).strip()
    return text


def _strip_trailing_words(text: str) -> str:
    """``5 cm``, ``98 values``, ``0 is the only possible value`` -> the leading number (or letter)."""
    match = _HEAD_WORDS_RE.fullmatch(text)
    if not match:
        return text
    head, words = match.group(1), _words(match.group(2)).split()
    is_label = bool(words) and (len(words[0]) > 1 or words[0] in ("m", "g", "s", "l"))
    is_label = is_label and not _NOT_A_LABEL.intersection(words)  # "5 or more" is no "5"
    if is_label and (_numbers(head) or re.fullmatch("[A-Za-z]", head)):
        return head
    return text


def _words(text: str) -> str:
    """Lower-case words without punctuation or articles: ``The answer: Yes.`` -> ``answer yes``."""
    return " ".join(w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in ("the", "a", "an"))


@functools.lru_cache(maxsize=4096)
def _gold_forms(gold: str) -> tuple[str, ...]:
    """Normalised forms a gold answer accepts (cached: a group of samples shares its gold)."""
    forms = [gold]
    for part in re.split(r",\s*or\s+(?:equivalently|approximately|an equivalent form such as)\s+", gold):
        forms.append(part)
        if prefix := re.fullmatch(r"(?:the|it)\b[A-Za-z ,]*?\b(?:is equal to|equals|is)\s+(.+)", part, re.I):
            forms.append(prefix.group(1))  # "The limit exists and is equal to 2" -> "2"
        if leading := re.match(r"(yes|no)\s*[,.;:]", part, re.I):
            forms.append(leading.group(1))  # "Yes, and the sequence is ..." -> "Yes"
        if count := re.match(r"(?:at least|at most|exactly)\s+(\S+)", part, re.I):
            forms.append(_NUMBER_WORDS.get(count.group(1).lower(), count.group(1)))  # "Exactly one" -> "1"
    return tuple(dict.fromkeys(_normalize(form) for form in forms))


# ----------------------------------------------------------------------------- tiers 2 and 3

Compare = Callable[[str, str], "bool | None"]


def _cheap_verdict(pred: str, gold: str) -> bool | None:
    """True/False when strings, numbers or structure decide; None to defer to math-verify."""
    if pred == gold:
        return True
    if not pred or not gold:
        return False
    pred_prose, gold_prose = _prose(pred), _prose(gold)
    if pred_prose is not None or gold_prose is not None:  # words match words, never math
        return pred_prose == gold_prose
    pred_compact, gold_compact = pred.replace(" ", ""), gold.replace(" ", "")
    if pred_compact == gold_compact:
        return True
    pred_numbers, gold_numbers = _numbers(pred_compact), _numbers(gold_compact)
    if pred_numbers and gold_numbers:
        return _any_number_match(pred_numbers, gold_numbers)
    pred_choice, gold_choice = _CHOICE_RE.fullmatch(pred), _CHOICE_RE.fullmatch(gold)
    if pred_choice and gold_choice:
        return pred_choice.group(1).lower() == gold_choice.group(1).lower()
    pred_seq, gold_seq = _sequence(pred), _sequence(gold)
    if pred_seq and gold_seq:
        return _sequence_verdict(pred_seq, gold_seq, _cheap_item_verdict)
    if (gold_numbers and pred_seq) or (gold_seq and gold_seq.kind in ("set", "bare", "map") and not pred_seq):
        return None if "\\pm" in pred + gold else False  # one answer for several: wrong, unless ± pairs them
    return None


def _cheap_item_verdict(pred: str, gold: str) -> bool | None:
    return True if pred == gold else _cheap_verdict(_normalize(pred), _normalize(gold))


def _prose(text: str) -> str | None:
    """Words of a text answer (``\\text{Yes}``, ``Monotonically increasing``), None for math."""
    if not _PROSE_CHARS_RE.fullmatch(text):
        return None
    words = (w.lower() for w in re.findall(r"[A-Za-z]{2,}", text))
    # Short letter runs ("xy", "abc") are products of variables, "sqrt" and "sin" are math.
    if any((len(w) >= 4 and w not in _MATH_NAMES) or w in _SHORT_WORDS for w in words):
        return _words(text)
    return None


class _Number(NamedTuple):  # a NamedTuple: built on every numeric check, cheaper than a dataclass
    value: Fraction
    ulp: Fraction | None = None  # unit in the last written place of a decimal; None when exact
    significant_digits: int = 0


def _numbers(text: str) -> tuple[_Number, ...]:
    """The values a compact string denotes: one, two for a percentage (50% is 50 and 0.5), or none."""
    percent = text.endswith("%")
    number = _number(text[:-1] if percent else text)
    if number is None:
        return ()
    if not percent:
        return (number,)
    ulp = None if number.ulp is None else number.ulp / 100
    return _Number(number.value / 100, ulp, number.significant_digits), number


def _number(text: str) -> _Number | None:
    if not text or not (text[0].isdigit() or text[0] in "+-.\\"):
        return None
    try:
        if _THOUSANDS_RE.fullmatch(text):
            text = text.replace(",", "")
        if scientific := _SCIENTIFIC_RE.fullmatch(text):
            text = f"{scientific.group(1)}e{scientific.group(2)}"
        if decimal := _DECIMAL_RE.fullmatch(text):
            return _decimal(*decimal.groups())
        if slash := _SLASH_RE.fullmatch(text):
            return _Number(Fraction(int(slash.group(1)), int(slash.group(2))))
        if frac := _FRAC_RE.fullmatch(text):  # \frac{1}{2}, \dfrac{-1}{2}, \frac12
            sign, num, den, num1, den1 = frac.groups()
            return _Number(Fraction(int(sign + (num or num1)), int(den or den1)))
        if power := _POWER_RE.fullmatch(text):
            sign, base, exponent = power.group(1), int(power.group(2)), int(power.group(3) or power.group(4))
            if abs(exponent) * len(str(base)) <= _MAX_POWER_DIGITS:
                return _Number(Fraction(base) ** exponent * (-1 if sign == "-" else 1))
    except (ValueError, ZeroDivisionError):  # 1/0, more than 4300 digits
        return None
    return None


def _decimal(sign: str, whole: str, fraction: str | None, exponent: str | None) -> _Number | None:
    if not whole and not fraction:
        return None
    scale = int(exponent or 0) - len(fraction or "")  # value = digits * 10**scale
    digits = int(f"{sign}{whole}{fraction or ''}")
    value = Fraction(digits * 10**scale) if scale >= 0 else Fraction(digits, 10**-scale)
    if fraction is None:  # "5" and "5e3" are exact
        return _Number(value)
    return _Number(value, Fraction(10) ** scale, len((whole + fraction).lstrip("0")))


def _any_number_match(pred: tuple[_Number, ...], gold: tuple[_Number, ...]) -> bool:
    return any(_numbers_match(p, g) for p in pred for g in gold)


def _numbers_match(a: _Number, b: _Number) -> bool:
    if a.value == b.value:
        return True
    for approx, exact in ((a, b), (b, a)):  # a rounded decimal against an exact value
        if approx.ulp is not None and exact.ulp is None and approx.significant_digits >= 3:
            if abs(approx.value - exact.value) <= approx.ulp / 2:
                return True
    return False


class _Sequence(NamedTuple):
    kind: str  # "set" {..}, "bare" a, b and c, "()" "(]" "[)" "[]" tuples and intervals, "map" x=1, y=2
    items: list[str]
    names: list[str] | None = None  # the variables of a "map"


def _sequence(text: str) -> _Sequence | None:
    """The items of a set, tuple, interval, bare list or assignment list; None for a single item."""
    kind, inner = "bare", text
    if text[:2] == "\\{" and text[-2:] == "\\}" and len(text) > 3:
        kind, inner = "set", text[2:-2]
    elif text[0] in "([{" and text[-1] in ")]}" and _opening_bracket(text) == 0:
        kind, inner = ("set" if text[0] == "{" else text[0] + text[-1]), text[1:-1]
    elif not re.search(r"[A-Za-z]{3,}", re.sub(r"\\[A-Za-z]+|\band\b", "", text)):
        inner = re.sub(r",?\s+and\s+", ",", text)  # "1, 4 and 9", but not "The limit exists and ..."
    items = [item.strip() for item in _split_top(inner)]
    if len(items) < 2:
        return None
    pairs = [_ASSIGN_RE.fullmatch(item) for item in items]
    if all(pairs) and kind in ("bare", "()"):
        names = [m.group(1) for m in pairs]  # type: ignore[union-attr]
        values = [m.group(2).strip() for m in pairs]  # type: ignore[union-attr]
        if len(set(names)) == len(names):  # "x=6, y=5": one assignment
            return _Sequence("map", values, names)
        if len(set(names)) == 1:  # "x=16 and x=81": the solutions for one unknown
            return _Sequence(kind, values)
    return _Sequence(kind, items)


def _sequence_verdict(pred: _Sequence, gold: _Sequence, compare: Compare) -> bool | None:
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
        return None if any("\\pm" in item for item in pred + gold) else False
    if len(pred) > 32:
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


def _split_top(text: str) -> list[str]:
    """Split on commas outside any bracket: ``(1, 2), 3`` -> [``(1, 2)``, `` 3``]."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        depth += 1 if char in "([{" else -1 if char in ")]}" else 0
        if char == "," and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    return [*parts, text[start:]]


def _opening_bracket(text: str) -> int:
    """Index of the bracket that the last character (one of ``)]}``) closes, -1 if none."""
    depth = 0
    for index in range(len(text) - 1, -1, -1):
        depth += 1 if text[index] in ")]}" else -1 if text[index] in "([{" else 0
        if depth == 0:
            return index
    return -1


# ----------------------------------------------------------------------------- tier 4: math-verify


def _deep_verdict(pred: str, gold: str, deadline: float) -> bool:
    """math-verify for what the cheap tiers left open: item by item inside matching structures."""
    pred_seq, gold_seq = _sequence(pred), _sequence(gold)
    if pred_seq and gold_seq:

        def compare(p: str, g: str) -> bool:
            p, g = _normalize(p), _normalize(g)
            verdict = _cheap_verdict(p, g)
            return _math_verify(p, g, deadline) if verdict is None else verdict

        verdict = _sequence_verdict(pred_seq, gold_seq, compare)
        if verdict is not None:
            return verdict
    return _math_verify(pred, gold, deadline)


def _math_verify(pred: str, gold: str, deadline: float) -> bool:
    timeout_s = deadline - time.monotonic()
    pred_latex, gold_latex = _to_latex(pred), _to_latex(gold)
    if timeout_s <= 0 or any(map(_explosive, (pred, gold, pred_latex, gold_latex))):
        return False
    if threading.current_thread() is threading.main_thread():
        return _verify_in_process(pred_latex, gold_latex, timeout_s)
    return _WORKER.verify(pred_latex, gold_latex, timeout_s)


_GOLD_PARSES: dict[str, list] = {}  # used by one thread only: the main one, here or in the worker


def _verify_in_process(pred_latex: str, gold_latex: str, timeout_s: float) -> bool:
    """math-verify with its own signal.alarm timeouts; main thread only (here or in the worker)."""
    import math_verify

    deadline = time.monotonic() + timeout_s

    def seconds_left() -> int:  # each call gets what is left; alarms take whole seconds, rounded up
        return math.ceil(deadline - time.monotonic())

    try:
        gold_parsed = _GOLD_PARSES.get(gold_latex) or math_verify.parse(
            gold_latex, parsing_timeout=seconds_left()
        )
        if gold_parsed and len(_GOLD_PARSES) < 4096:  # failures are not cached: they may be timeouts
            _GOLD_PARSES[gold_latex] = gold_parsed
        if not gold_parsed or seconds_left() <= 0:
            return False
        pred_parsed = math_verify.parse(pred_latex, parsing_timeout=seconds_left())
        if not pred_parsed or seconds_left() <= 0:
            return False
        return bool(math_verify.verify(gold_parsed, pred_parsed, timeout_seconds=seconds_left()))
    except Exception:  # in the worker, an error would otherwise cost a restart
        return False


_CALL_TEMPLATES = {"sqrt": r"\sqrt{{{}}}", "floor": r"\lfloor {} \rfloor", "ceil": r"\lceil {} \rceil"}
_CALL_TEMPLATES["sum_"] = r"\sum_{{{}}}"
_PLAIN_CALL_RE = re.compile(r"(?<![A-Za-z\\])(sqrt|C|floor|ceil|sum_)\(|\^\(")
_PLAIN_REPLACEMENTS = (
    (re.compile(r"\*\*\s*([\w.]+)"), r"^{\1}"),  # Python's power: 2**10 -> 2^{10}
    (re.compile(r"\*\*"), "^"),
    (re.compile(r"\*"), r" \\cdot "),
    (re.compile(r"\.\.\."), r"\\ldots "),
    (re.compile(r"≥"), r"\\geq "),
    (re.compile(r"≤"), r"\\leq "),
    (re.compile(r"≠"), r"\\neq "),
    (re.compile(r"(?<![A-Za-z\\])pi(?![A-Za-z])"), r"\\pi "),
    (re.compile(r"(?<![A-Za-z\\])inf(?:inity)?(?![A-Za-z])"), r"\\infty "),
)


def _to_latex(text: str) -> str:
    """Wrap an answer for math-verify, turning plain-text math (CHAMP's ``sqrt(3)/3``) into LaTeX."""
    for pattern, latex in _PLAIN_REPLACEMENTS:
        text = pattern.sub(latex, text)
    return f"${_convert_calls(text)}$"


def _convert_calls(text: str) -> str:
    """``sqrt(x)`` -> ``\\sqrt{x}``, ``C(n, k)`` -> ``\\binom{n}{k}``, ``2^(n-1)`` -> ``2^{n-1}`` (nested)."""
    out, position = [], 0
    while match := _PLAIN_CALL_RE.search(text, position):
        open_index = match.end() - 1
        close = _closing_bracket(text, open_index)
        if close < 0:
            break
        args = [_convert_calls(arg.strip()) for arg in _split_top(text[open_index + 1 : close])]
        rendered = _render_call(match.group(1), args) or text[match.start() : close + 1]
        if text[match.start() - 1 : match.start()] == "^":
            rendered = f"{{{rendered}}}"  # 2^floor(n/2): the whole call is the exponent
        out.append(text[position : match.start()] + rendered)
        position = close + 1
    return "".join(out) + text[position:]


def _render_call(name: str | None, args: list[str]) -> str | None:
    body = ", ".join(args)
    if name is None:  # "^(...)"
        return f"^{{{body}}}"
    if name == "C":
        return f"\\binom{{{args[0]}}}{{{args[1]}}}" if len(args) == 2 else None
    return _CALL_TEMPLATES[name].format(body)


def _closing_bracket(text: str, start: int) -> int:
    """Index of the bracket closing the one at ``start`` (any of ``([{``), -1 if none."""
    depth = 0
    for index in range(start, len(text)):
        depth += 1 if text[index] in "([{" else -1 if text[index] in ")]}" else 0
        if depth == 0:
            return index
    return -1


_POWER_OP_RE = re.compile(r"\^|\*\*")
_TOKEN_RE = re.compile(r"\s*[+-]?[\w.]*")


def _explosive(text: str) -> bool:
    """Input whose evaluation could run for minutes, partly inside C code that no alarm interrupts."""
    if len(text) > _MAX_MV_CHARS or _nesting_depth(text) > _MAX_NESTING:
        return True
    if re.search(r"\d{5,}\s*!|!\s*[)}]*\s*!", text):
        return True  # 100000!, (9!)!: sympy evaluates numeric factorials eagerly
    for match in re.finditer(r"[)}]\s*!", text):
        group = text[_opening_bracket(text[: match.start() + 1]) : match.start()]
        if _is_numeric(group) and re.search(r"[\^*!]|\d{5}", group):
            return True  # (10^6)!, but not (3)!
    for match in _POWER_OP_RE.finditer(text):
        exponent, end = _power_argument(text, match.end())
        tower = any(op in exponent for op in ("^", "**", "!")) or text[end:].lstrip().startswith(("^", "**"))
        if (tower and _is_numeric(exponent)) or re.search(r"\d{6,}", exponent):
            return True  # 9^9^9, 10**10**10, 2^{1000000}
    return False


def _is_numeric(text: str) -> bool:
    """No variables (LaTeX command names do not count): sympy would evaluate it to a number."""
    return not re.search(r"[A-Za-z]", re.sub(r"\\[A-Za-z]+", "", text))


def _power_argument(text: str, start: int) -> tuple[str, int]:
    """The exponent that starts at ``start`` (after ``^`` or ``**``) and the index where it ends."""
    start = len(text) - len(text[start:].lstrip())
    if text[start : start + 1] in ("{", "("):
        close = _closing_bracket(text, start)
        end = len(text) if close < 0 else close + 1
        return text[start:end], end
    match = _TOKEN_RE.match(text, start)
    return match.group(), match.end()  # type: ignore[union-attr]  # the pattern also matches ""


def _nesting_depth(text: str) -> int:
    depth = deepest = 0
    for char in text:
        depth += 1 if char in "([{" else -1 if char in ")]}" else 0
        deepest = max(deepest, depth)
    return deepest


def _warm_up() -> bool:
    import math_verify

    return bool(math_verify.verify(math_verify.parse("$1$"), math_verify.parse("$1$")))


class _Worker:
    """A single-process pool for non-main threads, replaced after a timeout (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pool: Pool | None = None
        self._failed_at = -_WORKER_RETRY_S

    def verify(self, pred_latex: str, gold_latex: str, timeout_s: float) -> bool:
        return bool(self.run(_verify_in_process, (pred_latex, gold_latex, timeout_s), timeout_s))

    def run(self, function: Callable[..., object], args: tuple, timeout_s: float) -> object | None:
        """``function(*args)`` in the worker, or None when it fails or outlives ``timeout_s`` + grace."""
        pool = self._get_pool()
        if pool is None:
            return None
        try:
            return pool.apply_async(function, args).get(timeout_s + _WORKER_GRACE_S)
        except multiprocessing.TimeoutError:
            logger.warning("math-verify timed out after %.1f s; restarting its worker", timeout_s)
        except Exception:  # a dead worker or a closed pool: start afresh next time
            logger.warning("math-verify worker failed", exc_info=True)
        self._discard(pool)
        return None

    def _get_pool(self) -> Pool | None:
        with self._lock:
            if self._pool is None and time.monotonic() - self._failed_at > _WORKER_RETRY_S:
                pool = None
                try:  # forkserver: the worker forks from a clean server, not from this threaded process
                    context = multiprocessing.get_context("forkserver")
                    # Imported once in the server (if this starts it), so a replacement worker is quick.
                    context.set_forkserver_preload(["__main__", __name__, "math_verify"])
                    pool = context.Pool(processes=1)
                    pool.apply_async(_warm_up).get(_WORKER_STARTUP_S)  # imports, not charged to a check
                    self._pool = pool
                except Exception:  # e.g. a daemon process may not have children
                    logger.warning("cannot start the math-verify worker", exc_info=True)
                    self._failed_at = time.monotonic()
                    if pool is not None:
                        pool.terminate()
            return self._pool

    def _discard(self, pool: Pool) -> None:
        with self._lock:
            if self._pool is pool:
                self._pool = None
        pool.terminate()


_WORKER = _Worker()
