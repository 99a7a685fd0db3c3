"""Fixtures: one real sandbox per module and backend — local (bubblewrap workers) and docker
(containers on the engine `docker_engine` ensures) — shared by the sandbox tests, so that every
test taking `sandbox` runs against both. A test marked `local_only("why")` attacks what only the
local backend has (its workers, bubblewrap, per-run uids) and is skipped for docker with the why.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gfcr.errors import SandboxUnavailableError
from gfcr.sandboxes.bwrap import check_local_backend

BACKENDS = ("local", "docker")


def pytest_configure(config):
    config.addinivalue_line("markers", "local_only(reason): attacks only the local backend's machinery")


def pytest_collection_modifyitems(items):
    for item in items:
        params = getattr(item, "callspec", None) and item.callspec.params
        if not params or params.get("sandbox") != "docker":
            continue
        if (marker := item.get_closest_marker("local_only")) is not None:
            item.add_marker(pytest.mark.skip(reason=f"local backend only: {marker.args[0]}"))


def local_backend_reason() -> str | None:
    try:
        check_local_backend()
    except SandboxUnavailableError as e:
        return str(e)
    return None


def make_backend(request, backend: str, **kwargs):
    """A new sandbox of `backend`, or a skip (a failure in CI, for docker) saying why it cannot run."""
    if backend == "docker":
        request.getfixturevalue("docker_engine")
        from gfcr.sandboxes.docker_backend import DockerSandbox

        return DockerSandbox(**kwargs)
    if (reason := local_backend_reason()) is not None:
        pytest.skip(f"local sandbox unavailable: {reason}")
    from gfcr.sandboxes.local import LocalSandbox

    return LocalSandbox(**kwargs)


@pytest.fixture(scope="module", params=BACKENDS)
def sandbox(request):
    with make_backend(request, request.param, pool_size=2) as sandbox:
        yield sandbox


@pytest.fixture
def backend(sandbox) -> str:
    return sandbox.backend


@pytest.fixture
def new_sandbox(request):
    """`new_sandbox(backend, **kwargs)`: a fresh sandbox of that backend (a context manager)."""
    return lambda backend, **kwargs: make_backend(request, backend, **kwargs)


def docker_job_pids() -> list[int]:
    """Host pids of processes of this test process's Docker runs: everything in its sandbox
    containers but their idle `docker-init` and `sleep infinity` (a warm container holds those)."""
    try:
        import docker

        client = docker.from_env(timeout=10)
        ids = {
            c.id for c in client.containers.list(sparse=True, filters={"label": f"gfcr.pid={os.getpid()}"})
        }
    except Exception:  # no SDK or no engine: no Docker runs either
        return []
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            cgroup = (entry / "cgroup").read_text() if entry.name.isdigit() else ""
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(container in cgroup for container in ids) and argv[:2] != [b"sleep", b"infinity"]:
            if not argv[0].endswith(b"docker-init"):
                pids.append(int(entry.name))
    return pids


@pytest.fixture
def job_processes(job_processes):  # tests/conftest.py's: the local backend's job processes
    """A function listing the host pids of this test process's sandbox jobs, on either backend."""
    local_job_pids = job_processes
    return lambda: local_job_pids() + docker_job_pids()


@pytest.fixture
def no_job_survives(job_processes):
    """Assert that no process of the test's runs, on either backend, is left on the host after them."""
    before = set(job_processes())
    yield
    assert set(job_processes()) <= before, "processes of a finished run are still alive on the host"
