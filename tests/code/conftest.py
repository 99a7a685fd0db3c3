"""The code envs grade in the local sandbox: their tests skip, saying why, where it cannot start."""

from __future__ import annotations

import pytest

from gfcr.errors import SandboxUnavailableError
from gfcr.sandboxes.bwrap import check_local_backend


@pytest.fixture(autouse=True)
def local_sandbox() -> None:
    try:
        check_local_backend()  # cached: checked once per process
    except SandboxUnavailableError as e:
        pytest.skip(f"no local sandbox: {e}")
