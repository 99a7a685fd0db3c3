"""Env servers: episodes spread over `gfcr serve-env` processes (`RunnerConfig(env_urls=[...])`).

Each url is asked what it serves (`GET /gfcr`: env id and keywords, credentials masked, so
configurations are matched with theirs masked too). An episode whose env
configuration some servers serve gets a `gfcr/Remote-v0` env on one of them, round-robin, so env
work scales over processes and machines; an episode that no server serves runs here as usual.
A server the runner takes out of service (`exclude`: it failed episode after episode) gets no more.

>>> servers = EnvServers({_route("gfcr/Math-v0", {}): ["http://a:1", "http://b:1"]})
>>> [servers.url_for(EnvConfig("gfcr/Math-v0")) for _ in range(3)], servers.url_for(EnvConfig("gfcr/SQL-v0"))
(['http://a:1', 'http://b:1', 'http://a:1'], None)
>>> servers.exclude("http://a:1")
>>> [servers.url_for(EnvConfig("gfcr/Math-v0")) for _ in range(2)], servers.can_run(EnvConfig("gfcr/Math-v0"))
(['http://b:1', 'http://b:1'], True)
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import httpx

from gfcr.core.episode import EnvConfig
from gfcr.core.redact import redact
from gfcr.envs.remote.env import token_from_environment
from gfcr.errors import ConfigError, GfcrError

logger = logging.getLogger(__name__)


class EnvServers:
    """Server urls by env configuration key, each handed out in turn (thread-safe)."""

    def __init__(self, routes: dict[str, list[str]]) -> None:
        self.routes = routes
        self.out_of_service: set[str] = set()  # servers the runner stopped using (`exclude`)
        self._turns: dict[str, Iterator[str]] = {key: itertools.cycle(urls) for key, urls in routes.items()}
        self._lock = threading.Lock()

    def url_for(self, config: EnvConfig) -> str | None:
        """The next server for `config` in service, or None when no server serves it (it runs locally)."""
        route = _route(config.env_id, config.kwargs)
        with self._lock:
            if route not in self._turns:
                return None
            if not self.can_run(config):  # the runner checks first; a reset racing an exclusion ends here
                raise GfcrError(f"every server of {config.env_id} is out of service: {self.routes[route]}")
            return next(url for url in self._turns[route] if url not in self.out_of_service)

    def exclude(self, url: str) -> None:
        """Send no more episodes to `url` (it keeps failing)."""
        self.out_of_service.add(url)

    def can_run(self, config: EnvConfig) -> bool:
        """Whether `config`'s episodes can run: on a server in service, or here when none serves it."""
        urls = self.routes.get(_route(config.env_id, config.kwargs))
        return urls is None or any(url not in self.out_of_service for url in urls)

    @classmethod
    def discover(cls, urls: Sequence[str], timeout_s: float = 10.0) -> EnvServers:
        """Ask each server what it serves; a server that does not answer is a `ConfigError`."""
        token = token_from_environment()
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        routes: dict[str, list[str]] = {}
        for url in urls:
            url = url.rstrip("/")
            try:
                served = (
                    httpx.get(f"{url}/gfcr", headers=headers, timeout=timeout_s).raise_for_status().json()
                )
            except (httpx.HTTPError, ValueError) as e:
                raise ConfigError(
                    f"env server {url} does not say what it serves ({type(e).__name__}: {e}); "
                    "env_urls takes servers started with `gfcr serve-env`"
                ) from e
            routes.setdefault(_route(served["env_id"], served.get("kwargs") or {}), []).append(url)
        logger.info("env servers: %s", routes)
        return cls(routes)


def _route(env_id: str, kwargs: dict[str, Any]) -> str:
    """A configuration's route key: its `EnvConfig.key` with credentials masked, as servers show it."""
    return EnvConfig(env_id, redact(kwargs)).key
