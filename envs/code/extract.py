"""The program in a model's reply: the last ```python block, else the last fenced block, else the
reply itself when it is Python code."""

from __future__ import annotations

import re

from gfcr.core.python_ast import parse_python

_FENCE = re.compile(r"```[ \t]*([\w+#.-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)
_PYTHON = {"python", "py", "python3", "py3", ""}
_LOOKS_LIKE_CODE = re.compile(
    r"^\s*(def |class |import |from \S+ import |print\(|for |while |if )", re.MULTILINE
)


def extract_code(text: str) -> str | None:
    """The program in `text`, or None if it holds none.

    >>> extract_code("Here:\\n```python\\ndef f():\\n    return 1\\n```\\nDone.")
    'def f():\\n    return 1\\n'
    >>> extract_code("def f(): return 2")
    'def f(): return 2'
    >>> extract_code("The answer is 42.") is None
    True
    """
    blocks = _FENCE.findall(text)
    python = [body for language, body in blocks if language.lower() in _PYTHON]
    if python or blocks:
        return (python or [body for _, body in blocks])[-1]
    if _LOOKS_LIKE_CODE.search(text) and compiles(text):
        return text
    return None


def compiles(code: str) -> bool:
    """Whether `code` is syntactically valid Python."""
    try:
        parse_python(code)
    except (SyntaxError, ValueError):  # ValueError: null bytes
        return False
    return True
