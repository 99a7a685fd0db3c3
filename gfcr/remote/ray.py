"""Env servers as Ray actors: Ray places `gfcr serve-env` processes on a cluster, the runner
reaches them by url (`RunnerConfig(env_urls=start_env_servers(...))`)."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import httpx

from gfcr.errors import GfcrError, needs_extra


class EnvServer:
    """One env server inside a Ray actor (a thread of the actor's process runs uvicorn)."""

    def start(self, env_id: str, env_kwargs: dict[str, Any], options: dict[str, Any]) -> str:
        import uvicorn

        from gfcr.apps.connections import uvicorn_config
        from gfcr.remote.server import create_app

        with socket.socket() as s:
            s.bind(("0.0.0.0", 0))
            port = s.getsockname()[1]
        host = socket.gethostbyname(socket.gethostname()) if options.pop("public", False) else "127.0.0.1"
        app = create_app(env_id, env_kwargs, **options)
        self.server = uvicorn.Server(uvicorn_config(app, host=host, port=port, log_level="warning"))
        threading.Thread(target=self.server.run, daemon=True).start()
        url = f"http://{host}:{port}"
        deadline = time.monotonic() + 60
        while not self.server.started:
            if time.monotonic() > deadline:
                raise GfcrError(f"the env server for {env_id} did not start within 60 s")
            time.sleep(0.05)
        httpx.get(f"{url}/health").raise_for_status()
        return url


_ACTORS: list[Any] = []  # the servers' actors: held here, so they live until ray.shutdown()


def start_env_servers(env_id: str, count: int, *, public: bool = False, **options: Any) -> list[str]:
    """Start `count` servers of `env_id` as Ray actors, placed by Ray; their urls.

    `public=True` listens on the node's address instead of loopback (for a multi-node cluster;
    pair it with `token=...`). Other options are `gfcr.remote.create_app`'s, `env_kwargs` and
    `send_gold` included (the scripted oracle needs `send_gold=True`).
    """
    with needs_extra("Ray env servers"):
        import ray

    env_kwargs = options.pop("env_kwargs", {})
    servers = [ray.remote(num_cpus=0.5)(EnvServer).remote() for _ in range(count)]
    _ACTORS.extend(servers)
    starts = [s.start.remote(env_id, env_kwargs, {**options, "public": public}) for s in servers]  # type: ignore[attr-defined]
    return ray.get(starts)
