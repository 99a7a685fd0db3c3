"""A remote env's tasks, read through OpenEnv's task API and cached page by page.

`/list_environments` names the env, `/{name}/splits` its splits (gfcr servers have one, `all`),
`/{name}/num_tasks` counts a split and `/{name}/task_range` returns a page of task specs.
"""

from __future__ import annotations

from typing import Any

import httpx

from gfcr.core import Task
from gfcr.envs.remote.wire import decode_task
from gfcr.envs.tasks import TaskSource
from gfcr.errors import GfcrError

PAGE = 256  # tasks per request


def remote_tasks(
    url: str, headers: dict[str, str], env_id: str | None, timeout_s: float = 30.0
) -> TaskSource:
    """The tasks of the env served at `url`; a `GfcrError` naming the server if it lists none."""
    with httpx.Client(base_url=url, headers=headers, timeout=timeout_s) as client:
        try:
            name = client.get("/list_environments").raise_for_status().json()[0]
            splits = client.get(f"/{name}/splits").raise_for_status().json()
            split = splits[0]["name"]
            size = int(
                client.post(f"/{name}/num_tasks", json={"split": split})
                .raise_for_status()
                .json()["num_tasks"]
            )
        except (httpx.HTTPError, LookupError, ValueError) as e:
            raise GfcrError(
                f"the env server at {url} does not list its tasks (OpenEnv's task API: {e}); "
                "pick tasks by seed instead, or serve the env with `gfcr serve-env`"
            ) from e
    pages: dict[int, list[Task]] = {}

    def build(index: int) -> Task:
        page = index // PAGE
        if page not in pages:
            body = {"split": split, "start": page * PAGE, "stop": min(size, (page + 1) * PAGE)}
            reply = httpx.post(f"{url}/{name}/task_range", json=body, headers=headers, timeout=timeout_s)
            pages[page] = [
                _task(spec, env_id, page * PAGE + i)
                for i, spec in enumerate(reply.raise_for_status().json()["tasks"])
            ]
        return pages[page][index % PAGE]

    return TaskSource(f"remote:{url}", size, build)


def _task(spec: Any, env_id: str | None, index: int) -> Task:
    """A task from a gfcr server's spec (a `Task` as JSON), or from any other server's spec."""
    if isinstance(spec, dict) and "id" in spec and "prompt" in spec:
        task = decode_task(spec)
    else:
        task = Task(
            str(spec.get("id", index)) if isinstance(spec, dict) else str(index), "", metadata={"spec": spec}
        )
    if env_id is not None:
        task.metadata.setdefault("remote_env_id", env_id)
    return task
