"""The policy contract: a batch of conversations in, one completion per conversation out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from gfcr.core import Message, Task, ToolCall


@dataclass(frozen=True)
class SamplingParams:
    """How to sample: the knobs every backend understands."""

    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 1024
    stop: tuple[str, ...] = ()
    seed: int | None = None


@dataclass(frozen=True)
class Request:
    """One conversation to continue: its messages, the tools offered, and how to sample.

    `env_id` and `task` identify the episode; model-backed policies ignore them, scripted
    oracles read the gold data from them.
    """

    messages: tuple[Message, ...]
    tools: tuple[dict[str, Any], ...] = ()
    sampling: SamplingParams = field(default_factory=SamplingParams)
    env_id: str = ""
    task: Task | None = None


@dataclass(frozen=True)
class Completion:
    """The policy's answer to one request. Token fields are None when the backend has none."""

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str = "stop"
    prompt_ids: tuple[int, ...] | None = None
    completion_ids: tuple[int, ...] | None = None
    logprobs: tuple[float, ...] | None = None


@runtime_checkable
class Policy(Protocol):
    """Anything that turns a batch of requests into completions, in order."""

    name: str
    version: str

    def generate(self, requests: Sequence[Request]) -> list[Completion]: ...
