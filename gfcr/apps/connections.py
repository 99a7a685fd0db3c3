"""Bounded connections for a server on uvicorn: what a flood of idle or slow sockets cannot take down.

uvicorn keeps a connection that never sends a request open forever and accepts connections until
the process runs out of file descriptors; then every `accept` fails, honest clients time out and
asyncio logs the failure again and again. `uvicorn_config` closes that door:

- a connection must send a whole request head (request line and headers) within
  `read_timeout_s` of connecting, or of starting its next request (`Guard` bounds the body);
- at most `max_connections` connections at once (and never more than half the process's file
  descriptors: the envs need the rest, and a burst of accepts the slack). A connection past the
  cap closes the connection that has waited longest without sending a request head, so clients
  that send requests keep being served while idle sockets are shed; with none to close, the
  newcomer is closed;
- repeated log lines (asyncio's and uvicorn's) are written once per `QUIET_S` seconds, with a
  count of those left out.

>>> config = uvicorn_config(lambda scope, receive, send: None, limits=ConnectionLimits(64, 5.0))
>>> config.http.max_connections <= 64, config.http.read_timeout_s
(True, 5.0)
"""

from __future__ import annotations

import asyncio
import logging
import resource
import time
from dataclasses import dataclass
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from gfcr.core.config import setting
from gfcr.errors import ConfigError

logger = logging.getLogger(__name__)

QUIET_S = 10.0  # a repeated log line is written at most once per this many seconds
NOISY_LOGGERS = ("asyncio", "uvicorn.error", __name__)


@dataclass(frozen=True)
class ConnectionLimits:
    """How many connections a server holds, and how long one may take to send its request."""

    max_connections: int = setting(
        512,
        "Connections at once (at most half the open-file limit); past it, the connection that has "
        "waited longest without sending a request is closed.",
    )
    read_timeout_s: float = setting(
        10.0, "Seconds a connection may take to send a request's head, and its body; then it is closed."
    )

    def __post_init__(self) -> None:
        if self.max_connections < 1 or not self.read_timeout_s > 0:
            raise ConfigError(
                f"need max_connections >= 1 and read_timeout_s > 0, got {self.max_connections}, "
                f"{self.read_timeout_s} (--max-connections, --read-timeout)"
            )


def uvicorn_config(
    app: Any,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    limits: ConnectionLimits | None = None,
    **options: Any,
) -> uvicorn.Config:
    """A `uvicorn.Config` serving `app` within `limits` (other `options` go to uvicorn as they are)."""
    limits = limits or ConnectionLimits()
    wanted, timeout_s = limits.max_connections, limits.read_timeout_s  # for the class body below
    descriptors = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    cap = max(1, min(wanted, descriptors // 2))
    if cap < wanted:
        logger.warning(
            "serving at most %d connections, not %d: the process may open %d files (ulimit -n)",
            cap, wanted, descriptors,
        )  # fmt: skip

    class Protocol(BoundedH11Protocol):  # this server's own limits and waiting room
        max_connections, read_timeout_s, waiting = cap, timeout_s, {}

    # asyncio accepts up to `backlog` sockets in one go before any is seen by the protocol: keep a
    # burst within the descriptors the cap leaves over (uvicorn's default, 2048, when there are many)
    options.setdefault("backlog", max(16, min(2048, (descriptors - cap) // 2)))
    quiet_repeated_lines()
    return uvicorn.Config(app, host=host, port=port, http=Protocol, **options)


class BoundedH11Protocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol with a deadline on the request head and a connection cap."""

    max_connections: int
    read_timeout_s: float
    waiting: dict[BoundedH11Protocol, None]  # connections with no request head yet, oldest first

    _deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()
        if len(self.connections) > self.max_connections:
            oldest = next(iter(self.waiting))  # this connection is waiting too: there is one
            logger.warning("%d connections, the cap: closing the longest idle ones", self.max_connections)
            oldest._shut()

    def data_received(self, data: bytes) -> None:
        if self._deadline is None and self.conn.their_state is h11.IDLE:  # the next request begins
            self._arm()
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:  # its head is in (or the socket was upgraded)
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._deadline = self.loop.call_later(self.read_timeout_s, self._expire)
        self.waiting[self] = None

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self.waiting.pop(self, None)

    def _expire(self) -> None:
        self._deadline = None
        if self.conn.their_state is h11.IDLE:  # no request head within the timeout
            self._shut()

    def _shut(self) -> None:
        self._disarm()
        if not self.transport.is_closing():
            self.transport.close()


class RepeatFilter(logging.Filter):
    """Lets a log line through once per `QUIET_S` seconds; the next one says how many were left out."""

    def __init__(self) -> None:
        super().__init__()
        self._last: dict[tuple[str, int, str], tuple[float, int]] = {}  # line -> (time written, left out)

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, record.levelno, str(record.msg))
        now = time.monotonic()
        written, left_out = self._last.get(key, (-QUIET_S, 0))
        if now - written < QUIET_S:
            self._last[key] = (written, left_out + 1)
            return False
        if left_out:
            record.msg = f"{record.msg} ({left_out} more like this in the last {now - written:.0f} s)"
        self._last[key] = (now, 0)
        return True


def quiet_repeated_lines() -> None:
    """Add a `RepeatFilter` to the loggers a flood of connections fills (once per process)."""
    for name in NOISY_LOGGERS:
        noisy = logging.getLogger(name)
        if not any(isinstance(f, RepeatFilter) for f in noisy.filters):
            noisy.addFilter(RepeatFilter())
