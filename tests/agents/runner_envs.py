"""Envs and policies for the runner's tests: multi-turn tool episodes, and envs that fail on purpose.

Importable by worker processes too (pytest puts this folder on sys.path, and spawned workers inherit it).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import ClassVar

import gymnasium as gym

from gfcr.agents import Completion, Request
from gfcr.core import Action, Message, Task, ToolSpec
from gfcr.envs.base import Outcome, TextEnv
from gfcr.envs.tasks import TaskSource


def echo(text: str) -> str:
    """Repeat the text back.

    Args:
        text: What to repeat.
    """
    return f"echo: {text}"


class EchoEnv(TextEnv):
    """Task `turns-N` ends with reward 1.0 at turn N; tool calls of `echo` are answered with tool messages."""

    signal_defaults: ClassVar[dict[str, float | bool]] = {"format_ok": False}

    def __init__(self, max_turns: int = 12, render_mode: str | None = None) -> None:
        tasks = [Task(f"turns-{n}", f"Talk to me for {n} turns. Ünïcödé ✓", gold=n) for n in range(1, 9)]
        super().__init__(TaskSource.from_tasks("echo", tasks), tools=[ToolSpec.from_function(echo)],
                         max_turns=max_turns, render_mode=render_mode)  # fmt: skip

    def respond(self, action: Action) -> Outcome:
        assert self.task is not None
        if self.turn >= self.task.gold:
            return Outcome("Done.", reward=1.0, terminated=True, signals={"format_ok": True})
        if action.tool_calls:
            return self.run_tools(action)
        return Outcome(f"Turn {self.turn} of {self.task.gold}: go on.", signals={"format_ok": True})

    @classmethod
    def oracle(cls, task: Task, messages: Sequence[Message]) -> str:
        return "next"


class FaultyEnv(TextEnv):
    """Each task fails in its own way when stepped: raise, hang, crash the process, or be slow."""

    signal_defaults: ClassVar[dict[str, float | bool]] = {"format_ok": False}

    def __init__(self, render_mode: str | None = None) -> None:
        names = ["ok", "raise", "hang", "crash", "slow"]
        super().__init__(TaskSource.from_tasks("faulty", [Task(n, f"task {n}", n) for n in names]),
                         render_mode=render_mode)  # fmt: skip

    def respond(self, action: Action) -> Outcome:
        assert self.task is not None
        kind = self.task.id
        if kind == "raise":
            raise RuntimeError("the verifier broke")
        if kind == "hang":
            time.sleep(3600)
        if kind == "crash":
            os._exit(3)
        if kind == "slow":
            time.sleep(0.5)
        return Outcome("fine", reward=1.0, terminated=True, signals={"format_ok": True})

    @classmethod
    def oracle(cls, task: Task, messages: Sequence[Message]) -> str:
        return "answer"


# Registered with Gymnasium only (not gfcr.register_env): the env-contract tests must not pick them up.
if "test/Echo-v0" not in gym.registry:
    gym.register("test/Echo-v0", entry_point="runner_envs:EchoEnv")
    gym.register("test/Faulty-v0", entry_point="runner_envs:FaultyEnv")


class ScriptPolicy:
    """Answers every request with `text` after `latency_s` per batch; records each batch it saw."""

    version = "1"

    def __init__(self, text: str = "next", latency_s: float = 0.0, fail_on: str | None = None) -> None:
        self.name = f"script:{text[:20]}"
        self.text, self.latency_s, self.fail_on = text, latency_s, fail_on
        self.batches: list[list[Request]] = []

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        self.batches.append(list(requests))
        if self.fail_on is not None and any(
            r.task is not None and r.task.id == self.fail_on for r in requests
        ):
            raise RuntimeError(f"the policy cannot answer {self.fail_on}")
        time.sleep(self.latency_s)
        return [Completion(self.text, completion_tokens=3) for _ in requests]
