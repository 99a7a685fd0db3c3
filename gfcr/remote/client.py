"""`GfcrEnvClient`: openenv's typed `EnvClient` for a gfcr env server (`gfcr serve-env`).

OpenEnv envs ship a client class with their own action and observation types; this is gfcr's.
Actions are `TextAction`s (the model's text, with native tool calls if any) — the class the
server validates them as — and each reply is a `GfcrObservation`: the text (and, from an env that
shows images, its pixels), the chat messages (their images included), the tools, the Filter
signals, the task (gold withheld unless the server sends it), reward, `terminated`/`truncated`,
decoded from the wire format of `gfcr.envs.remote.wire`. Everything
openenv's clients do works: async or `.sync()`, `from_docker_image`, `new_session`.

On connecting it asks the server what it serves (`GET /gfcr`): a server not written with gfcr
is refused with what to use instead, and a failed reset raises the server's own gfcr error.
For MCP (`list_tools`, `call_tool`) use openenv's `MCPToolClient` on the same server.

>>> from gfcr.remote import GfcrEnvClient
>>> GfcrEnvClient(base_url="http://127.0.0.1:9").sync().connect()  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
gfcr.errors.GfcrError: no env server answers at http://127.0.0.1:9 (...): start one with `gfcr serve-env ...
"""

from __future__ import annotations

from typing import Any

import httpx
from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.env_server.types import Observation, State
from pydantic import Field

from gfcr.core import Message, Task
from gfcr.envs.remote.wire import decode_error, decode_info, decode_pixels, reply_metadata
from gfcr.errors import ConfigError, GfcrError
from gfcr.remote.server import TextAction


class GfcrObservation(Observation):
    """One reply of a gfcr env server: the env's text and `info`, typed (`reward`, `done` and the raw
    wire `metadata` as in every OpenEnv observation)."""

    text: str = Field(default="", description="The observation the model reads next.")
    image: Any = Field(
        default=None, description="With an env that shows images: the observation's (H, W, 3) uint8 pixels."
    )
    terminated: bool = Field(default=False, description="The episode ended (Gymnasium's terminated).")
    truncated: bool = Field(default=False, description="The episode was cut short (a limit).")
    messages: list[Message] = Field(default_factory=list, description="This reply as chat messages.")
    tools: list[dict[str, Any]] = Field(default_factory=list, description="Tool specs (OpenAI schemas).")
    signals: dict[str, Any] = Field(default_factory=dict, description="The step's Filter signals.")
    task: Task | None = Field(default=None, description="The task (on reset; gold withheld by default).")
    env_id: str | None = Field(default=None, description="The served env's id.")
    task_id: str | None = Field(default=None, description="The episode's task id.")
    episode_id: str | None = Field(default=None, description="The server's id of this episode.")
    info: dict[str, Any] = Field(default_factory=dict, description="The rest of the env's `info`.")


class GfcrEnvClient(EnvClient[TextAction, GfcrObservation, State]):
    """A session on a gfcr env server (see the module docstring); `served` is what `GET /gfcr` said."""

    served: dict[str, Any] | None = None

    async def _connect_async(self) -> GfcrEnvClient:
        try:
            await super()._connect_async()  # a provider (`from_docker_image`) knows the url only now
        except ConnectionError as e:
            if self.base_url is None:
                raise
            await self._probe()  # no server, a missing token, a server not gfcr's: its answer says which
            raise GfcrError(
                f"the env server at {self.base_url} refused a session ({e.__cause__ or e})"
            ) from e
        if self.served is None:
            try:
                self.served = await self._probe()
            except GfcrError:
                await self.close()
                raise
        return self

    async def _probe(self) -> dict[str, Any]:
        url = self.base_url
        try:
            async with httpx.AsyncClient(headers=self._headers, timeout=self._connect_timeout) as http:
                reply = await http.get(f"{url}/gfcr")
        except httpx.HTTPError as e:
            raise GfcrError(
                f"no env server answers at {url} ({type(e).__name__}: {e}): start one with "
                "`gfcr serve-env ENV_ID`, or check the url"
            ) from e
        if reply.status_code == 401:
            raise ConfigError(
                f"the env server at {url} wants a bearer token: "
                "GfcrEnvClient(base_url=..., headers={'Authorization': 'Bearer TOKEN'})"
            )
        if reply.status_code == 404:
            raise GfcrError(
                f"the server at {url} is an OpenEnv server but not a gfcr env server (it has no GET /gfcr), "
                "so its observations are not gfcr's: use openenv's GenericEnvClient, or "
                f"gym.make('gfcr/Remote-v0', url={url!r}), which reads any OpenEnv server"
            )
        reply.raise_for_status()
        return dict(reply.json())

    def _step_payload(self, action: TextAction | str) -> dict[str, Any]:
        if isinstance(action, str):
            action = TextAction(text=action)
        if not isinstance(action, TextAction) or action.type != "text":
            shown = action.type if isinstance(action, TextAction) else type(action).__name__
            raise ConfigError(
                f"GfcrEnvClient steps with text actions, got {shown!r}: pass TextAction(text=..., "
                "tool_calls=[...]) or a str; for MCP list_tools/call_tool use openenv's MCPToolClient"
            )
        return action.model_dump(exclude={"metadata", "tool_name", "arguments"})

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[GfcrObservation]:
        metadata = reply_metadata(payload)
        if "error" in metadata:
            raise decode_error(metadata["error"], str(self.base_url))
        info = decode_info(metadata)
        sent = payload.get("observation") or {}
        shape = (self.served or {}).get("image_shape")
        observation = GfcrObservation(
            text=str(sent.get("text", "")),
            image=decode_pixels(sent["image"], (shape[0], shape[1])) if shape and sent.get("image") else None,
            reward=payload.get("reward"),
            done=bool(payload.get("done", False)),
            metadata=metadata,
            terminated=bool(metadata.get("terminated", False)),
            truncated=bool(metadata.get("truncated", False)),
            messages=info.pop("messages", []),
            tools=info.pop("tools", []),
            signals=info.pop("signals", {}),
            task=info.pop("task", None),
            env_id=metadata.get("env_id"),
            task_id=metadata.get("task_id"),
            episode_id=metadata.get("episode_id"),
            info=info,
        )
        return StepResult(observation, reward=observation.reward, done=observation.done, metadata=metadata)

    def _parse_state(self, payload: dict[str, Any]) -> State:
        return State.model_validate(payload)
