"""Chat messages, tool calls and actions: the text (and images) that flow between policy and env."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from gfcr.core.images import Image

if TYPE_CHECKING:
    from gfcr.core.images import ImageStore

Role = Literal["system", "user", "assistant", "tool"]
ROLES: tuple[str, ...] = ("system", "user", "assistant", "tool")
Part = str | Image  # one part of a multimodal message: text, or an image
Content = str | tuple[Part, ...]  # a message's content: plain text, or text and image parts in order


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

    `content` is plain text, or, in a message that holds images, a tuple of parts in order: text
    (`str`) and `Image`s, as OpenAI's content parts are. Content given as parts without an image
    is joined into plain text, so a message without images always has `str` content. `text` is
    the text of either kind; `images` the images, in order.

    >>> Message("user", "What is 2+2?").to_openai()
    {'role': 'user', 'content': 'What is 2+2?'}
    >>> from PIL import Image as PILImage
    >>> red = Image.from_pil(PILImage.new("RGB", (8, 8), "red"))
    >>> m = Message("user", ["What colour is this?", red])
    >>> m.text, m.images == (red,), [part["type"] for part in m.to_openai()["content"]]
    ('What colour is this?', True, ['text', 'image_url'])
    """

    role: Role
    content: Content
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None

    def __init__(
        self,
        role: Role,
        content: str | Sequence[Part],
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
        if content is None:  # OpenAI's assistant message that only calls tools has "content": null
            content = ""
        elif not isinstance(content, str):
            content = _parts(content)
        fields = self.__dict__
        fields["role"] = role
        fields["content"] = content
        fields["tool_calls"] = tool_calls
        fields["tool_call_id"] = tool_call_id
        fields["name"] = name

    @property
    def text(self) -> str:
        """The message's text: its content, or its text parts joined by newlines."""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(part for part in self.content if isinstance(part, str))

    @property
    def images(self) -> tuple[Image, ...]:
        """The message's images, in order (none for plain text)."""
        if isinstance(self.content, str):
            return ()
        return tuple(part for part in self.content if isinstance(part, Image))

    def to_openai(self) -> dict[str, Any]:
        """The message in the OpenAI chat format that chat templates and servers accept: images
        as `image_url` parts holding `data:` URLs."""
        content: Any = self.content
        if not isinstance(content, str):
            content = [_part_dict(part, inline=True) for part in content]
        out: dict[str, Any] = {"role": self.role, "content": content}
        if self.tool_calls:
            out["tool_calls"] = [call.to_openai() for call in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            out["name"] = self.name
        return out

    def to_dict(self, *, inline_images: bool = False) -> dict[str, Any]:
        """A JSON-ready dict; images as references by hash (`{"type": "image", "sha256": ...}`),
        their bytes stored apart (`gfcr.core.trajectory.write_jsonl` stores them), or with
        `inline_images` as OpenAI `image_url` parts holding the bytes (what crosses a wire)."""
        content: Any = self.content
        if not isinstance(content, str):
            content = [_part_dict(part, inline_images) for part in content]
        out: dict[str, Any] = {"role": self.role, "content": content}
        if self.tool_calls:
            out["tool_calls"] = [call.to_dict() for call in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            out["name"] = self.name
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any], images: ImageStore | None = None) -> Message:
        """The message of `to_dict()` (image references read from `images` when first used) or of
        an OpenAI chat message whose content parts carry images inline as `data:` URLs."""
        return cls(
            role=data["role"],
            content=read_content(data.get("content") or "", images),
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


def _part_dict(part: Part, inline: bool) -> dict[str, Any]:
    if isinstance(part, str):
        return {"type": "text", "text": part}
    if inline:
        return {"type": "image_url", "image_url": {"url": part.data_url()}}
    return {"type": "image", "sha256": part.sha256, "media_type": part.media_type}


def _parts(parts: Sequence[Part]) -> Content:
    """Content parts as stored: a tuple of text and images, or plain text if there is no image."""
    from gfcr.errors import ConfigError

    kept: list[Part] = []
    for part in parts:
        if not isinstance(part, str | Image):
            raise ConfigError(
                f"a message part must be text (str) or a gfcr.core.Image, got {type(part).__name__}; "
                "make images with Image.from_pil, Image.from_file or Image.from_bytes"
            )
        if part != "":
            kept.append(part)
    if not any(isinstance(part, Image) for part in kept):
        return "\n".join(kept)  # type: ignore[arg-type]  # all text
    return tuple(kept)


def read_content(content: str | list[dict[str, Any]], images: ImageStore | None = None) -> Content:
    """Message content from JSON: plain text, or parts in gfcr's form (`{"type": "image",
    "sha256": ...}`, read from `images`) or OpenAI's (`text`, `image_url` with a data URL).

    >>> read_content([{"type": "text", "text": "hi"}])
    'hi'
    """
    from gfcr.errors import DataError

    if isinstance(content, str):
        return content
    parts: list[Part] = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            parts.append(str(part["text"]))
        elif kind == "image_url":
            url = part["image_url"]
            parts.append(Image.from_data_url(url["url"] if isinstance(url, dict) else url))
        elif kind == "image" and "sha256" in part:
            if images is None:
                raise DataError(
                    f"message refers to image {part['sha256'][:12]}… by hash but no image store was "
                    "given; read trajectory files with gfcr.core.read_jsonl (it finds their images/ folder)"
                )
            parts.append(Image.stored(part["sha256"], images, part.get("media_type", "image/png")))
        else:
            raise DataError(
                f"unknown message content part {part!r}; parts are {{'type': 'text', 'text': ...}}, "
                "{'type': 'image_url', 'image_url': {'url': 'data:image/png;base64,...'}} or "
                "{'type': 'image', 'sha256': ...}"
            )
    return _parts(parts)
