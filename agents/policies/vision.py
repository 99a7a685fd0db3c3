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

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from gfcr.agents.policies.chat import ChatEncoder
from gfcr.core import Image, Message


def is_vision_model(path: Path) -> bool:
    """Whether the model folder at `path` holds a vision-language model (its config has a
    `vision_config`)."""
    import json

    config = path / "config.json"
    return config.is_file() and "vision_config" in json.loads(config.read_text(encoding="utf-8"))


class VisionChat(ChatEncoder):
    """A `ChatEncoder` for a vision-language model: image parts become the template's image
    slots, and the processor expands each slot to its image's placeholder run.

    `processor` is the model's `transformers` processor (its `tokenizer` renders the template).
    """

    def __init__(self, processor: Any, end_ids: Sequence[int] = ()) -> None:
        super().__init__(processor.tokenizer, end_ids)
        self.processor = processor
        # the placeholder tokens (image, video): a policy must never sample one, or its ids would hold
        # a placeholder with no picture behind it and the trainer's forward pass would not line up
        tokens = [getattr(processor, name, None) for name in ("image_token", "video_token")]
        self.placeholder_ids = sorted({self.tokenizer.convert_tokens_to_ids(t) for t in tokens if t})

    def encode(self, text: str, images: Sequence[Image] = ()) -> list[int]:
        if not images:
            return super().encode(text)
        inputs = self.processor(
            text=[text], images=[image.to_pil() for image in images], add_special_tokens=False
        )
        return list(inputs["input_ids"][0])

    def images(self, messages: Sequence[Message]) -> list[Image]:
        return [image for m in messages for image in m.images]

    def pixel_inputs(self, images: Sequence[Image]) -> dict[str, Any]:
        """The model's image tensors for `images`, in order ({} for none): what its forward pass
        takes beside the ids (`pixel_values`, and e.g. `image_grid_thw`), as torch tensors."""
        if not images:
            return {}
        return dict(self.processor.image_processor([image.to_pil() for image in images], return_tensors="pt"))

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
