"""Fixtures: one real local sandbox per module (bubblewrap workers), shared by the sandbox tests."""

from __future__ import annotations

import pytest

from gfcr.errors import SandboxUnavailableError
from gfcr.sandboxes.bwrap import check_local_backend


def local_backend_reason() -> str | None:
    try:
        check_local_backend()
    except SandboxUnavailableError as e:
        return str(e)
    return None


@pytest.fixture(scope="module")
def sandbox():
    if (reason := local_backend_reason()) is not None:
        pytest.skip(f"local sandbox unavailable: {reason}")
    from gfcr.sandboxes.local import LocalSandbox

    with LocalSandbox(pool_size=2) as sandbox:
        yield sandbox
