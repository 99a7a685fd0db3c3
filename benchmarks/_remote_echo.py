"""The trivial echo env of benchmarks/remote.py, twice: on openenv's classes and as a gfcr env."""

from __future__ import annotations

from typing import Any

from openenv.core.env_server.http_server import create_fastapi_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State

from gfcr.core import Action as GfcrAction
from gfcr.core import Task
from gfcr.envs.base import Outcome, TextEnv
from gfcr.envs.tasks import TaskSource
from gfcr.registry import register_env
from gfcr.remote import create_app


class EchoAction(Action):
    message: str


class EchoObservation(Observation):
    echoed: str = ""


class OpenEnvEcho(Environment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State(episode_id="echo", step_count=0)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> EchoObservation:
        return EchoObservation(echoed="ready")

    def step(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> EchoObservation:  # type: ignore[override]
        assert isinstance(action, EchoAction)
        self._state.step_count += 1
        return EchoObservation(echoed=action.message, reward=1.0)

    @property
    def state(self) -> State:
        return self._state


class GfcrEcho(TextEnv):
    def __init__(self) -> None:
        super().__init__(TaskSource.from_tasks("echo", [Task("echo/0", "ready")]), max_turns=1_000_000)

    def respond(self, action: GfcrAction) -> Outcome:
        return Outcome(action.text, reward=1.0)


def openenv_app() -> Any:
    return create_fastapi_app(OpenEnvEcho, EchoAction, EchoObservation, max_concurrent_envs=4)


def gfcr_app() -> Any:
    register_env("bench/Echo-v0", GfcrEcho)
    return create_app("bench/Echo-v0", max_sessions=4)
