"""Exact-or-bounded arithmetic on real numbers, for the numeric tier of ``is_equivalent``.

A ``Value`` stays exact (``int``/``Fraction``) while the arithmetic is rational; an irrational step
(a non-square root, ``\\pi``, a fractional power) turns it into an ``Approx``: a float with a bound
on its relative error, carried through every operation (first-order propagation, each rounding
counted as ``U = 2**-52``, twice the unit roundoff). ``compare`` then decides:

- both exact: equal iff equal (``2^{100}-1`` is not ``2^{100}``);
- the floats differ by more than twice their error bounds: **different, certainly** (the true
  values cannot both lie within their bounds);
- they agree within ``REL_TOL = 1e-12`` relative and the bounds are tighter than that: **equal**.
  Floats carry ~16 digits, so 1e-12 leaves three to four digits for rounding errors and
  cancellation (a larger error bound gives no verdict). Two different closed forms agreeing to
  12 digits need large numbers (``\\sqrt{10^{30}+1}`` against ``10^{15}``), so an ``Approx`` that
  took in an exact number beyond ``MAX_TRUSTED = 10^9`` (numerator or denominator) or grew beyond
  it is *provisional*: it may prove a difference, never an equality. A wrong answer equal to the
  gold to 12 digits with smaller numbers would have to be built for the purpose, and a policy able
  to build it already knows the answer;
- otherwise: no verdict.

Operations raise ``NoVerdict`` (or ``OverflowError``/``ZeroDivisionError``) where no value can be
trusted: overflow, division by zero, a root of a negative number, a cancellation to exactly 0.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import NamedTuple

__all__ = [
    "EULER",
    "PI",
    "REL_TOL",
    "Approx",
    "NoVerdict",
    "Value",
    "add",
    "certain_order",
    "compare",
    "divide",
    "multiply",
    "negate",
    "power",
    "root",
    "sign",
    "to_approx",
]

REL_TOL = 1e-12  # relative agreement that counts as equal (see the module docstring)
U = 2.0**-52  # one rounding, generously: twice the unit roundoff of a double
MAX_TRUSTED = 10**9  # beyond this, close floats may hide different values: equality unproven
_MAX_EXACT_BITS = 4096  # exact powers stop here (then floats, which overflow into "no verdict")
MAX_ROOT = 64  # \\sqrt[n]{} and fractional powers with a larger n are left to math-verify


class Approx(NamedTuple):
    """A float, a bound on its relative error, and whether it may prove equality (see above)."""

    value: float
    error: float
    provisional: bool = False


Value = int | Fraction | Approx
EULER = Approx(math.e, U)
PI = Approx(math.pi, U)


class NoVerdict(Exception):
    """No value can be trusted (or the expression is outside the grammar)."""


def compare(a: Value, b: Value) -> bool | None:
    """True/False when the values are certainly equal/different, None when floats cannot tell.

    >>> compare(Fraction(1, 2), Fraction(2, 4)), compare(multiply(2, root(3, 2)), multiply(2, root(2, 2)))
    (True, False)
    >>> compare(root(8, 2), multiply(2, root(2, 2))), compare(add(power(2, 100), -1), power(2, 100))
    (True, False)
    """
    if not isinstance(a, Approx) and not isinstance(b, Approx):
        return a == b
    try:
        x, y = to_approx(a), to_approx(b)
    except OverflowError:
        return None
    diff = abs(x.value - y.value)
    bound = 2 * (abs(x.value) * x.error + abs(y.value) * y.error)  # 2: room for second-order terms
    if diff > bound:
        return False
    scale = REL_TOL * max(abs(x.value), abs(y.value))
    if diff <= scale and bound <= scale and not (x.provisional or y.provisional):
        return True
    return None


def certain_order(a: Value, b: Value) -> int | None:
    """-1, 0 or 1 as ``a`` is certainly below, equal to or above ``b``; None when unsure.

    >>> certain_order(root(2, 2), Fraction(3, 2)), certain_order(1, 1)
    (-1, 0)
    """
    if not isinstance(a, Approx) and not isinstance(b, Approx):
        return (a > b) - (a < b)
    same = compare(a, b)
    if same is None:
        return None
    if same:
        return 0
    return -1 if to_approx(a).value < to_approx(b).value else 1


def to_approx(x: Value) -> Approx:
    """``x`` as an Approx; an exact number beyond ``MAX_TRUSTED`` makes it provisional."""
    if isinstance(x, Approx):
        return x
    big = abs(x.numerator) > MAX_TRUSTED or x.denominator > MAX_TRUSTED
    return Approx(float(x), U, big)


def _checked(value: float, error: float, provisional: bool) -> Approx:
    if not math.isfinite(value) or value == 0 or not error < 1e-3:
        raise NoVerdict  # overflow, or a result whose error bound is meaningless
    return Approx(value, error, provisional or abs(value) > MAX_TRUSTED)


def sign(x: Value) -> int:
    """-1, 0 or 1: the sign of ``x`` (an Approx is never 0)."""
    value = x.value if isinstance(x, Approx) else x
    return (value > 0) - (value < 0)


def add(a: Value, b: Value) -> Value:
    """``a + b``; exactly 0 from floats means every digit cancelled: no verdict."""
    if not isinstance(a, Approx) and not isinstance(b, Approx):
        return a + b
    x, y = to_approx(a), to_approx(b)
    total = x.value + y.value
    if total == 0:
        raise NoVerdict  # all digits cancelled
    error = (abs(x.value) * x.error + abs(y.value) * y.error) / abs(total) + U
    return _checked(total, error, x.provisional or y.provisional)


def negate(a: Value) -> Value:
    """``-a``."""
    return Approx(-a.value, a.error, a.provisional) if isinstance(a, Approx) else -a


def multiply(a: Value, b: Value) -> Value:
    """``a * b``; an exact 0 factor gives an exact 0."""
    if not isinstance(a, Approx):
        if not isinstance(b, Approx):
            return a * b
        if a == 0:  # an exact zero factor
            return 0
    elif not isinstance(b, Approx) and b == 0:
        return 0
    x, y = to_approx(a), to_approx(b)
    error = x.error + y.error + x.error * y.error + U
    return _checked(x.value * y.value, error, x.provisional or y.provisional)


def divide(a: Value, b: Value) -> Value:
    """``a / b``; ZeroDivisionError for an exact 0 divisor."""
    if not isinstance(a, Approx) and not isinstance(b, Approx):
        if type(a) is int and type(b) is int:
            return a // b if a % b == 0 else Fraction(a, b)
        return Fraction(a) / b
    if sign(a) == 0:
        return 0
    x, y = to_approx(a), to_approx(b)
    error = (x.error + y.error) / (1 - y.error) + U
    return _checked(x.value / y.value, error, x.provisional or y.provisional)


def root(a: Value, n: int) -> Value:
    """The non-negative n-th root of a non-negative value, exact when it is rational.

    sympy's principal root of a negative number is complex, so a negative radicand gets no verdict.

    >>> root(Fraction(9, 4), 2), root(8, 3), root(2, 2).provisional
    (Fraction(3, 2), 2, False)
    """
    if sign(a) < 0 or not 2 <= n <= MAX_ROOT:
        raise NoVerdict
    if not isinstance(a, Approx):
        exact = _exact_root(a, n)
        if exact is not None:
            return exact
        a = to_approx(a)
    value = math.sqrt(a.value) if n == 2 else a.value ** (1 / n)
    error = a.error / n + U * (1 if n == 2 else 2 + abs(math.log(value)))  # 1/n is rounded too
    return _checked(value, error, a.provisional)


def _exact_root(a: int | Fraction, n: int) -> int | Fraction | None:
    num, den = _int_root(a.numerator, n), _int_root(a.denominator, n)
    if num is None or den is None:
        return None
    return num if den == 1 else Fraction(num, den)


def _int_root(value: int, n: int) -> int | None:
    if value.bit_length() > (_MAX_EXACT_BITS if n == 2 else 1000):  # 1000: value ** (1 / n) needs a float
        return None
    guess = math.isqrt(value) if n == 2 else round(value ** (1 / n))
    for candidate in (guess - 1, guess, guess + 1):
        if candidate >= 0 and candidate**n == value:
            return candidate
    return None


def power(base: Value, exponent: Value) -> Value:
    """``base ** exponent``, exact where it is rational (``8^{2/3} = 4``); a base <= 0 with a
    fractional exponent gets no verdict.

    >>> power(2, 10), power(8, Fraction(2, 3)), power(Fraction(1, 2), -2)
    (1024, 4, Fraction(4, 1))
    """
    if not isinstance(exponent, Approx) and exponent.denominator == 1:
        return _integer_power(base, int(exponent))
    if not isinstance(exponent, Approx) and not isinstance(base, Approx) and base > 0:
        if (
            exponent.denominator <= MAX_ROOT
            and (exact := _exact_root(base, exponent.denominator)) is not None
        ):
            return _integer_power(exact, exponent.numerator)
    if sign(base) <= 0:
        raise NoVerdict  # 0^y and (-8)^{1/3}: sympy's conventions, not ours to guess
    x, y = to_approx(base), to_approx(exponent)
    value = x.value**y.value
    error = abs(y.value) * x.error + abs(y.value * math.log(x.value)) * y.error + 2 * U
    return _checked(value, error, x.provisional or y.provisional)


def _integer_power(base: Value, k: int) -> Value:
    if not isinstance(base, Approx):
        if base == 0 and k <= 0:
            raise NoVerdict
        size = max(base.numerator.bit_length(), base.denominator.bit_length())
        if abs(k) * size <= _MAX_EXACT_BITS:
            return base**k if k >= 0 else Fraction(1) / base**-k
        base = to_approx(base)
    value = base.value**k  # OverflowError past the float range: no verdict
    return _checked(value, abs(k) * base.error + 2 * U, base.provisional)
