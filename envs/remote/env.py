"""`gfcr/Remote-v0`: any OpenEnv server as a gfcr env.

`gymnasium.make("gfcr/Remote-v0", url="http://host:8000")` connects to a server started with
`gfcr serve-env ENV_ID` (or any server built on `openenv`'s server classes) and behaves like the
env it serves: the same observations, rewards, signals, `info["task"]`, `info["tools"]` and
errors, so `gfcr run`, `gfcr bench`, the Runner and `gfcr train` use it like a local env. Each
instance holds one session (one WebSocket, one env on the server). An env that shows images
comes back the same too: its `text_and_image` observation space and `{"text", "image"}`
observations (the pixels sent as PNG, losslessly), and the images of `info["messages"]`.

Failures of the server never crash a run: a reset is retried (it is safe to repeat) with backoff,
and a step that loses its server comes back as a truncated step whose observation says what
happened (a step is not retried: the server may have applied it).

Servers not written with gfcr get their action from the text: the action's one required string
field (read from `/schema`), or `action_field=...`, or the text itself when it is a JSON object;
the observation's text is its `text` field, its one string field, or the observation as JSON.

>>> import gymnasium as gym
>>> gym.make("gfcr/Remote-v0", url="http://127.0.0.1:9")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
gfcr.errors.GfcrError: no env server answers at http://127.0.0.1:9 (...): start one with `gfcr serve-env ...
"""

from __future__ import annotations

import copy
import json
import os
import time
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import httpx
import numpy as np

from gfcr.core import Action, Message, Task
from gfcr.envs.base import DEFAULT_MAX_ACTION_CHARS, DEFAULT_MAX_OBSERVATION_CHARS
from gfcr.envs.remote.session import Session
from gfcr.envs.remote.tasks import remote_tasks
from gfcr.envs.remote.wire import (
    decode_error,
    decode_info,
    decode_pixels,
    jsonable,
    reply_metadata,
    require_gold,
    reset_arguments,
)
from gfcr.envs.spaces import UnicodeText, text_and_image
from gfcr.envs.tasks import TaskSource
from gfcr.errors import ConfigError, GfcrError
from gfcr.registry import env_class

URL_VARIABLE = "GFCR_ENV_URL"  # the default `url`, so a process pool or vector env needs no kwargs
TOKEN_VARIABLE = "GFCR_SERVE_TOKEN"  # the default `token`, as `gfcr serve-env` reads it


def token_from_environment() -> str | None:
    """The env servers' bearer token from the environment (`GFCR_SERVE_TOKEN`), if set."""
    return os.environ.get(TOKEN_VARIABLE) or None


