"""Pull the final answer out of a model's text: the content of its last ``\\boxed{...}``.

Plain string scanning with balanced-brace matching, linear in the input (no backtracking regex),
so it is safe on hostile completions: unbalanced braces, megabytes of text, non-str values.
"""

from __future__ import annotations

import re

__all__ = ["MAX_BOX_CHARS", "extract_boxed", "matching_brace"]

_BOX_RE = re.compile(r"\\(?:boxed|fbox)(?![A-Za-z])")
# Escaped characters (``\{``, ``\}``, ``\\``) are not TeX grouping braces, so they are skipped whole.
_BRACE_TOKEN_RE = re.compile(r"\\.|[{}]", re.DOTALL)
_BARE_STOP_RE = re.compile(r"[\s$]")
# No final answer is this long; the cap bounds the brace scan of a box that never closes.
MAX_BOX_CHARS = 50_000


def matching_brace(text: str, open_index: int, stop: int | None = None) -> int:
    """Index of the ``}`` that closes the ``{`` at ``open_index``, or -1 if it is not closed before ``stop``.

    >>> matching_brace("a{b{c}d}e", 1)
    7
    >>> matching_brace("{unclosed", 0)
    -1
    """
    depth = 0
    for token in _BRACE_TOKEN_RE.finditer(text, open_index, len(text) if stop is None else stop):
        if token.group() == "{":
            depth += 1
        elif token.group() == "}":
            depth -= 1
            if depth == 0:
                return token.start()
    return -1


def extract_boxed(text: str) -> str | None:
    """Content of the last complete ``\\boxed{...}`` (or ``\\fbox{...}``) in ``text``, else None.

    Braces are matched with nesting; ``\\boxed 5`` without braces reads up to whitespace or ``$``.
    A box that never closes (a truncated generation) or holds more than ``MAX_BOX_CHARS`` characters
    is skipped in favour of the one before it.
    Never raises: a non-str input gives None.

    >>> extract_boxed(r"so $x = \\boxed{\\frac{1}{2}}$ and finally \\boxed{\\{1, 2\\}}.")
    '\\\\{1, 2\\\\}'
    >>> extract_boxed(r"\\boxed 42$"), extract_boxed("no box here"), extract_boxed(r"\\boxed{3} \\boxed{")
    ('42', None, '3')
    """
    if not isinstance(text, str):
        return None
    simple = _last_simple_box(text)
    return simple if simple is not None else _scan_boxes(text)


def _scan_boxes(text: str) -> str | None:
    """The general case: every box, last first, with nesting and escapes."""
    starts = [match.end() for match in _BOX_RE.finditer(text)]

    # A box that fails to close (before the end or the length cap) stays open past anything a box
    # opened earlier could close, so an earlier box's scan may stop at its start: linear in total.
    limit = len(text)
    for start in reversed(starts):
        content, failed = _box_content(text, start, limit)
        if content is not None:
            return content
        if failed:
            limit = start
    return None


def _last_simple_box(text: str) -> str | None:
    """The common case, found with C-level string searches: the last box is ``\\boxed{...}`` with
    no brace or backslash inside. None when the general scan is needed (same result either way)."""
    start = text.rfind("\\boxed{")
    if start < 0 or text.find("\\boxed", start + 1) >= 0 or text.find("\\fbox", start) >= 0:
        return None  # no such box, or a later box of another form
    open_index = start + len("\\boxed")
    close = text.find("}", open_index, open_index + MAX_BOX_CHARS)
    if close < 0:
        return None
    content = text[open_index + 1 : close]
    return None if "{" in content or "\\" in content else content.strip()


def _box_content(text: str, start: int, limit: int) -> tuple[str | None, bool]:
    """Read one box whose command ends at ``start``: (content or None, whether its braces never close)."""
    index = start
    while index < limit and text[index] in " \t":
        index += 1
    if index >= limit:
        return None, False
    if text[index] == "{":
        end = min(limit, index + MAX_BOX_CHARS)
        # str.find runs in C: most unclosed boxes are rejected without a token scan.
        close = matching_brace(text, index, end) if text.find("}", index, end) >= 0 else -1
        if close < 0:
            return None, True
        return text[index + 1 : close].strip(), False
    stop = _BARE_STOP_RE.search(text, index, limit)
    content = text[index : stop.start() if stop else limit]
    return (content or None), False
