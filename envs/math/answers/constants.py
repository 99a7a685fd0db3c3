"""Closed forms evaluated as numbers: the tier between exact numbers and math-verify.

``evaluate`` reads an expression built only from numbers, ``+ - * /``, ``\\cdot``, ``\\times``,
``\\div``, ``^``, parentheses and braces, ``\\frac``, ``\\sqrt{}``, ``\\sqrt[n]{}``, ``\\pi``, ``e`` and
implicit products (``2\\sqrt{3}``, ``3\\pi``, ``2(1+\\sqrt{5})``), with a strict recursive-descent
parser (no ``eval``, no sympy); anything else gives None and falls through to math-verify. Values
are exact while rational and bounded floats otherwise; ``arithmetic`` says when two of them are
certainly equal or different (relative tolerance ``REL_TOL = 1e-12``) and when it cannot tell.

Ambiguous notation is left to math-verify: ``1/2n`` (1/(2n) or n/2?), ``2^10`` (TeX reads
``2^{1}0``), ``2 3``, a double superscript, runs of letters (``sqrt``, ``xy``), capitals, subscripts.

Mixed numbers: an integer written right before a ``\\frac`` whose value is a positive rational is a
mixed number, ``2\\frac{1}{2} = 5/2`` and ``-1\\tfrac{3}{4} = -7/4``, as in print and as math-verify
reads it (latex2sympy2's ``interpret_as_mixed_fractions``), so both tiers agree; a product needs an
operator, ``2\\cdot\\frac{1}{2} = 1``. An irrational fraction stays a product (``2\\frac{\\sqrt{3}}{2}``);
a mixed number with a power or a further factor after it (``2\\frac{1}{2}^2``, ``2\\frac{1}{2}\\pi``)
reads differently in print and in math-verify, so it gets no verdict here.

Variables: ``n``, ``x``, ... (one lower-case letter, not ``e`` or ``i``) take fixed values in (1, 2);
a sampled value is provisional, so an expression with variables can only be proved *different*
(``10^{2^n-n-2}`` is not ``10^{2^n-n-1}``: they differ at the sample point, so they differ as
functions); proving it equal stays with math-verify's symbolic check.

``numeric_verdict`` applies this to two answers; a plain decimal keeps the rounding rule of
``numeric`` (``2.8284`` correctly rounds ``2\\sqrt{2}``, so it matches; ``2.8285`` does not). Against
a form with ``\\pi`` or ``e`` it must show ``MIN_DIGITS_FOR_PI_E`` significant digits: ``3.14``,
``6.28`` and ``2.72`` are the schoolbook stand-ins for ``\\pi``, ``2\\pi`` and ``e``, written by
substituting the stand-in rather than by computing (``3.142`` and ``3.1416`` match ``\\pi``).
"""

from __future__ import annotations

import functools
import re
from fractions import Fraction

from gfcr.envs.math.answers.arithmetic import (
    EULER,
    PI,
    Approx,
    NoVerdict,
    U,
    Value,
    add,
    compare,
    divide,
    multiply,
    negate,
    power,
    root,
)
from gfcr.envs.math.answers.numeric import MIN_ROUNDED_DIGITS, Number, numbers_match

__all__ = ["evaluate", "evaluate_gold", "numeric_verdict"]

_MAX_TOKENS = 200
MIN_DIGITS_FOR_PI_E = 4  # a decimal for a value with pi or e: more than the stand-ins 3.14, 2.72 show
_PI_OR_E_RE = re.compile(r"\\pi(?![A-Za-z])|(?<![\\A-Za-z])e(?![A-Za-z])")
_ALLOWED_RE = re.compile(r"[0-9a-z\s\\{}()\[\]+\-*/^.]+", re.IGNORECASE)
_TOKEN_RE = re.compile(r"\d+(?:\.\d+)?|\.\d+|\\[A-Za-z]+|\\.|\S")
_LETTER_RUN_RE = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{2,}")  # a run of letters that is no command name
_PRODUCT_OPS = frozenset(("*", "\\cdot", "\\times"))
_DIVISION_OPS = frozenset(("/", "\\div"))
_FRAC_COMMANDS = frozenset(("\\frac", "\\dfrac", "\\tfrac"))
# Tokens that may start an implicit product's second factor: never a number (``2 3`` is no 6)
# nor a brace (``2{3}`` renders as 23).
_IMPLICIT_STARTS = frozenset(("(", "\\sqrt", "\\pi", *_FRAC_COMMANDS))
# Each variable's sample point: distinct values in (1, 2) from the golden-ratio sequence.
_SAMPLES = {
    letter: Approx(1 + ((index + 1) * 0.6180339887498949) % 1, U, True)
    for index, letter in enumerate("abcdfghjklmnopqrstuvwxyz")
}
Reading = tuple[Value, "Number | None"]  # a value, and the plain number it was written as


