"""Chat templates as token ids: prompts, and the observation tokens between two policy turns.

Token-in-token-out needs the ids that follow a turn the policy generated, without re-rendering
(and so re-tokenizing) that turn. The chat template is rendered for a fixed stand-in
conversation with and without the new messages; the difference is the observation text, encoded
on its own. The end of the assistant's turn (e.g. `<|im_end|>\\n`) comes from the template too,
less the end-of-turn token when the policy already sampled it.

A text model's template is given each message's text (`Message.text`: a text model sees no
image); `gfcr.agents.policies.vision.VisionChat` renders image parts as the model's placeholders
and expands them with its processor.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from gfcr.core import Image, Message
from gfcr.errors import ConfigError

_SENTINEL = "\x00gfcr-assistant-turn\x00"
_STAND_IN = [{"role": "user", "content": "."}, {"role": "assistant", "content": _SENTINEL}]


class ChatEncoder:
    """Renders conversations with a Hugging Face tokenizer's chat template and encodes them.

    `tokenizer` is a `transformers` tokenizer with a `chat_template`; `end_ids` the token ids that
    end an assistant turn (default: the tokenizer's eos token).
    """

    def __init__(self, tokenizer: Any, end_ids: Sequence[int] = ()) -> None:
        if not getattr(tokenizer, "chat_template", None):
            raise ConfigError(
                f"tokenizer {getattr(tokenizer, 'name_or_path', '')!r} has no chat template; "
                "use a chat model (or write one with `gfcr tiny-model DIR`)"
            )
        self.tokenizer = tokenizer
        self.end_ids = frozenset(end_ids) or frozenset({tokenizer.eos_token_id})
        closed = self._render(_STAND_IN, add_generation_prompt=False)
        self._closed = closed
        self._turn_end = closed[closed.rindex(_SENTINEL) + len(_SENTINEL) :]  # e.g. "<|im_end|>\n"

    def prompt_ids(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]] = ()) -> list[int]:
        """Ids of `messages` (with `tools` offered) followed by the assistant's generation prompt."""
        text = self._render(
            self._conversation(messages), tools=list(tools) or None, add_generation_prompt=True
        )
        return self.encode(text, [image for m in messages for image in m.images])

    def observation_ids(self, messages: Sequence[Message], after: Sequence[int]) -> list[int]:
        """Ids after a policy turn `after`: the rest of its turn's end, `messages`, the next prompt."""
        turn_end = self._turn_end
        if after and after[-1] in self.end_ids:
            sampled_end = self.decode([after[-1]])
            turn_end = turn_end.removeprefix(sampled_end)
        full = self._render(_STAND_IN + self._conversation(messages), add_generation_prompt=True)
        if not full.startswith(self._closed):
            raise ConfigError(
                "the chat template renders earlier turns differently once more follow; cannot append"
            )
        return self.encode(
            turn_end + full[len(self._closed) :], [image for m in messages for image in m.images]
        )

    def encode(self, text: str, images: Sequence[Image] = ()) -> list[int]:
        """Ids of already-rendered text (special tokens in it are read as such, none are added).
        A text model is never shown `images` (its messages were rendered as text)."""
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def decode(self, ids: Sequence[int]) -> str:
        """Text of `ids`, special tokens kept: the inverse of `encode` on the policy's own output."""
        return self.tokenizer.decode(list(ids), skip_special_tokens=False, clean_up_tokenization_spaces=False)

    def completion_text(self, ids: Sequence[int]) -> str:
        """The text of sampled `ids`, without the end-of-turn token that closed them."""
        return self.decode(ids[:-1] if ids and ids[-1] in self.end_ids else ids)

    def images(self, messages: Sequence[Message]) -> list[Image]:
        """The images of `messages` that their ids show, in order: none for a text model."""
        return []

    def _conversation(self, messages: Sequence[Message]) -> list[dict[str, Any]]:
        """`messages` as the chat template takes them: OpenAI's shape, content as text."""
        return [replace(m, content=m.text).to_openai() if m.images else m.to_openai() for m in messages]

    def _render(self, conversation: list[dict[str, Any]], **kwargs: Any) -> str:
        return self.tokenizer.apply_chat_template(conversation, tokenize=False, **kwargs)


def load_chat_encoder(path: str, tokenizer: Any = None) -> ChatEncoder:
    """The `ChatEncoder` of the model at `path`: its tokenizer (or `tokenizer`, if already loaded)
    and the end-of-turn ids of its generation config (`end_ids`)."""
    from transformers import AutoTokenizer

    tokenizer = tokenizer or AutoTokenizer.from_pretrained(path)
    return ChatEncoder(tokenizer, end_ids(path, tokenizer))


def end_ids(path: str, tokenizer: Any) -> list[int]:
    """The ids that end an assistant turn of the model at `path`: its generation config's eos ids,
    or the tokenizer's eos token if it has none."""
    from transformers import GenerationConfig

    try:
        eos = GenerationConfig.from_pretrained(path).eos_token_id
    except OSError:  # no generation_config.json
        eos = None
    return [eos] if isinstance(eos, int) else list(eos or [tokenizer.eos_token_id])


class ChatTokens:
    """Mixin for policies with a `chat: ChatEncoder`: the `DecodingPolicy` methods, through it."""

    chat: ChatEncoder

    def encode_prompt(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]]) -> list[int]:
        return self.chat.prompt_ids(messages, tools)

    def encode_observation(self, messages: Sequence[Message], after: Sequence[int]) -> list[int]:
        return self.chat.observation_ids(messages, after)

    def decode(self, ids: Sequence[int]) -> str:
        return self.chat.completion_text(ids)
