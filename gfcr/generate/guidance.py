"""Guidance: few-shot examples, plans or retrieved skills injected into the prompt.

A `Guide` turns the task's prompt (the first user message) into guidance text; `inject` puts
that text into the system message; `GuidedPolicy` wraps any policy so every request — and, for
token policies, the prompt ids — carries the guidance. Guidance is computed from the prompt
alone, so every turn of an episode sees the same text and token ids stay consistent.
`gfcr.skills.SkillLibrary` is a `Guide` too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from gfcr.core import Message
from gfcr.errors import ConfigError


@runtime_checkable
class Guide(Protocol):
    """Guidance text for a prompt ("" for none)."""

    def guidance(self, query: str) -> str: ...


@dataclass(frozen=True)
class FewShot:
    """Worked examples before the task.

    >>> print(FewShot((("2+2?", "\\\\boxed{4}"),)).guidance("3+3?"))
    Examples of solved tasks:
    <BLANKLINE>
    Task: 2+2?
    Solution: \\boxed{4}
    """

    examples: tuple[tuple[str, str], ...]  # (task, solution) pairs

    def guidance(self, query: str) -> str:
        shots = "\n\n".join(f"Task: {task}\nSolution: {solution}" for task, solution in self.examples)
        return f"Examples of solved tasks:\n\n{shots}" if shots else ""


@dataclass(frozen=True)
class Plan:
    """A plan to follow: fixed text, or made from the prompt by `make` (e.g. a planner model)."""

    make: str | Callable[[str], str]

    def guidance(self, query: str) -> str:
        plan = self.make if isinstance(self.make, str) else self.make(query)
        return f"Follow this plan:\n{plan}" if plan else ""


def first_user_text(messages: Sequence[Message]) -> str:
    """The prompt x: the first user message's text ("" if there is none)."""
    return next((m.content for m in messages if m.role == "user"), "")


def inject(messages: Sequence[Message], text: str) -> list[Message]:
    """`messages` with `text` appended to the system message (one is added first if missing).

    >>> [m.to_dict() for m in inject([Message("user", "hi")], "Be brief.")]
    [{'role': 'system', 'content': 'Be brief.'}, {'role': 'user', 'content': 'hi'}]
    """
    if not text:
        return list(messages)
    if messages and messages[0].role == "system":
        first = dataclasses.replace(messages[0], content=f"{messages[0].content}\n\n{text}")
        return [first, *messages[1:]]
    return [Message("system", text), *messages]


class GuidedPolicy:
    """Any policy, with `guide`'s guidance injected into every conversation it sees.

    It keeps the wrapped policy's name, version and capabilities: `encode_prompt` (token
    policies) and `agenerate` (async policies) exist exactly when the wrapped policy has them.

    >>> class Echo:
    ...     name, version = "echo", "1"
    ...     def generate(self, requests):
    ...         return [r.messages[0].content for r in requests]
    >>> @dataclass(frozen=True)
    ... class Request:
    ...     messages: tuple
    >>> GuidedPolicy(Echo(), Plan("1. read 2. answer")).generate([Request((Message("user", "q"),))])
    ['Follow this plan:\\n1. read 2. answer']
    """

    def __init__(self, policy: Any, guide: Guide) -> None:
        if not callable(getattr(policy, "generate", None)):
            raise ConfigError(f"GuidedPolicy wraps a policy (an object with generate()), got {policy!r}")
        self.policy, self.guide = policy, guide

    def _guided(self, request: Any) -> Any:
        text = self.guide.guidance(first_user_text(request.messages))
        return dataclasses.replace(request, messages=tuple(inject(request.messages, text)))

    def generate(self, requests: Sequence[Any]) -> list[Any]:
        return self.policy.generate([self._guided(r) for r in requests])

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("policy", "guide"):  # not set yet (copy, unpickle)
            raise AttributeError(name)
        inner = getattr(self.policy, name)  # AttributeError where the wrapped policy lacks it
        if name == "agenerate":

            async def agenerate(requests: Sequence[Any]) -> list[Any]:
                return await inner([self._guided(r) for r in requests])

            return agenerate
        if name == "encode_prompt":

            def encode_prompt(messages: Sequence[Message], tools: Sequence[dict[str, Any]]) -> list[int]:
                return inner(inject(messages, self.guide.guidance(first_user_text(messages))), tools)

            return encode_prompt
        return inner
