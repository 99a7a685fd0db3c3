"""Code-execution backends: untrusted code runs locally (bubblewrap) or in Docker; trusted code
may also run as a plain process.

>>> from gfcr.sandboxes import make_sandbox
>>> with make_sandbox() as sandbox:  # "auto": local bubblewrap where it works, else Docker
...     sandbox.run("print(6 * 7)").stdout
'42\\n'

See docs/sandboxes.md for the backends, the limits and what the tests attack.
"""

from gfcr.sandboxes.base import STATUSES, ExecResult, Limits, Sandbox, Session, Status
from gfcr.sandboxes.factory import BACKENDS, make_sandbox, shared_sandbox
from gfcr.sandboxes.languages import LANGUAGES, Language

__all__ = [
    "BACKENDS",
    "LANGUAGES",
    "STATUSES",
    "ExecResult",
    "Language",
    "Limits",
    "Sandbox",
    "Session",
    "Status",
    "make_sandbox",
    "shared_sandbox",
]
