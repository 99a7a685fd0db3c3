"""Serve any gfcr env over the OpenEnv protocol (`gfcr serve-env`).

Built on `openenv`'s own server (`openenv.core.env_server.create_fastapi_app`): its `/ws`
sessions (one isolated env per WebSocket), `/reset`, `/step`, `/state`, `/schema`, `/health`,
`/metadata`, the session limit (a clear `CAPACITY_REACHED` error when full) and its task API
(`/{name}/num_tasks`, `/{name}/task`, `/{name}/task_range`). gfcr adds what a shared server
needs in front of it (`Guard`): an optional bearer token, bounded request and message sizes, and
closing WebSockets idle past a timeout; and `GET /gfcr`, which says what is served (the runner
checks it before spreading episodes over servers), and `POST /gfcr/oracle`, the served env's
oracle action for a client that lacks the env's class (with `send_gold` only). `serve_env` runs
it on uvicorn with bounded connections (`gfcr.apps.connections`): idle and slow sockets are shed,
served clients are not.

What a client sees is what an agent may see. Tasks go out without their gold data and metadata
(`withhold_gold`: the answer, the gold SQL, hidden tests) unless the server is started with
`send_gold=True` (`--send-gold`, for trusted trainer-side clients such as the scripted oracle);
rewards are computed here either way. Configuration is shown with its credentials masked
(`gfcr.core.redact`), and a reset's seed and options are checked before they reach the env (a
bad one is a 400 that names it, never a 500).

Actions are `TextAction`s: `{"text": ...}` (the model's raw text), with `tool_calls` for native
tool calls, or OpenEnv's MCP-style `{"type": "list_tools"}` and
`{"type": "call_tool", "tool_name": ..., "arguments": {...}}`, so `openenv`'s `MCPToolClient`
lists the env's tools with their real schemas and calls them inside the episode.
Observations carry the text in `observation["text"]` (with an env that shows images, the
observation's pixels in `observation["image"]`, a PNG `data:` URL) and gfcr's extras in `metadata`,
the messages' images inline (see `gfcr.envs.remote.wire`).

>>> from fastapi.testclient import TestClient
>>> with TestClient(create_app("gfcr/ToolUse-v0")) as client:
...     reply = client.post("/reset", json={"task_id": "tooluse/7"}).json()
>>> reply["observation"]["text"][:30], reply["metadata"]["task_id"], reply["metadata"]["task"]["gold"]
('What is the code of locker aah', 'tooluse/7', None)
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

import gymnasium as gym
import uvicorn
from fastapi import FastAPI, HTTPException, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from openenv.core.env_server.http_server import create_fastapi_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.mcp_types import CallToolObservation, ListToolsObservation, Tool
from openenv.core.env_server.types import Action, ConcurrencyConfig, EnvironmentMetadata, Observation, State
from pydantic import BaseModel, Field

from gfcr.apps.connections import ConnectionLimits, uvicorn_config
from gfcr.apps.server_guard import Guard
from gfcr.core import Action as GfcrAction
from gfcr.core import Message, Task, ToolCall
from gfcr.core.admission import Admission, AdmissionConfig, add_waits
from gfcr.core.redact import redact
from gfcr.envs.remote.wire import (
    decode_task,
    encode_error,
    encode_info,
    encode_pixels,
    image_shape,
    jsonable,
    reset_arguments,
    withhold_gold,
)
from gfcr.envs.spaces import observation_text
from gfcr.errors import ConfigError, QueueTimeoutError, UnknownNameError
from gfcr.registry import env_class, list_envs
from gfcr.version import __version__

logger = logging.getLogger(__name__)


class NativeToolCall(BaseModel):
    """A native tool call, as the model's server parsed it."""

    name: str = Field(description="The tool to call.")
    arguments: dict[str, Any] = Field(default_factory=dict, description="Its arguments.")
    id: str = Field(default="", description="The call's id, echoed in the tool's result.")


