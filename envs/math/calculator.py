"""`calculator`: exact arithmetic for agents, evaluated by walking the syntax tree — never `eval`.

The expression is parsed with Python's `ast` and only numbers, arithmetic operators and a fixed
set of functions and constants are turned into sympy objects, so `__import__("os")` or attribute
access cannot run. Big powers and factorials are refused before sympy computes them, because
C-level big-integer arithmetic cannot be interrupted once started.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from typing import Any

import sympy

from gfcr.core.python_ast import parse_python
from gfcr.errors import ToolError

MAX_EXPRESSION_CHARS = 500
MAX_RESULT_DIGITS = 10_000  # refuse powers and factorials whose result would be bigger

_CONSTANTS: dict[str, Any] = {"pi": sympy.pi, "e": sympy.E, "E": sympy.E, "I": sympy.I, "oo": sympy.oo}
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sqrt": sympy.sqrt, "cbrt": sympy.cbrt, "root": sympy.root, "exp": sympy.exp, "log": sympy.log,
    "ln": sympy.log, "sin": sympy.sin, "cos": sympy.cos, "tan": sympy.tan, "asin": sympy.asin,
    "acos": sympy.acos, "atan": sympy.atan, "abs": sympy.Abs, "floor": sympy.floor,
    "ceil": sympy.ceiling, "gcd": sympy.gcd, "lcm": sympy.lcm, "factorial": sympy.factorial,
    "binomial": sympy.binomial, "comb": sympy.binomial, "min": sympy.Min, "max": sympy.Max,
    "mod": sympy.Mod, "round": lambda x, n=0: sympy.Float(round(float(x), int(n))),
}  # fmt: skip
_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b, ast.FloorDiv: lambda a, b: sympy.floor(a / b),
    ast.Mod: lambda a, b: sympy.Mod(a, b), ast.Pow: lambda a, b: _power(a, b),
}  # fmt: skip


def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression exactly, e.g. "2**10 / 3" or "sqrt(8) + binomial(10, 3)".

    Args:
        expression: Numbers, + - * / // % ** (or ^), parentheses, and the functions sqrt, cbrt, root,
            exp, log, sin, cos, tan, asin, acos, atan, abs, floor, ceil, gcd, lcm, factorial, binomial,
            min, max, mod, round; constants pi and e.

    >>> calculator("2^10 / 3")
    '1024/3 ≈ 341.333333333333'
    >>> calculator("sqrt(8)")
    '2*sqrt(2) ≈ 2.82842712474619'
    >>> calculator("__import__('os')")
    Traceback (most recent call last):
    ...
    gfcr.errors.ToolError: calculator: '__import__' is not allowed; use numbers, operators and sqrt, cbrt, ...
    """
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ToolError(
            f"calculator: expression has {len(expression)} characters; the limit is {MAX_EXPRESSION_CHARS}"
        )
    try:
        tree = parse_python(expression.replace("^", "**").strip(), mode="eval")
    except SyntaxError as e:
        raise ToolError(f"calculator: cannot parse {expression!r}: {e.msg}") from e
    try:
        value = sympy.simplify(_evaluate(tree.body))
    except ToolError:
        raise
    except (ZeroDivisionError, ValueError, TypeError, ArithmeticError) as e:
        raise ToolError(f"calculator: {type(e).__name__}: {e}") from e
    if value.has(sympy.zoo, sympy.nan):
        raise ToolError("calculator: the result is undefined (division by zero?)")
    return _format(value)


def _evaluate(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):  # not bool, an int subclass
        # floats go through their decimal text so 0.1 is exactly 1/10
        return sympy.Integer(node.value) if isinstance(node.value, int) else sympy.Rational(repr(node.value))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](_evaluate(node.left), _evaluate(node.right))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        operand = _evaluate(node.operand)
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCTIONS
        and not node.keywords
    ):
        args = [_evaluate(arg) for arg in node.args]
        if node.func.id == "factorial" and args and args[0].is_number and abs(args[0]) > 3_000:
            raise ToolError("calculator: factorial argument over 3000 is refused (result too large)")
        return _FUNCTIONS[node.func.id](*args)
    called = getattr(getattr(node, "func", None), "id", None)
    name = getattr(node, "id", None) or called or type(node).__name__
    allowed = ", ".join(_FUNCTIONS)
    raise ToolError(f"calculator: {name!r} is not allowed; use numbers, operators and {allowed[:12]}...")


def _power(base: Any, exponent: Any) -> Any:
    """`base ** exponent`, refused when the result would have more than MAX_RESULT_DIGITS digits."""
    if base.is_number and exponent.is_number and exponent.is_real and abs(base) > 1 and exponent > 0:
        digits = float(exponent) * math.log10(abs(complex(base)))
        if digits > MAX_RESULT_DIGITS:
            raise ToolError(
                f"calculator: result would have about {digits:.3g} digits; the limit is {MAX_RESULT_DIGITS}"
            )
    return base**exponent


def _format(value: Any) -> str:
    exact = sympy.sstr(value)
    if value.is_Integer or not value.is_number:
        return exact
    approx = sympy.N(value, 15)
    return exact if sympy.sstr(approx) == exact else f"{exact} ≈ {approx}"