def evaluate(text: str) -> Value | None:
    """The value of a closed form, or None when outside the grammar or not safely computable.

    >>> evaluate("\\\\frac{3}{4}+\\\\frac{1}{4}") == 1, evaluate("2^{10}-1"), evaluate("\\\\sqrt[3]{8}")
    (True, 1023, 2)
    >>> compare(evaluate("\\\\sqrt{8}"), evaluate("2\\\\sqrt{2}")), evaluate("x_1"), evaluate("\\\\sin x")
    (True, None, None)
    """
    if not text or len(text) > 4 * _MAX_TOKENS or not _ALLOWED_RE.fullmatch(text):
        return None
    if _LETTER_RUN_RE.search(text):  # "sqrt(3)", "xy": words or unknown products
        return None
    tokens = _TOKEN_RE.findall(text)
    if len(tokens) > _MAX_TOKENS:
        return None
    try:
        return _Parser([*tokens, ""]).parse()
    except (NoVerdict, OverflowError, ZeroDivisionError, ValueError, RecursionError):
        return None


evaluate_gold = functools.lru_cache(maxsize=4096)(evaluate)  # a group of samples shares its gold


def numeric_verdict(
    pred: str, gold: str, pred_numbers: tuple[Number, ...] = (), gold_numbers: tuple[Number, ...] = ()
) -> bool | None:
    """True/False when both answers are numbers or closed forms that decide; None otherwise.

    ``pred_numbers``/``gold_numbers``: the plain-number readings already parsed (``numeric``).
    ``\\pm a`` against ``\\pm b`` compares ``|a|`` with ``|b|``.

    >>> numeric_verdict("2\\\\sqrt{3}", "2\\\\sqrt{2}"), numeric_verdict("\\\\sqrt{8}", "2\\\\sqrt{2}")
    (False, True)
    >>> from gfcr.envs.math.answers.numeric import parse_numbers
    >>> numeric_verdict("2.8284", "2\\\\sqrt{2}", parse_numbers("2.8284")), numeric_verdict("n+1", "n+1")
    (True, None)
    >>> numeric_verdict("3.14", "\\\\pi", parse_numbers("3.14")), numeric_verdict("2\\\\frac{1}{2}", "5/2")
    (False, True)
    """
    if pred.startswith("\\pm") and gold.startswith("\\pm"):
        pred_value, gold_value = evaluate(pred[3:]), evaluate_gold(gold[3:])
        if pred_value is None or gold_value is None:
            return None
        return compare(_absolute(pred_value), _absolute(gold_value))
    pred_readings = _readings(pred_numbers) or _single(evaluate(pred))
    gold_readings = _readings(gold_numbers) or _single(evaluate_gold(gold))
    if not pred_readings or not gold_readings:
        return None
    digits = (_min_digits(pred), _min_digits(gold))
    verdicts = {_reading_verdict(p, g, digits) for p in pred_readings for g in gold_readings}
    return True if True in verdicts else None if None in verdicts else False


def _readings(numbers: tuple[Number, ...]) -> list[Reading]:
    return [(number.value, number) for number in numbers]


def _single(value: Value | None) -> list[Reading]:
    return [] if value is None else [(value, None)]


def _absolute(value: Value) -> Value:
    if isinstance(value, Approx):
        return Approx(abs(value.value), value.error, value.provisional)
    return -value if value < 0 else value


def _min_digits(text: str) -> int:
    """The significant digits a decimal needs to stand for the value of ``text`` (see above)."""
    return MIN_DIGITS_FOR_PI_E if _PI_OR_E_RE.search(text) else MIN_ROUNDED_DIGITS


def _reading_verdict(pred: Reading, gold: Reading, min_digits: tuple[int, int]) -> bool | None:
    """Two values; a decimal among them may also match by rounding (see ``numeric``).

    ``min_digits``: the significant digits a decimal needs against pred's and gold's value.
    """
    (pred_value, pred_number), (gold_value, gold_number) = pred, gold
    if pred_number is not None and gold_number is not None:
        return numbers_match(pred_number, gold_number)
    same = compare(pred_value, gold_value)
    if same is not False:
        return same
    if pred_number is not None:
        return _rounds_to(pred_number, gold_value, min_digits[1])
    if gold_number is not None:
        return _rounds_to(gold_number, pred_value, min_digits[0])
    return False


def _rounds_to(decimal: Number, value: Value, min_digits: int = MIN_ROUNDED_DIGITS) -> bool | None:
    """Whether ``decimal`` correctly rounds ``value`` (``numeric``'s rule), when certain."""
    if decimal.ulp is None or decimal.significant_digits < min_digits:
        return False
    if not isinstance(value, Approx):
        return numbers_match(decimal, Number(Fraction(value)))
    try:
        half_ulp, distance = float(decimal.ulp) / 2, abs(float(decimal.value) - value.value)
    except OverflowError:  # 1e400 against a float
        return None
    slack = 2 * abs(value.value) * (value.error + U)
    if distance + slack <= half_ulp and not value.provisional:
        return True
    return False if distance - slack > half_ulp else None


# ----------------------------------------------------------------------------- parsing