class TextAction(Action):
    """One action: the model's text (and native tool calls), or an MCP tool listing or call."""

    type: Literal["text", "list_tools", "call_tool"] = Field(
        default="text", description="What the action is."
    )
    text: str = Field(default="", description="The model's raw text (tool calls inside it are parsed).")
    tool_calls: list[NativeToolCall] = Field(
        default_factory=list, description='Native tool calls: [{"name": ..., "arguments": {...}}].'
    )
    tool_name: str = Field(default="", description="With type call_tool: the tool to call.")
    arguments: dict[str, Any] = Field(default_factory=dict, description="With type call_tool: its arguments.")


class OracleRequest(BaseModel):
    """A task (as `GET /{name}/task` sends it, gold included) and the conversation so far."""

    task: dict[str, Any] = Field(description="The task, gold data included.")
    messages: list[dict[str, Any]] = Field(default_factory=list, description="The chat so far.")


class TextObservation(Observation):
    """The env's text; `metadata` holds signals, tools, task, messages and the end reasons."""

    text: str = Field(default="", description="The observation the model reads next.")
    image: str | None = Field(
        default=None,
        description="With an env that shows images: the observation's (H, W, 3) pixels as a PNG data URL.",
    )


@dataclass
class ServedEnv:
    """The env a server serves, and one shared instance for its task listings (made on first use)."""

    env_id: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    send_gold: bool = False  # send tasks' gold data and metadata (trusted trainer-side clients only)
    sessions_started: int = 0
    # env calls (resets, steps) at once over every session; more queue (`gfcr serve-env --max-concurrency`)
    admission: Admission = field(default_factory=lambda: Admission("env_server"))
    image_shape: tuple[int, int] | None = None  # (H, W) of a `text_and_image` env's observation pixels
    _catalog: gym.Env | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def make(self) -> gym.Env:
        return gym.make(self.env_id, **self.kwargs)

    def session(self) -> GymSession:
        """A new session's env (the server's factory)."""
        with self._lock:
            self.sessions_started += 1
        return GymSession(self)

    @property
    def tasks(self) -> Any:
        """The env's `TaskSource` (NotImplementedError for an env without one: the task API answers 501)."""
        with self._lock:
            if self._catalog is None:
                self._catalog = self.make()
        tasks = getattr(self._catalog.unwrapped, "tasks", None)
        if tasks is None:
            raise NotImplementedError(f"{self.env_id} has no task list")
        return tasks

    def visible(self, task: Task) -> Task:
        """`task` as this server sends it: whole with `send_gold`, else without gold and metadata."""
        return task if self.send_gold else withhold_gold(task)

    def oracle(self, request: OracleRequest) -> dict[str, str]:
        """What `POST /gfcr/oracle` answers: the served env's oracle action, `{"text": ...}`, for a
        client without the env's class (a plugin installed beside the server only). Only with
        `send_gold` (403 otherwise): the oracle plays from gold data, so it is as trusted."""
        if not self.send_gold:
            raise HTTPException(
                403,
                "this env server withholds gold data (answers, gold SQL, tests), which the scripted "
                "oracle plays from: start it with `gfcr serve-env ... --send-gold` "
                "(for trusted trainer-side clients only)",
            )
        try:
            task = decode_task(request.task)
            messages = [Message.from_dict(m) for m in request.messages]
            return {"text": env_class(self.env_id).oracle(task, messages)}
        except Exception as e:  # a task of another env, a broken message: a 400 that names it
            raise ConfigError(f"the oracle of {self.env_id} failed: {type(e).__name__}: {e}") from e

    def describe(self) -> dict[str, Any]:
        """What `GET /gfcr` answers (the env's keywords with credentials masked)."""
        entry_point = gym.spec(self.env_id).entry_point
        signal_defaults = getattr(env_class(self.env_id), "signal_defaults", {})
        return {
            "env_id": self.env_id,
            "kwargs": redact(jsonable(self.kwargs)),
            "entry_point": entry_point if isinstance(entry_point, str) else None,
            "signal_defaults": jsonable(signal_defaults),
            "sends_gold": self.send_gold,
            "image_shape": list(self.image_shape) if self.image_shape else None,
            "gfcr_version": __version__,
            "sessions_started": self.sessions_started,
            "admission": self.admission.describe(),
        }


