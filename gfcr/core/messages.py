"""Chat messages, tool calls and actions: the text that flows between policy and env."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool"]
ROLES: tuple[str, ...] = ("system", "user", "assistant", "tool")


@dataclass(frozen=True)
class ToolCall:
    """One call of a tool by the model.

    >>> ToolCall("calculator", {"expression": "2+2"}).to_openai()["function"]
    {'name': 'calculator', 'arguments': '{"expression": "2+2"}'}
    """

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    id: str = ""

    def to_openai(self) -> dict[str, Any]:
        """The call as an OpenAI chat-completions `tool_calls` entry (arguments JSON-encoded)."""
        import json

        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": json.dumps(self.arguments, ensure_ascii=False)},
        }

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "arguments": self.arguments, "id": self.id}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolCall:
        return cls(name=data["name"], arguments=dict(data.get("arguments") or {}), id=data.get("id", ""))


@dataclass(frozen=True, init=False)
class Message:
    """One chat message. `tool_calls` on assistant messages; `tool_call_id`/`name` on tool results.

    >>> Message("user", "What is 2+2?").to_openai()
    {'role': 'user', 'content': 'What is 2+2?'}
    """

    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None

    def __init__(
        self,
        role: Role,
        content: str,
        tool_calls: tuple[ToolCall, ...] = (),
        tool_call_id: str | None = None,
        name: str | None = None,
    ) -> None:
        # Written out rather than generated: a frozen dataclass's __init__ sets each field through
        # object.__setattr__, which made building messages a fifth of an env step. Same fields,
        # order and defaults as declared above; the instance stays frozen (__setattr__ raises).
        if role not in ROLES:
            from gfcr.errors import ConfigError

            raise ConfigError(f"message role must be one of {ROLES}, got {role!r}")
        fields = self.__dict__
        fields["role"] = role
        fields["content"] = content
        fields["tool_calls"] = tool_calls
        fields["tool_call_id"] = tool_call_id
        fields["name"] = name

    def to_openai(self) -> dict[str, Any]:
        """The message in the OpenAI chat format that chat templates and servers accept."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [call.to_openai() for call in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            out["name"] = self.name
        return out

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [call.to_dict() for call in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            out["name"] = self.name
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Message:
        return cls(
            role=data["role"],
            content=data.get("content") or "",
            tool_calls=tuple(ToolCall.from_dict(c) for c in data.get("tool_calls") or ()),
            tool_call_id=data.get("tool_call_id"),
            name=data.get("name"),
        )


@dataclass(frozen=True)
class Action:
    """A model action: its raw text and the tool calls parsed from it.

    Envs accept either a plain string (parsed by the env) or an `Action` whose `tool_calls` were
    already parsed, e.g. by an OpenAI-compatible server's native tool calling.

    >>> Action("Let me compute.", (ToolCall("calculator", {"expression": "6*7"}),)).tool_calls[0].name
    'calculator'
    """

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
