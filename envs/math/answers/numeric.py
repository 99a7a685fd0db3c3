"""Plain numbers, compared exactly: the second tier of ``is_equivalent``.

Integers, decimals, ``a/b``, ``\\frac{a}{b}``, ``a^b``, scientific notation, thousands separators and
percentages become ``fractions.Fraction`` values. A *decimal* (written with a point) also matches an
exact value it correctly rounds, ``|d - v| <= ulp(d) / 2``, if it shows at least
``MIN_ROUNDED_DIGITS`` significant digits (``0.333`` matches ``1/3``, ``0.33`` does not); two
decimals must be equal. ``50%`` denotes both ``50`` and ``0.5``.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import NamedTuple

__all__ = ["MIN_ROUNDED_DIGITS", "Number", "any_number_match", "numbers_match", "parse_numbers"]

MIN_ROUNDED_DIGITS = 3  # fewer significant digits are too coarse to stand for an exact value
_MAX_POWER_DIGITS = 100_000  # a^b is computed exactly only below this many digits

_INT = r"[+-]?\d+"
_DECIMAL_RE = re.compile(r"([+-]?)(\d*)(?:\.(\d*))?(?:e([+-]?\d{1,4}))?", re.IGNORECASE)
_THOUSANDS_RE = re.compile(r"[+-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_SLASH_RE = re.compile(rf"({_INT})/({_INT})")
_FRAC_RE = re.compile(rf"([+-]?)\\[dt]?frac(?:\{{({_INT})\}}\{{({_INT})\}}|(\d)(\d))")
_POWER_RE = re.compile(rf"([+-]?)(\d+)\^(?:\{{({_INT})\}}|(\d))")
_SCIENTIFIC_RE = re.compile(r"([+-]?[\d.]+)(?:\\times|\\cdot|\*)10\^\{?([+-]?\d{1,4})\}?")


class Number(NamedTuple):  # a NamedTuple: built on every numeric check, cheaper than a dataclass
    """A plain number's exact value; for a decimal also its last place and significant digits."""

    value: Fraction
    ulp: Fraction | None = None  # unit in the last written place of a decimal; None when exact
    significant_digits: int = 0


def parse_numbers(text: str) -> tuple[Number, ...]:
    """The values a compact string denotes: one, two for a percentage (50% is 50 and 0.5), or none.

    >>> [str(n.value) for n in parse_numbers("50%")], parse_numbers("x")
    (['1/2', '50'], ())
    """
    percent = text.endswith("%")
    number = _number(text[:-1] if percent else text)
    if number is None:
        return ()
    if not percent:
        return (number,)
    ulp = None if number.ulp is None else number.ulp / 100
    return Number(number.value / 100, ulp, number.significant_digits), number


def any_number_match(pred: tuple[Number, ...], gold: tuple[Number, ...]) -> bool:
    """Whether any reading of ``pred`` matches any reading of ``gold``.

    >>> any_number_match(parse_numbers("0.333"), parse_numbers("\\\\frac{1}{3}"))
    True
    """
    return any(numbers_match(p, g) for p in pred for g in gold)


def numbers_match(a: Number, b: Number) -> bool:
    """Equal values, or a decimal that correctly rounds an exact value (see the module docstring).

    >>> two_thirds, rounded, too_short = (parse_numbers(text)[0] for text in ("2/3", "0.667", "0.67"))
    >>> numbers_match(rounded, two_thirds), numbers_match(too_short, two_thirds)
    (True, False)
    """

    if a.value == b.value:
        return True
    for approx, exact in ((a, b), (b, a)):  # a rounded decimal against an exact value
        if approx.ulp is not None and exact.ulp is None and approx.significant_digits >= MIN_ROUNDED_DIGITS:
            if abs(approx.value - exact.value) <= approx.ulp / 2:
                return True
    return False


def _number(text: str) -> Number | None:
    if not text or not (text[0].isdigit() or text[0] in "+-.\\"):
        return None
    if text[0] == "\\":  # only \frac{a}{b} starts with a command
        return _fraction(text)
    try:
        if _THOUSANDS_RE.fullmatch(text):
            text = text.replace(",", "")
        if scientific := _SCIENTIFIC_RE.fullmatch(text):
            text = f"{scientific.group(1)}e{scientific.group(2)}"
        if decimal := _DECIMAL_RE.fullmatch(text):
            return _decimal(*decimal.groups())
        if slash := _SLASH_RE.fullmatch(text):
            return Number(Fraction(int(slash.group(1)), int(slash.group(2))))
        if text[1:2] == "\\":
            return _fraction(text)  # -\frac{1}{2}
        if power := _POWER_RE.fullmatch(text):
            sign, base, exponent = power.group(1), int(power.group(2)), int(power.group(3) or power.group(4))
            if abs(exponent) * len(str(base)) <= _MAX_POWER_DIGITS:
                return Number(Fraction(base) ** exponent * (-1 if sign == "-" else 1))
    except (ValueError, ZeroDivisionError):  # 1/0, more than 4300 digits
        return None
    return None


def _fraction(text: str) -> Number | None:
    """``\\frac{1}{2}``, ``\\dfrac{-1}{2}``, ``-\\frac12``."""
    frac = _FRAC_RE.fullmatch(text)
    if frac is None:
        return None
    sign, num, den, num1, den1 = frac.groups()
    try:
        return Number(Fraction(int(sign + (num or num1)), int(den or den1)))
    except (ValueError, ZeroDivisionError):  # 1/0, more than 4300 digits
        return None


def _decimal(sign: str, whole: str, fraction: str | None, exponent: str | None) -> Number | None:
    if not whole and not fraction:
        return None
    scale = int(exponent or 0) - len(fraction or "")  # value = digits * 10**scale
    digits = int(f"{sign}{whole}{fraction or ''}")
    value = Fraction(digits * 10**scale) if scale >= 0 else Fraction(digits, 10**-scale)
    if fraction is None:  # "5" and "5e3" are exact
        return Number(value)
    return Number(value, Fraction(10) ** scale, len((whole + fraction).lstrip("0")))
