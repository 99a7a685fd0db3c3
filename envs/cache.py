"""Where envs keep what they build once (databases, generated tasks): one cache root for all.

>>> import os; os.environ["GFCR_CACHE_DIR"] = "/tmp/gfcr-cache"
>>> str(cache_dir("swe"))
'/tmp/gfcr-cache/swe'
>>> del os.environ["GFCR_CACHE_DIR"]
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def cache_dir(kind: str) -> Path:
    """`$GFCR_CACHE_DIR/<kind>`, else `${XDG_CACHE_HOME:-~/.cache}/gfcr/<kind>`."""
    root = os.environ.get("GFCR_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "gfcr"
    )
    return Path(root) / kind


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `path` (created if missing): one process builds, the others wait."""
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
