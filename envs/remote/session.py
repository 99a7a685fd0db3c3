"""One session on an OpenEnv server: its `/ws` protocol, synchronous, on `websockets`' sync client.

A WebSocket to `/ws` is one env on the server. Each call sends `{"type": ..., "data": ...}` and
reads one reply: `{"type": "observation", "data": {"observation", "reward", "done", "metadata"}}`
or `{"type": "error", "data": {"message", "code"}}` (then `SessionError`). This is what openenv's
`EnvClient` sends and reads; a thin client of its own spares `gfcr/Remote-v0` openenv's import
(seconds: it loads its server and web UI) and a thread hop per call.
"""

from __future__ import annotations

import json
from contextlib import ExitStack
from typing import Any

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from gfcr.errors import GfcrError


class SessionError(GfcrError):
    """The server answered a call with an error (e.g. `CAPACITY_REACHED`)."""


class Session:
    """A WebSocket session on the OpenEnv server at `url` (http or ws, with or without a path)."""

    def __init__(
        self,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        connect_timeout_s: float = 10.0,
        message_timeout_s: float = 300.0,
        max_message_bytes: int = 100 << 20,
    ) -> None:
        ws_url = url.replace("https://", "wss://", 1).replace("http://", "ws://", 1).rstrip("/") + "/ws"
        self.message_timeout_s = message_timeout_s
        self._stack = ExitStack()  # `with connect(...)` held open: the session's lifetime is the object's
        self._ws: ClientConnection = self._stack.enter_context(
            connect(
                ws_url,
                open_timeout=connect_timeout_s,
                max_size=max_message_bytes,
                additional_headers=headers or None,
                proxy=None,  # loopback and cluster-internal servers: never through a proxy
            )
        )

    def reset(self, **data: Any) -> dict[str, Any]:
        """Reset the session's env; the reply's `data`."""
        return self._call("reset", data)

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        """Step the session's env with `action`; the reply's `data`."""
        return self._call("step", action)

    def close(self) -> None:
        """End the session (the server closes its env)."""
        try:
            self._ws.send(json.dumps({"type": "close"}))
        except Exception:  # already gone: nothing to end
            pass
        self._stack.close()

    def _call(self, kind: str, data: dict[str, Any]) -> dict[str, Any]:
        try:
            self._ws.send(json.dumps({"type": kind, "data": data}))
        except ConnectionClosed:  # a refused session (e.g. at capacity) sends its error, then closes
            pass
        reply = json.loads(self._ws.recv(timeout=self.message_timeout_s))
        if reply.get("type") == "error":
            error = reply.get("data") or {}
            raise SessionError(
                f"{error.get('message', 'unknown error')} (code: {error.get('code', 'UNKNOWN')})"
            )
        return dict(reply.get("data") or {})
