"""How the `gfcr` commands talk to the terminal: one rich console, and user errors as messages.

>>> with exit_on_error():
...     pass  # a GfcrError raised here is printed as "error: ..." and the command exits 2
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

import typer
from rich.console import Console
from rich.markup import escape

from gfcr.errors import GfcrError

console = Console(width=None if sys.stdout.isatty() else 120)  # 120 in pipes and logs, not 80


@contextmanager
def exit_on_error() -> Iterator[None]:
    """A `GfcrError` in the block (bad input, a missing package, an unknown name) is printed as its
    message, which names the fix, and the command exits 2: no traceback for a user's mistake."""
    try:
        yield
    except GfcrError as e:
        console.print(f"[red]error:[/red] {escape(str(e))}")
        raise typer.Exit(2) from e
