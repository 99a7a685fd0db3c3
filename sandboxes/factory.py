"""`make_sandbox(backend)`: the one way to get a sandbox, and a shared one per process for envs.

"auto" takes the local bubblewrap backend where it works, else Docker where an engine
answers, else refuses with what to install. "unsafe-process" (rlimits only, no isolation)
is never chosen automatically: it is for trusted code and warns when made.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gfcr.errors import SandboxUnavailableError, UnknownNameError
from gfcr.sandboxes.base import Sandbox

BACKENDS = ("auto", "local", "docker", "unsafe-process")
_shared: dict[tuple[Any, ...], Sandbox] = {}
_shared_lock = threading.Lock()


def make_sandbox(backend: str = "auto", **options: Any) -> Sandbox:
    """A new sandbox of `backend` ("auto", "local", "docker", "unsafe-process").

    `options` go to the backend's class: `limits`, `pool_size` (runs at once), `queue_timeout_s`
    (the longest a run waits for a slot) and `modules` for all (only the local backend preloads
    modules; the others accept and ignore them); `warm`, `python` for
    local; `image`, `client` for docker.

    >>> make_sandbox("local").backend
    'local'
    >>> make_sandbox("chroot")
    Traceback (most recent call last):
    ...
    gfcr.errors.UnknownNameError: unknown sandbox backend 'chroot' Known: auto, docker, local, unsafe-process
    """
    if backend not in BACKENDS:
        raise UnknownNameError("sandbox backend", backend, BACKENDS)
    if backend == "local":
        from gfcr.sandboxes.local import LocalSandbox

        return LocalSandbox(**options)
    if backend == "docker":
        from gfcr.sandboxes.docker_backend import DockerSandbox

        return DockerSandbox(**options)
    if backend == "unsafe-process":
        from gfcr.sandboxes.unsafe import UnsafeProcessSandbox

        return UnsafeProcessSandbox(**options)
    return _auto(options)


def _auto(options: dict[str, Any]) -> Sandbox:
    reasons = []
    for backend in ("local", "docker"):
        try:
            return make_sandbox(backend, **options)
        except SandboxUnavailableError as e:
            reasons.append(f"{backend}: {e}")
    raise SandboxUnavailableError(
        "no sandbox backend works on this machine. "
        + " | ".join(reasons)
        + " | For trusted code only: make_sandbox('unsafe-process') (rlimits, no isolation)."
    )


def shared_sandbox(backend: str = "auto", modules: Mapping[str, str | Path] | None = None) -> Sandbox:
    """One sandbox per process, backend and set of preloaded `modules`, shared by the envs.

    Envs use it so that a process holds one warm pool rather than one per env instance.
    """
    modules = dict(modules or {})
    key = (os.getpid(), backend, tuple(sorted((name, str(path)) for name, path in modules.items())))
    with _shared_lock:
        if key not in _shared:
            _shared[key] = make_sandbox(backend, modules=modules) if modules else make_sandbox(backend)
        return _shared[key]
