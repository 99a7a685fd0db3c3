"""`parse_python`: `ast.parse` that is safe to call from many threads at once.

CPython 3.11 keeps the AST constructor's recursion depth in interpreter-wide state, so two threads
building syntax trees at the same time can fail with "SystemError: AST constructor recursion depth
mismatch" (python/cpython#106905). The runner steps envs in threads, and envs parse Python
(calculator expressions, tool calls, test code), so gfcr's parses share one lock. They are short
(their inputs are capped), so the lock costs nothing measurable.

>>> parse_python("1 + 2", mode="eval").body.op
<ast.Add object at ...>
"""

from __future__ import annotations

import ast
import threading
from typing import Any, Literal

AST_LOCK = threading.RLock()  # hold it around code that calls `ast.parse` itself (e.g. a library)


def parse_python(source: str, mode: Literal["exec", "eval"] = "exec") -> Any:
    """`ast.parse(source, mode=mode)` under `AST_LOCK` (an `ast.Module`, or an `ast.Expression` for
    mode "eval"); raises `SyntaxError` as `ast.parse` does."""
    with AST_LOCK:
        return ast.parse(source, mode=mode)