class RemoteEnv(gym.Env[str, str]):
    """A session on an OpenEnv server, as a `gymnasium.Env[str, str]` (see the module docstring)."""

    metadata = {"render_modes": ["ansi"], "render_fps": 1}
    signal_defaults: dict[str, float | bool]  # the served env's, read from the server

    def __init__(
        self,
        url: str | None = None,
        *,
        token: str | None = None,
        action_field: str | None = None,
        retries: int = 3,
        connect_timeout_s: float = 10.0,
        message_timeout_s: float = 300.0,
        max_action_chars: int = DEFAULT_MAX_ACTION_CHARS,
        max_observation_chars: int = DEFAULT_MAX_OBSERVATION_CHARS,
        render_mode: str | None = None,
    ) -> None:
        url = url or os.environ.get(URL_VARIABLE)
        if not url:
            raise ConfigError(
                f"gfcr/Remote-v0 needs the server's url: gym.make('gfcr/Remote-v0', url='http://HOST:PORT') "
                f"or {URL_VARIABLE}=http://HOST:PORT; start a server with `gfcr serve-env ENV_ID`"
            )
        if retries < 0 or render_mode not in (None, "ansi"):
            raise ConfigError(
                f"need retries >= 0 and render_mode None or 'ansi', got {retries}, {render_mode!r}"
            )
        self.url = url.rstrip("/")
        token = token or token_from_environment()
        self.token, self.retries, self.render_mode = token, retries, render_mode
        self.connect_timeout_s, self.message_timeout_s = connect_timeout_s, message_timeout_s
        self.max_observation_chars = max_observation_chars
        self.action_space = UnicodeText(max_action_chars)
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        _tokens[self.url] = token  # for the oracle, a classmethod: it has the task's url, not this env
        self.served = self._probe()  # {} for a server not written with gfcr
        shape = self.served.get("image_shape")  # (H, W) where the served env shows images
        self.image_shape: tuple[int, int] | None = (int(shape[0]), int(shape[1])) if shape else None
        self.observation_space: gym.Space = (
            text_and_image(max_observation_chars, self.image_shape)
            if self.image_shape
            else UnicodeText(max_observation_chars)
        )
        self.env_id: str | None = self.served.get("env_id")
        self.signal_defaults = dict(self.served.get("signal_defaults") or {})
        self.action_field = action_field or (None if self.served else self._action_field())
        self._client: Session | None = None
        self._episode_id: str | None = None
        self._tasks: TaskSource | None = None
        self.messages: list[Message] = []
        self.task: Task | None = None

    # -- the Gymnasium API -----------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        seed, task_id = reset_arguments(seed, options=options)  # refused here as the server would
        super().reset(seed=seed)
        payload: dict[str, Any] = {} if seed is None else {"seed": seed}
        if task_id is not None:
            payload["task_id"] = task_id
        result = self._with_retries("reset", lambda client: client.reset(**payload))
        metadata = reply_metadata(result)
        if "error" in metadata:
            raise decode_error(metadata["error"], self.url)
        self._episode_id = metadata.get("episode_id")
        observation = result.get("observation") or {}
        text = self._text(observation)
        info = self._info(text, metadata, first=True)
        self.task, self.messages = info["task"], list(info["messages"])
        return self._observation(text, observation), info

    def step(self, action: str | Action) -> tuple[Any, float, bool, bool, dict]:
        if self._client is None or self.task is None:
            raise GfcrError("step() called before reset(); call env.reset() first")
        if not isinstance(action, (str, Action)):
            text = f"Invalid action: expected text (str), got {type(action).__name__}."
            info = {
                "messages": [Message("user", text)],
                "signals": {**self.signal_defaults, "format_ok": False},
            }
            return self._observation(text), 0.0, False, False, info
        try:
            result = self._client.step(self._payload(action))
        except Exception as e:  # the server is gone mid-episode: not retried, it may have applied the step
            return self._lost(_reason(e))
        metadata = reply_metadata(result)
        if self.served and metadata.get("episode_id") != self._episode_id:  # the client reconnected
            return self._lost(
                "the server no longer holds this session: it was idle past the timeout, or restarted"
            )
        if "error" in metadata:
            raise decode_error(metadata["error"], self.url)
        observation = result.get("observation") or {}
        text = self._text(observation)
        info = self._info(text, metadata)
        self.messages += [
            Message("assistant", action if isinstance(action, str) else action.text),
            *info["messages"],
        ]
        terminated = bool(metadata.get("terminated", result.get("done", False)))
        truncated = bool(metadata.get("truncated", False))
        return (
            self._observation(text, observation),
            float(result.get("reward") or 0.0),
            terminated,
            truncated,
            info,
        )

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        return "\n\n".join(f"[{m.role}] {m.text}" for m in self.messages)

    def close(self) -> None:
        self._drop_client()

    # -- what the runner and the oracle use ------------------------------------------------------

    @property
    def tasks(self) -> TaskSource:
        """The served env's tasks, read through OpenEnv's task API (fetched in pages, cached)."""
        if self._tasks is None:
            self._tasks = remote_tasks(self.url, self._headers, self.env_id)
        return self._tasks

    @classmethod
    def oracle(cls, task: Task, messages: Sequence[Message]) -> str:
        """The served env's oracle, for a server that sends gold data (`gfcr serve-env --send-gold`):
        the env's own where it is registered in this process too, else the server's (`POST
        /gfcr/oracle`; a plugin env need not be installed beside the client)."""
        env_id = require_gold(task).metadata.get("remote_env_id")
        if env_id is None:
            raise GfcrError(
                "this remote task does not say which env served it: the oracle needs a gfcr server"
            )
        if env_id in gym.registry:
            return env_class(env_id).oracle(task, messages)
        return served_oracle(str(task.metadata.get("remote_url")), task, messages)

    # -- helpers -----------------------------------------------------------------------------------

    def _probe(self) -> dict[str, Any]:
        """What the server serves (`GET /gfcr`); {} for a server not written with gfcr."""
        last: Exception | None = None
        for attempt in range(self.retries + 1):
            try:
                reply = httpx.get(f"{self.url}/gfcr", headers=self._headers, timeout=self.connect_timeout_s)
            except httpx.HTTPError as e:
                last = e
                time.sleep(min(0.25 * 2**attempt, 2.0) if attempt < self.retries else 0)
                continue
            if reply.status_code == 401:
                raise ConfigError(
                    f"the env server at {self.url} wants a bearer token: "
                    "pass token=... or set GFCR_SERVE_TOKEN"
                )
            if reply.status_code == 404:
                return {}
            reply.raise_for_status()
            return dict(reply.json())
        port = self.url.rsplit(":", 1)[-1].split("/")[0]
        raise GfcrError(
            f"no env server answers at {self.url} ({_reason(last)}): start one with "
            f"`gfcr serve-env ENV_ID --port {port}`, or check the url"
        )

    def _action_field(self) -> str | None:
        """The action's one required string field, from a non-gfcr server's `/schema`."""
        try:
            schema = httpx.get(
                f"{self.url}/schema", headers=self._headers, timeout=self.connect_timeout_s
            ).json()
        except (httpx.HTTPError, ValueError):
            return None
        action = schema.get("action") or {}
        strings = [
            name
            for name in action.get("required", [])
            if (action.get("properties", {}).get(name) or {}).get("type") == "string"
        ]
        return strings[0] if len(strings) == 1 else None

    def _connect(self) -> Session:
        return Session(
            self.url,
            headers=self._headers,
            connect_timeout_s=self.connect_timeout_s,
            message_timeout_s=self.message_timeout_s,
        )

    def _with_retries(self, what: str, call: Any) -> Any:
        """`call(client)`, reconnecting and retrying with backoff while the server fails."""
        last: Exception | None = None
        for attempt in range(self.retries + 1):
            try:
                if self._client is None:
                    self._client = self._connect()
                return call(self._client)
            except Exception as e:  # a dead, restarting or full server: a new session may work
                last = e
                self._drop_client()
                if attempt < self.retries:
                    time.sleep(min(0.25 * 2**attempt, 4.0))
        raise GfcrError(
            f"the env server at {self.url} failed to {what} ({self.retries + 1} attempts): {_reason(last)}"
        )

    def _lost(self, reason: str) -> tuple[Any, float, bool, bool, dict]:
        """The step result of an episode whose server failed or forgot it: truncated, saying why."""
        self._drop_client()
        text = f"The env server at {self.url} failed during this step ({reason}); the episode is truncated."
        info = {
            "messages": [Message("user", text)],
            "signals": dict(self.signal_defaults),
            "remote_error": reason,
        }
        return self._observation(text), 0.0, False, True, info

    def _drop_client(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            try:
                client.close()
            except Exception:  # a broken connection cannot be closed cleanly; it is gone either way
                pass

    def _payload(self, action: str | Action) -> dict[str, Any]:
        if self.served:
            if isinstance(action, Action):
                return {"text": action.text, "tool_calls": [call.to_dict() for call in action.tool_calls]}
            return {"text": action}
        text = action.text if isinstance(action, Action) else action
        if self.action_field:
            return {self.action_field: text}
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            data = None
        if not isinstance(data, dict):
            raise ConfigError(
                f"the server at {self.url} takes structured actions and gfcr cannot tell which field holds "
                "the text: pass action_field=NAME, or act with a JSON object"
            )
        return data

    def _observation(self, text: str, observation: dict[str, Any] | None = None) -> Any:
        """What `reset` and `step` return: the text, or with a served env that shows images
        `{"text", "image"}` (the sent pixels; zeros for a reply without them, such as a lost step's)."""
        if self.image_shape is None:
            return text
        url = (observation or {}).get("image")
        pixels = decode_pixels(url, self.image_shape) if url else np.zeros((*self.image_shape, 3), np.uint8)
        return {"text": text, "image": pixels}

    def _text(self, observation: dict[str, Any]) -> str:
        if "text" in observation and isinstance(observation["text"], str):
            text = observation["text"]
        else:
            fields = {k: v for k, v in observation.items() if k not in ("metadata", "done", "reward")}
            strings = [v for v in fields.values() if isinstance(v, str)]
            text = strings[0] if len(strings) == 1 and len(fields) == 1 else json.dumps(fields, default=str)
        return text[: self.max_observation_chars]

    def _info(self, text: str, metadata: dict[str, Any], *, first: bool = False) -> dict[str, Any]:
        if self.served:
            info = decode_info(metadata)
            if isinstance(info.get("task"), Task):
                info["task"].metadata.setdefault("remote_env_id", self.env_id)
                info["task"].metadata.setdefault("remote_url", self.url)
            if first:  # the runner records the served env's id, and this server, in the trajectory
                kwargs = copy.deepcopy(self.served.get("kwargs"))  # each reset's info is its own
                info["remote"] = {"env_id": self.env_id, "url": self.url, "kwargs": kwargs}
            return info
        info = {
            "messages": [Message("user", text)],
            "signals": dict(metadata.get("signals") or {}),
            **metadata,
        }
        if first:
            task_id = str(metadata.get("task_id") or f"{self.url}/{self.np_random.integers(1 << 30)}")
            info |= {"task": Task(task_id, text, source=self.url), "tools": []}
        return info


_tokens: dict[str, str | None] = {}  # url -> bearer token, of the servers this process connected to


def served_oracle(url: str, task: Task, messages: Sequence[Message], timeout_s: float = 60.0) -> str:
    """The oracle's action for `task` after `messages`, computed by the env server at `url`.

    Only a server started with `--send-gold` answers (403 otherwise): the oracle plays from gold data.
    """
    token = _tokens.get(url) or token_from_environment()
    body = {"task": jsonable(task), "messages": [m.to_dict(inline_images=True) for m in messages]}
    try:
        reply = httpx.post(
            f"{url}/gfcr/oracle",
            json=body,
            headers={"Authorization": f"Bearer {token}"} if token else {},
            timeout=timeout_s,
        )
    except httpx.HTTPError as e:
        raise GfcrError(f"the env server at {url} did not answer the oracle ({_reason(e)})") from e
    if reply.status_code != 200:
        detail = reply.json().get("detail") if reply.headers.get("content-type") == "application/json" else ""
        raise GfcrError(
            f"the env server at {url} refused the oracle ({reply.status_code}: {detail or reply.text[:200]})"
        )
    return str(reply.json()["text"])


def _reason(error: BaseException | None) -> str:
    return f"{type(error).__name__}: {error}" if error is not None else "no answer"