class GymSession(Environment):
    """One session's env, as an OpenEnv `Environment` (the server makes one per session)."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, served: ServedEnv) -> None:
        super().__init__()
        self.served = served
        self._env: gym.Env | None = None
        self._tools: list[dict[str, Any]] | None = None
        self._state = State(episode_id=None, step_count=0)
        self.mcp_client = SessionTools(self)  # what openenv's server calls for MCP `tools/list`, `tools/call`

    @property
    def env(self) -> gym.Env:
        if self._env is None:
            self._env = self.served.make()
        return self._env

    # -- the OpenEnv Environment API --------------------------------------------------------------

    def reset(
        self,
        seed: Any = None,
        episode_id: str | None = None,
        task_id: Any = None,
        options: Any = None,
        **unknown: Any,
    ) -> Observation:
        """Reset to `task_id` (or `options["task_id"]`, or the task `seed` picks).

        Bad arguments raise `ConfigError` (HTTP: a 400; WebSocket: an error reply); a failure of
        the env comes back as `metadata["error"]`, so the client raises the same error.
        """
        if unknown:
            raise ConfigError(
                f"unknown reset arguments {sorted(unknown)}; a reset takes seed, task_id, options, episode_id"
            )
        seed, task_id = reset_arguments(seed, task_id, options)
        return self._admitted(self._reset, seed, episode_id, task_id)

    def _reset(self, seed: int | None, episode_id: str | None, task_id: str | None) -> Observation:
        try:
            observation, info = self.env.reset(
                seed=seed, options={"task_id": task_id} if task_id is not None else None
            )
        except Exception as e:  # the client raises the same error; the session lives on
            return TextObservation(text=str(e), done=True, metadata=self._facts(error=encode_error(e)))
        self._tools = list(info.get("tools") or [])
        task = info.get("task")
        self._state = State(
            episode_id=episode_id or uuid.uuid4().hex,
            step_count=0,
            env_id=self.served.env_id,
            task_id=getattr(task, "id", None),
        )
        return self._observe(observation, None, False, False, info)

    def step(self, action: Action, timeout_s: float | None = None, **_: Any) -> Observation:  # type: ignore[override]
        """Step the env with a text, native tool-call or MCP action."""
        assert isinstance(action, TextAction)  # the server validates every action as a TextAction
        if action.type == "list_tools":
            return ListToolsObservation(tools=[_mcp_tool(spec) for spec in self._tool_specs()])
        if action.type == "call_tool":
            call = ToolCall(action.tool_name, dict(action.arguments), id=f"call_{self._state.step_count}")
            result = self._step(GfcrAction("", (call,)))
            if not isinstance(result, TextObservation) or "error" in result.metadata:
                return result
            return CallToolObservation(
                tool_name=action.tool_name,
                result={"data": result.text, "content": [{"type": "text", "text": result.text}]},
                reward=result.reward,
                done=result.done,
                metadata=result.metadata,
            )
        calls = tuple(ToolCall(c.name, dict(c.arguments), c.id) for c in action.tool_calls)
        return self._step(GfcrAction(action.text, calls) if calls else action.text)

    @property
    def state(self) -> State:
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name=self.served.env_id,
            description=f"gfcr env {self.served.env_id} {json.dumps(redact(jsonable(self.served.kwargs)))}",
            version=__version__,
            documentation_url="https://github.com/gfcr/gfcr/blob/main/docs/integrations.md",
        )

    def close(self) -> None:
        if self._env is not None:
            self._env.close()
            self._env = None

    # -- OpenEnv's task API (`/{name}/num_tasks`, `/{name}/task`, `/{name}/task_range`) ---------

    def list_splits(self) -> list[str]:
        return ["all"]

    def num_tasks(self, split: str) -> int:
        return len(self.served.tasks)

    def get_task(self, split: str, index: int) -> dict[str, Any]:
        tasks = self.served.tasks
        if not 0 <= index < len(tasks):
            raise IndexError(index)
        return jsonable(self.served.visible(tasks[index]))

    def get_task_range(self, split: str, start: int | None = None, stop: int | None = None) -> list[dict]:
        tasks = self.served.tasks
        return [jsonable(self.served.visible(tasks[i])) for i in range(len(tasks))[start:stop]]

    # -- helpers -----------------------------------------------------------------------------------

    def _admitted(self, call: Any, *args: Any) -> Observation:
        """`call(*args)` once the server's admission lets it run; the seconds it queued are added to
        the answer's `metadata["wait_s"]["env_server"]`, and a queue timeout is the answer's error."""
        try:
            with self.served.admission.admit() as waited:
                observation = call(*args)  # it answers its own failures: only the queue's come here
        except QueueTimeoutError as e:
            waited = e.waited_s
            observation = TextObservation(text=str(e), done=True, metadata=self._facts(error=encode_error(e)))
        waits = add_waits(observation.metadata.get("wait_s"), {"env_server": waited})
        observation.metadata["wait_s"] = waits
        return observation

    def _step(self, action: str | GfcrAction) -> Observation:
        return self._admitted(self._run_step, action)

    def _run_step(self, action: str | GfcrAction) -> Observation:
        try:
            observation, reward, terminated, truncated, info = self.env.step(action)
        except Exception as e:  # e.g. a step before reset: the client raises the same error
            return TextObservation(text=str(e), done=True, metadata=self._facts(error=encode_error(e)))
        self._state.step_count += 1
        return self._observe(observation, float(reward), bool(terminated), bool(truncated), info)

    def _observe(
        self, observation: Any, reward: float | None, terminated: bool, truncated: bool, info: dict[str, Any]
    ) -> TextObservation:
        facts = self._facts(terminated=terminated, truncated=truncated)
        if isinstance(info.get("task"), Task):
            info = {**info, "task": self.served.visible(info["task"])}
        return TextObservation(
            text=observation_text(observation),
            image=encode_pixels(observation["image"]) if isinstance(observation, dict) else None,
            reward=reward,
            done=terminated or truncated,
            metadata={**encode_info(info), **facts},
        )

    def _facts(self, **facts: Any) -> dict[str, Any]:
        task_id = getattr(self._state, "task_id", None)
        return {
            "env_id": self.served.env_id,
            "task_id": task_id,
            "episode_id": self._state.episode_id,
            **facts,
        }

    def _tool_specs(self) -> list[dict[str, Any]]:
        if self._tools is None:  # tools may be listed before any reset: learn them from one
            self._tools = list(self.env.reset(seed=0)[1].get("tools") or [])
        return self._tools


class SessionTools:
    """A session's env tools as the MCP client openenv's server drives over `POST /mcp`.

    A tool call is a step of the session's episode (its result the observation), run on a worker
    thread. (The browser env is bound to one thread: call its tools through `step`.)
    """

    def __init__(self, session: GymSession) -> None:
        self.session = session

    def is_connected(self) -> bool:
        return True  # in-process: there is no transport to open

    async def __aenter__(self) -> SessionTools:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def list_tools(self) -> list[Tool]:
        specs = await asyncio.to_thread(self.session._tool_specs)
        return [_mcp_tool(spec) for spec in specs]

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        action = TextAction(type="call_tool", tool_name=name, arguments=dict(arguments or {}))
        observation = await asyncio.to_thread(self.session.step, action)
        if isinstance(observation, CallToolObservation):
            return {**observation.result, "reward": observation.reward, "done": observation.done}
        assert isinstance(observation, TextObservation)
        return {
            "data": None,
            "is_error": True,
            "error": observation.metadata.get("error"),
            "text": observation.text,
        }


def _mcp_tool(spec: dict[str, Any]) -> Tool:
    """An OpenAI function schema as an MCP tool."""
    function = spec.get("function", spec)
    return Tool(
        name=function["name"],
        description=function.get("description", ""),
        input_schema=function.get("parameters") or {"type": "object", "properties": {}},
    )


def create_app(
    env_id: str,
    env_kwargs: dict[str, Any] | None = None,
    *,
    max_sessions: int = 64,
    idle_timeout_s: float | None = 600.0,
    token: str | None = None,
    max_request_bytes: int = 1 << 20,
    admission: AdmissionConfig | None = None,
    send_gold: bool = False,
    read_timeout_s: float | None = 10.0,
) -> Any:
    """The ASGI app serving `env_id` (made with `env_kwargs`) over the OpenEnv protocol.

    `send_gold` sends tasks whole, gold data and metadata included: for trusted trainer-side
    clients only (the scripted oracle over the wire). `read_timeout_s` bounds reading a request
    body (408 past it).

    `admission` bounds the env calls (resets and steps) running at once over all sessions: more
    wait in a queue, each answer says how long in `metadata["wait_s"]["env_server"]`, and one
    that waits past `queue_timeout_s` fails as "env_server queue timeout" (not the agent's).
    """
    if env_id not in gym.registry:
        raise UnknownNameError("env id", env_id, list_envs(), hint="see `gfcr list`")
    if max_sessions < 1 or max_request_bytes < 1024:
        raise ConfigError(
            f"need max_sessions >= 1 and max_request_bytes >= 1024, got {max_sessions}, {max_request_bytes}"
        )
    gate = (admission or AdmissionConfig()).gate("env_server")
    served = ServedEnv(env_id, dict(env_kwargs or {}), send_gold, admission=gate)
    probe = served.make()  # bad kwargs fail here, with the env's own message, not in the first session
    served.image_shape = image_shape(probe.observation_space)
    probe.close()
    concurrency = ConcurrencyConfig(max_concurrent_envs=max_sessions, session_timeout=idle_timeout_s)
    app: FastAPI = create_fastapi_app(
        served.session,
        TextAction,
        TextObservation,
        concurrency_config=concurrency,
        env_name=env_id.replace("/", "-"),
        mode="simulation",
    )
    app.get("/gfcr", tags=["Environment Info"], summary="What this gfcr server serves")(served.describe)
    app.post("/gfcr/oracle", tags=["Environment Info"], summary="The oracle's action (--send-gold only)")(
        served.oracle
    )
    app.add_exception_handler(ConfigError, _bad_request)  # a reset's bad seed or options
    app.add_exception_handler(RequestValidationError, _bad_request)  # a body of the wrong shape
    return Guard(
        app,
        token=token,
        max_request_bytes=max_request_bytes,
        idle_timeout_s=idle_timeout_s,
        read_timeout_s=read_timeout_s,
    )


async def _bad_request(request: Request, error: Exception) -> JSONResponse:
    """A 400 naming what was wrong: openenv's 422 answers become 400s too, their inputs made JSON."""
    if isinstance(error, RequestValidationError):
        problems = [f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors()]
        content = {"detail": "; ".join(problems), "errors": jsonable(jsonable_encoder(error.errors()))}
        return JSONResponse(content, status_code=400)
    return JSONResponse({"detail": str(error)}, status_code=400)


def serve_env(
    env_id: str,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    max_sessions: int = 64,
    idle_timeout_s: float | None = 600.0,
    token: str | None = None,
    max_request_bytes: int = 1 << 20,
    admission: AdmissionConfig | None = None,
    send_gold: bool = False,
    limits: ConnectionLimits | None = None,
    log_level: str = "warning",
    **env_kwargs: Any,
) -> None:
    """Serve `env_id` (made with `env_kwargs`) until interrupted: `gfcr serve-env` in Python.

    `openenv`'s clients drive it (`GenericEnvClient(base_url=f"http://{host}:{port}")`), and so
    does `gymnasium.make("gfcr/Remote-v0", url=...)`. `limits` bound its connections and how long
    a request may take to arrive (`gfcr.apps.connections`).
    """
    limits = limits or ConnectionLimits()
    app = create_app(
        env_id,
        env_kwargs,
        max_sessions=max_sessions,
        idle_timeout_s=idle_timeout_s,
        token=token,
        max_request_bytes=max_request_bytes,
        admission=admission,
        send_gold=send_gold,
        read_timeout_s=limits.read_timeout_s,
    )
    config = uvicorn_config(
        app, host=host, port=port, limits=limits, log_level=log_level, ws_max_size=max_request_bytes
    )
    uvicorn.Server(config).run()
