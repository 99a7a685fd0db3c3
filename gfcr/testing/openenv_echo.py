"""An env written with openenv's server classes alone (no gfcr inside): the peer that tests and
benchmarks of `gfcr/Remote-v0` and `gfcr serve-env` compare against.

It echoes the action's `message`; the reward is the message's length / 10; "bye" ends the episode.

>>> env = OpenEnvEcho()
>>> env.reset().echoed, env.step(EchoAction(message="hello")).reward
('ready', 0.5)
"""

from __future__ import annotations

from typing import Any

from openenv.core.env_server.http_server import create_fastapi_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State


class EchoAction(Action):
    message: str


class EchoObservation(Observation):
    echoed: str = ""


class OpenEnvEcho(Environment):
    """The echo env; one instance per session."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State(episode_id="echo", step_count=0)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> EchoObservation:
        return EchoObservation(echoed="ready")

    def step(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> EchoObservation:  # type: ignore[override]
        assert isinstance(action, EchoAction)  # the server validates every action as an EchoAction
        self._state.step_count += 1
        reward = len(action.message) / 10
        return EchoObservation(echoed=action.message, reward=reward, done=action.message == "bye")

    @property
    def state(self) -> State:
        return self._state


def echo_app(max_sessions: int = 4) -> Any:
    """openenv's reference server (`create_fastapi_app`) over the echo env."""
    return create_fastapi_app(OpenEnvEcho, EchoAction, EchoObservation, max_concurrent_envs=max_sessions)
