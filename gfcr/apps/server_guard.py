"""`Guard`: what a server on a shared machine needs in front of its app (ASGI middleware).

A bearer token (everywhere but `/health`), a cap on request bodies (chunked ones included: the
body is read up to the cap before the app sees it) and on WebSocket messages, an optional deadline
on reading a body (408 past it), JSON bodies held to strict JSON (400 for NaN, Infinity or a
number too large for a float, which Python's parser would let through as `inf`), and WebSockets
closed when idle past a timeout. Used by `gfcr serve` and `gfcr serve-env`.

>>> import asyncio
>>> async def app(scope, receive, send):
...     await send({"type": "http.response.start", "status": 200, "headers": []})
...     await send({"type": "http.response.body", "body": (await receive())["body"]})
>>> sent = []
>>> async def call(body):
...     messages = [{"type": "http.request", "body": body, "more_body": False}]
...     async def receive(): return messages.pop(0)
...     async def send(message): sent.append(message)
...     scope = {"type": "http", "path": "/", "headers": []}
...     await Guard(app, token=None, max_request_bytes=4, idle_timeout_s=None)(scope, receive, send)
>>> asyncio.run(call(b"12345")); sent[0]["status"]
413
>>> sent.clear(); asyncio.run(call(b"NaN")); sent[0]["status"], json.loads(sent[1]["body"])["detail"]
(400, 'the request body is not strict JSON: NaN is not a JSON value (JSON numbers must be finite)')
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

MAX_INT_DIGITS = 4300  # the longest integer a JSON body may hold (Python's own default limit)


class Guard:
    """ASGI middleware: bearer token, request and message size caps, idle WebSocket expiry.

    `/health` stays open without a token, so a load balancer can probe the server.
    """

    def __init__(
        self,
        app: Any,
        *,
        token: str | None,
        max_request_bytes: int,
        idle_timeout_s: float | None,
        read_timeout_s: float | None = None,
    ) -> None:
        self.app, self.token = app, token
        self.max_request_bytes, self.idle_timeout_s = max_request_bytes, idle_timeout_s
        self.read_timeout_s = read_timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        if self.token and scope.get("path") != "/health" and not self._authorized(scope):
            return await _refuse(
                kind, send, 401, 1008, "missing or wrong bearer token (Authorization: Bearer …)"
            )
        if kind == "http":
            length = dict(scope.get("headers") or []).get(b"content-length")
            if length is not None and int(length) > self.max_request_bytes:
                return await _refuse(kind, send, 413, 1009, self._too_big(int(length)))
            try:
                async with asyncio.timeout(self.read_timeout_s):  # a trickled body holds a connection
                    body = await self._read_body(receive)  # chunked bodies have no length to trust
            except TimeoutError:
                detail = f"the request body did not arrive within {self.read_timeout_s} s (--read-timeout)"
                return await _refuse(kind, send, 408, 1008, detail)
            if body is None:
                return await _refuse(kind, send, 413, 1009, self._too_big(self.max_request_bytes + 1))
            if problem := _not_strict_json(body, scope):
                return await _refuse(kind, send, 400, 1007, f"the request body is not strict JSON: {problem}")
            return await self.app(scope, _replay(body, receive), send)
        return await self.app(scope, self._websocket_receive(receive, send), send)

    def _authorized(self, scope: Scope) -> bool:
        header = dict(scope.get("headers") or []).get(b"authorization", b"").decode("latin-1")
        return header == f"Bearer {self.token}"

    def _too_big(self, size: int) -> str:
        limit = self.max_request_bytes
        return f"request of {size} bytes is over the server's limit of {limit} (--max-request-bytes)"

    async def _read_body(self, receive: Receive) -> bytes | None:
        """The whole request body, or None once it passes the cap (nothing more is read)."""
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return b"".join(chunks)
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_request_bytes:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    def _websocket_receive(self, receive: Receive, send: Send) -> Receive:
        """`receive` that ends a session idle past the timeout or sent a message over the cap."""
        connected = False

        async def guarded() -> Message:
            nonlocal connected
            try:
                async with asyncio.timeout(self.idle_timeout_s if connected else None):  # no task per call
                    message = await receive()
            except TimeoutError:
                await send({"type": "websocket.close", "code": 1000, "reason": "idle session closed"})
                return {"type": "websocket.disconnect", "code": 1000}
            connected = True
            if message["type"] == "websocket.receive":
                size = len(message.get("text") or "") + len(message.get("bytes") or b"")
                if size > self.max_request_bytes:
                    await send({"type": "websocket.close", "code": 1009, "reason": self._too_big(size)[:120]})
                    return {"type": "websocket.disconnect", "code": 1009}
            return message

        return guarded


def _not_strict_json(body: bytes, scope: Scope) -> str | None:
    """What makes a JSON body not strict JSON (NaN, Infinity, 1e400), or None (also for other bodies)."""
    content_type = dict(scope.get("headers") or []).get(b"content-type", b"application/json")
    if not body or b"json" not in content_type:
        return None

    def number(text: str) -> float:
        value = float(text)
        if not math.isfinite(value):
            raise ValueError(f"{text[:40]} is out of range (JSON numbers must be finite)")
        return value

    def constant(name: str) -> float:
        raise ValueError(f"{name} is not a JSON value (JSON numbers must be finite)")

    def integer(text: str) -> int:
        if len(text) > MAX_INT_DIGITS:  # Python refuses to read longer ones anyway, less clearly
            raise ValueError(f"an integer of {len(text)} digits is too long (at most {MAX_INT_DIGITS})")
        return int(text)

    try:
        json.loads(body, parse_float=number, parse_int=integer, parse_constant=constant)
    except json.JSONDecodeError:
        return None  # not JSON at all: the app says so in its own words
    except ValueError as e:  # a non-finite number, or an integer too long
        return str(e)
    return None


def _replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that gives the app the body already read, then the client's own messages."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def replayed() -> Message:
        return pending.pop() if pending else await receive()

    return replayed


async def _refuse(kind: str, send: Send, status: int, ws_code: int, detail: str) -> None:
    if kind == "websocket":  # closing before accept: the client sees the handshake refused
        await send({"type": "websocket.close", "code": ws_code, "reason": detail[:120]})
        return
    body = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
