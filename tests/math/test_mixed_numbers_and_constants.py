"""Two families a careful grader accepts: LaTeX mixed numbers, and identities of e, pi and i.

Conventions (see ``gfcr.envs.math.answers.constants`` and ``bounded``):

- an integer written right before a ``\\frac`` of positive rational value is a mixed number,
  ``2\\frac{1}{2} = 5/2`` (as in print, and as math-verify reads it); with an operator it is a
  product, ``2\\cdot\\frac{1}{2} = 1``;
- a free ``i`` is the imaginary unit (``\\sqrt{-1}``), ``e`` is Euler's number;
- a decimal for a value with pi or e needs 4 significant digits: ``3.14`` and ``6.28`` are the
  schoolbook stand-ins, not computed values (``3.1416`` still matches ``\\pi``).
"""

from __future__ import annotations

import pytest

from gfcr.envs.math.answers.equivalence import is_equivalent

# (predicted, gold)
MIXED_NUMBERS = [
    ("2\\frac{1}{2}", "5/2"),
    ("2 \\frac{1}{2}", "\\frac{5}{2}"),
    ("-1\\tfrac{3}{4}", "-\\frac{7}{4}"),
    ("3\\dfrac{2}{5}", "17/5"),
    ("2\\frac12", "2.5"),
    ("5/2", "2\\frac{1}{2}"),
    ("$1\\frac{1}{3}$", "\\frac43"),
    ("x = 1\\frac{1}{3}", "\\frac{4}{3}"),
    ("\\boxed{12\\frac{3}{8}}", "12.375"),
    ("1\\frac{1}{3}", "1.333"),
    ("(2\\frac{1}{2}, 1)", "(\\frac{5}{2}, 1)"),
    ("2\\frac{\\sqrt{3}}{2}", "\\sqrt{3}"),  # an irrational fraction: a product, as before
]
MIXED_NUMBER_MISSES = [
    ("2\\frac{1}{2}", "1"),  # juxtaposed: a mixed number, never the product
    ("2\\cdot\\frac{1}{2}", "5/2"),  # with an operator: the product, 1
    ("2\\times\\frac{1}{2}", "2\\frac{1}{2}"),
    ("2\\frac{1}{2}", "2"),
    ("2\\frac{1}{2}", "\\frac{1}{2}"),
    ("-1\\frac{3}{4}", "-\\frac{1}{4}"),  # the sign covers the whole mixed number
    ("-1\\frac{3}{4}", "-\\frac{3}{4}"),
    ("1\\frac{1}{3}", "1.3"),  # two significant digits are too few (1.33 would match, as 0.333 does 1/3)
    ("3\\frac{2}{5}", "3.5"),
    ("2\\frac{1}{2}", "\\frac{5}{2}x"),
]
CONSTANTS = [
    ("e^{i\\pi}", "-1"),
    ("-1", "e^{i\\pi}"),
    ("e^{i\\pi}+1", "0"),
    ("e^{2\\pi i}", "1"),
    ("e^{i\\pi/2}", "i"),
    ("\\pi/2", "\\frac{\\pi}{2}"),
    ("2\\pi i", "2i\\pi"),
    ("2\\pi i", "i \\cdot 2\\pi"),
    ("\\sqrt{-1}", "i"),
    ("i^2", "-1"),
    ("(1+i)^2", "2i"),
    ("\\frac{1}{i}", "-i"),
    ("3+4i", "(2+i)^2"),
    ("|3+4i|", "5"),
    ("\\ln(e^2)", "2"),
    ("e^{\\ln 3}", "3"),
    ("\\cos(\\pi)", "-1"),
    ("\\sin(\\pi/2)", "1"),
    ("\\{i, -i\\}", "\\{-i, \\sqrt{-1}\\}"),
    ("3.1416", "\\pi"),
    ("3.142", "\\pi"),
    ("6.2832", "2\\pi"),
]
CONSTANT_MISSES = [
    ("e^{i\\pi}", "1"),
    ("e^{i\\pi}", "i"),
    ("e^{2\\pi i}", "-1"),
    ("\\pi", "3.14"),
    ("3.14", "\\pi"),
    ("2\\pi", "6.28"),
    ("\\frac{\\pi}{2}", "1.57"),
    ("e", "2.72"),
    ("i", "1"),
    ("i", "-i"),
    ("i^2", "1"),
    ("\\sqrt{-1}", "1"),
    ("\\sqrt{-1}", "-1"),
    ("2\\pi i", "2\\pi"),
    ("3-4i", "(2+i)^2"),
    ("\\{i, -i\\}", "\\{1, -1\\}"),
    ("\\ln(e^2)", "e"),
    ("e^{\\ln 3}", "e"),
    ("\\cos(\\pi)", "1"),
    ("e^{\\pi}", "\\pi^{e}"),
]


@pytest.mark.parametrize(("predicted", "gold"), MIXED_NUMBERS + CONSTANTS)
def test_equivalent_forms_are_accepted(predicted, gold):
    assert is_equivalent(predicted, gold) is True


@pytest.mark.parametrize(("predicted", "gold"), MIXED_NUMBER_MISSES + CONSTANT_MISSES)
def test_near_misses_are_rejected(predicted, gold):
    assert is_equivalent(predicted, gold) is False


def test_mixed_numbers_are_decided_by_the_fast_tiers(monkeypatch):
    """Mixed numbers are plain closed forms: math-verify never sees them."""
    from gfcr.envs.math.answers import equivalence

    calls = []
    monkeypatch.setattr(equivalence, "verify_bounded", lambda *args: calls.append(args) or False)
    verdicts = [is_equivalent(p, g) for p, g in MIXED_NUMBERS + MIXED_NUMBER_MISSES]
    assert verdicts == [True] * len(MIXED_NUMBERS) + [False] * len(MIXED_NUMBER_MISSES)
    assert calls == []


def test_a_bound_i_stays_a_variable():
    """The index of a sum is no imaginary unit; a free ``i`` beside it is."""
    import math_verify
    import sympy

    from gfcr.envs.math.answers.bounded import _imaginary_unit

    (bound, _) = _imaginary_unit(math_verify.parse("$\\sum_{i=1}^{n} i^2$"))
    (mixed, _) = _imaginary_unit(math_verify.parse("$\\sum_{i=1}^{n} i^2 + i^2$"))
    assert isinstance(bound, sympy.Sum) and sympy.I not in bound.atoms()
    assert mixed == bound - 1
