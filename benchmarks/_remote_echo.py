"""The trivial echo env of benchmarks/remote.py, twice: on openenv's classes (`gfcr.testing.openenv_echo`)
and as a gfcr env."""

from __future__ import annotations

from typing import Any

from gfcr.core import Action as GfcrAction
from gfcr.core import Task
from gfcr.envs.base import Outcome, TextEnv
from gfcr.envs.tasks import TaskSource
from gfcr.registry import register_env
from gfcr.remote import create_app
from gfcr.testing.openenv_echo import echo_app


class GfcrEcho(TextEnv):
    def __init__(self) -> None:
        super().__init__(TaskSource.from_tasks("echo", [Task("echo/0", "ready")]), max_turns=1_000_000)

    def respond(self, action: GfcrAction) -> Outcome:
        return Outcome(action.text, reward=1.0)


def openenv_app() -> Any:
    return echo_app()


def gfcr_app() -> Any:
    register_env("bench/Echo-v0", GfcrEcho)
    return create_app("bench/Echo-v0", max_sessions=4)