class _Parser:
    """Recursive descent over tokens: sum -> term -> factor (sign, power) -> primary.

    ``tokens`` ends with a sentinel ``""``, so looking one token ahead never runs off the end.
    """

    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.index = 0

    def parse(self) -> Value:
        value = self.parse_sum()
        if self.index != len(self.tokens) - 1:
            raise NoVerdict  # a token the grammar has no place for
        return value

    def take(self, expected: str) -> None:
        if self.tokens[self.index] != expected:
            raise NoVerdict
        self.index += 1

    def parse_sum(self) -> Value:
        value = self.parse_term()
        while (token := self.tokens[self.index]) == "+" or token == "-":
            self.index += 1
            right = self.parse_term()
            value = add(value, right if token == "+" else negate(right))
        return value

    def parse_term(self) -> Value:
        value = self.parse_factor()
        divided = False
        while token := self.tokens[self.index]:
            if token in _PRODUCT_OPS or token in _DIVISION_OPS:
                self.index += 1
                right = self.parse_factor()
                divided = token in _DIVISION_OPS
                value = divide(value, right) if divided else multiply(value, right)
            elif token in _IMPLICIT_STARTS or _is_letter(token):
                if divided:
                    raise NoVerdict  # "1/2n": 1/(2n) or n/2? Left to math-verify.
                value = multiply(value, self.parse_factor(signed=False))
            else:
                break
        return value

    def parse_factor(self, *, signed: bool = True) -> Value:
        """A signed power: ``-x^2`` is ``-(x^2)``; a double superscript is a LaTeX error."""
        token = self.tokens[self.index]
        if signed and (token == "-" or token == "+"):
            self.index += 1
            value = self.parse_factor()
            return value if token == "+" else negate(value)
        base = self.parse_primary()
        if self.tokens[self.index] != "^":
            return base
        self.index += 1
        exponent = self.parse_argument(parentheses=True)
        if self.tokens[self.index] == "^":
            raise NoVerdict
        return power(base, exponent)

    def parse_primary(self) -> Value:
        token = self.tokens[self.index]
        self.index += 1
        if token[:1].isdigit() or token[:1] == ".":
            literal = _literal(token)
            if self.tokens[self.index] in _FRAC_COMMANDS and type(literal) is int:
                return self.parse_mixed(literal)
            return literal
        if token == "(" or token == "{":
            value = self.parse_sum()
            self.take(")" if token == "(" else "}")
            return value
        if token in _FRAC_COMMANDS:
            numerator = self.parse_argument()
            return divide(numerator, self.parse_argument())
        if token == "\\sqrt":
            return self.parse_root()
        if token == "\\pi":
            return PI
        if token == "e":
            return EULER
        if token in _SAMPLES:
            return _SAMPLES[token]
        raise NoVerdict

    def parse_mixed(self, whole: int) -> Value:
        """``2\\frac{1}{2}``: a mixed number (see the module docstring), or ``whole`` alone when the
        fraction is irrational (``2\\frac{\\sqrt{3}}{2}``: the product is parsed as usual)."""
        start, tokens = self.index, self.tokens.copy()  # parse_argument may split a token ("\frac12")
        self.index += 1
        fraction = divide(self.parse_argument(), self.parse_argument())
        if isinstance(fraction, Approx):
            self.index, self.tokens = start, tokens
            return whole
        following = self.tokens[self.index]
        if fraction <= 0 or following == "^" or following in _IMPLICIT_STARTS or _is_letter(following):
            raise NoVerdict  # "2\frac{1}{2}^2", "2\frac{1}{2}x": print and math-verify differ
        return whole + fraction

    def parse_root(self) -> Value:
        degree: Value = 2
        if self.tokens[self.index] == "[":
            self.index += 1
            degree = self.parse_sum()
            self.take("]")
        if isinstance(degree, Approx) or degree.denominator != 1:
            raise NoVerdict
        return root(self.parse_argument(), int(degree))

    def parse_argument(self, *, parentheses: bool = False) -> Value:
        """A command's or superscript's argument: a group, or one character (``\\frac12``, ``2^3``).

        ``parentheses``: a superscript may be ``^(n-1)``, the plain-text form in CHAMP's answers.
        """
        tokens, index = self.tokens, self.index
        token = tokens[index]
        if token == "{" and tokens[index + 1].isdigit() and tokens[index + 2] == "}":
            self.index += 3  # "{3}", the common case, without the descent
            return int(tokens[index + 1])
        if token == "{" or (parentheses and token == "("):
            return self.parse_primary()
        if token[:1].isdigit():
            if len(token) == 1:
                self.index += 1
            elif token[1].isdigit():  # "\frac12": the first digit alone is the argument
                tokens[index] = token[1:]
            else:
                raise NoVerdict  # "\frac2.5"
            return int(token[0])
        if _is_letter(token) or token == "\\pi":
            return self.parse_primary()
        raise NoVerdict


def _is_letter(token: str) -> bool:
    return len(token) == 1 and token.isascii() and token.isalpha()


def _literal(token: str) -> int | Fraction:
    if "." not in token:
        return int(token)
    whole, _, fraction = token.partition(".")
    return Fraction(int(whole or "0") * 10 ** len(fraction) + int(fraction or "0"), 10 ** len(fraction))
