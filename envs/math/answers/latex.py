"""Answers as math-verify reads them: ``$...$``-wrapped LaTeX, plain-text math rewritten.

CHAMP's gold answers are plain text (``sqrt(3)/3``, ``2^(n-1)``, ``C(10, 5)``, ``2**10``); math-verify
parses LaTeX, so calls, Python powers and words for symbols become their LaTeX forms.
"""

from __future__ import annotations

import re

from gfcr.envs.math.answers.brackets import closing_bracket, split_top

__all__ = ["to_latex"]

_CALL_TEMPLATES = {
    "sqrt": r"\sqrt{{{}}}",
    "floor": r"\lfloor {} \rfloor",
    "ceil": r"\lceil {} \rceil",
    "sum_": r"\sum_{{{}}}",
}
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


def to_latex(text: str) -> str:
    """Wrap an answer for math-verify, turning plain-text math into LaTeX.

    >>> to_latex("sqrt(3)/3"), to_latex("C(10, 5)"), to_latex("2^(n-1)")
    ('$\\\\sqrt{3}/3$', '$\\\\binom{10}{5}$', '$2^{n-1}$')
    """
    for pattern, latex in _PLAIN_REPLACEMENTS:
        text = pattern.sub(latex, text)
    return f"${_convert_calls(text)}$"


def _convert_calls(text: str) -> str:
    """``sqrt(x)`` -> ``\\sqrt{x}``, ``C(n, k)`` -> ``\\binom{n}{k}``, ``2^(n-1)`` -> ``2^{n-1}`` (nested)."""
    out, position = [], 0
    while match := _PLAIN_CALL_RE.search(text, position):
        open_index = match.end() - 1
        close = closing_bracket(text, open_index)
        if close < 0:
            break
        args = [_convert_calls(arg.strip()) for arg in split_top(text[open_index + 1 : close])]
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
