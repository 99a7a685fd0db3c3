"""Vision-language models in `hf:`: prompts with image placeholders, and the pixels behind them.

A vision-language model (a `transformers` image-text-to-text model: LLaVA, Qwen2-VL, …) reads
token ids in which each image stands as a run of placeholder tokens, and its image tensors beside
them (`pixel_values`, and for some families grid metadata such as `image_grid_thw`). Both come
from the model's processor: `VisionChat` renders a conversation with its chat template, image
parts as the template's image slots, and lets the processor expand each slot to its run for that
image; its `pixel_inputs` gives the tensors of a list of images, in order. The images of a batch are
concatenated in the order of their placeholders across the batch's rows (row by row), which is
the order these models scatter image features into the sequence, so generation and the trainer's
forward pass feed the same pixels to the same tokens.

Supported: models whose processor expands placeholders from the text and images alone and whose
forward pass takes the concatenated image tensors (LLaVA, Qwen2-VL and Qwen2.5-VL families; the
tests use `gfcr tiny-model --vision`, a LLaVA). Families that nest images per row (Idefics3,
SmolVLM) are not.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from gfcr.agents.policies.chat import ChatEncoder
from gfcr.core import Image, Message
from gfcr.errors import ConfigError

PIXEL_CACHE = 256  # images whose tensors a chat keeps (a 384 x 384 picture's are 1.7 MB)


def is_vision_model(path: Path) -> bool:
    """Whether the model folder at `path` holds a vision-language model (its config has a
    `vision_config`)."""
    import json

    config = path / "config.json"
    return config.is_file() and "vision_config" in json.loads(config.read_text(encoding="utf-8"))


class VisionChat(ChatEncoder):
    """A `ChatEncoder` for a vision-language model: image parts become the template's image
    slots, and each slot is expanded to its image's placeholder run, as the processor expands it.

    `processor` is the model's `transformers` processor (its `tokenizer` renders the template).
    """

    def __init__(self, processor: Any, end_ids: Sequence[int] = ()) -> None:
        super().__init__(processor.tokenizer, end_ids)
        self.processor = processor
        # the placeholder tokens (image, video): a policy must never sample one, or its ids would hold
        # a placeholder with no picture behind it and the trainer's forward pass would not line up
        tokens = [getattr(processor, name, None) for name in ("image_token", "video_token")]
        self.placeholder_ids = sorted({self.tokenizer.convert_tokens_to_ids(t) for t in tokens if t})
        self.image_id = self.tokenizer.convert_tokens_to_ids(processor.image_token)
        self._runs: dict[tuple[int, int], list[int]] = {}  # an image size's placeholder run

    def encode(self, text: str, images: Sequence[Image] = ()) -> list[int]:
        """Ids of rendered `text` whose image slots (the processor's image token, one per image)
        are each expanded to their image's placeholder run, as the processor expands them."""
        ids = super().encode(text)
        if not images:
            return ids
        slots = [k for k, token in enumerate(ids) if token == self.image_id]
        if len(slots) != len(images):
            raise ConfigError(
                f"the chat template rendered {len(slots)} image slots for {len(images)} images; "
                "a vision-language model's template must render each image part as its image token"
            )
        out, start = [], 0
        for slot, image in zip(slots, images, strict=True):
            out += ids[start:slot] + self._run(image)
            start = slot + 1
        return out + ids[start:]

    def images(self, messages: Sequence[Message]) -> list[Image]:
        return [image for m in messages for image in m.images]

    def pixel_inputs(self, images: Sequence[Image]) -> dict[str, Any]:
        """The model's image tensors for `images`, in order ({} for none): what its forward pass
        takes beside the ids (`pixel_values`, and e.g. `image_grid_thw`), as torch tensors: each
        image's own (cached by its hash), concatenated along the first dimension."""
        if not images:
            return {}
        import torch

        each = [self._pixels(image) for image in images]
        return {name: torch.cat([tensors[name] for tensors in each]) for name in each[0]}

    def _run(self, image: Image) -> list[int]:
        """The placeholder run of `image`: its length depends on the image's size alone, so the
        processor expands one slot once per size."""
        if image.size not in self._runs:
            probe = self.processor(
                text=[self.processor.image_token], images=[image.to_pil()], add_special_tokens=False
            )
            self._runs[image.size] = list(probe["input_ids"][0])
        return self._runs[image.size]

    @functools.lru_cache(maxsize=PIXEL_CACHE)  # noqa: B019  (one chat per policy, kept for its life)
    def _pixels(self, image: Image) -> dict[str, Any]:
        """One image's tensors: a group's samples and an episode's turns show the same images again."""
        return dict(self.processor.image_processor([image.to_pil()], return_tensors="pt"))

    def _conversation(self, messages: Sequence[Message]) -> list[dict[str, Any]]:
        return [_with_image_slots(m) for m in messages]


def _with_image_slots(message: Message) -> dict[str, Any]:
    """`message` in OpenAI's shape with each image as `{"type": "image"}` (the slot chat templates
    of vision-language models render; the pixels go to the processor, not into the text)."""
    if not message.images:
        return message.to_openai()
    out = replace(message, content=message.text).to_openai()
    out["content"] = [
        {"type": "text", "text": part} if isinstance(part, str) else {"type": "image"}
        for part in message.content
    ]
    return out
