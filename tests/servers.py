"""Servers the tests start on loopback: an ASGI app on uvicorn in a thread, and `gfcr` server
commands (`serve`, `serve-env`) in their own process, as a user starts them. Test modules import it
by name (tests/ is on `sys.path`)."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def serve_in_thread(app: Any, timeout_s: float = 60) -> Iterator[str]:
    """`app` on uvicorn in a daemon thread of this process (what it registers is seen): its URL."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout_s
    while not server.started:
        assert time.monotonic() < deadline, f"the test server did not start in {timeout_s} s"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


@contextlib.contextmanager
def gfcr_process(
    *args: str, prefix: tuple[str, ...] = (), timeout_s: float = 240
) -> Iterator[tuple[str, subprocess.Popen]]:
    """`gfcr ARGS --port P` (run under `prefix`, e.g. prlimit) once it answers `/health`: (URL, the
    process, its stderr piped); terminated afterwards."""
    port = free_port()
    command = [*prefix, sys.executable, "-m", "gfcr", *args, "--port", str(port)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            assert process.poll() is None, process.stderr.read()  # type: ignore[union-attr]
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/health").status_code == 200:
                    break
            assert time.monotonic() < deadline, f"gfcr {args[0]} did not come up in {timeout_s} s"
            time.sleep(0.2)
        yield url, process
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(30)
