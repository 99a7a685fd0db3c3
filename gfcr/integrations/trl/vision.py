"""`VisionGRPOTrainer`: TRL's `GRPOTrainer` whose forward passes see the images of gfcr's rollouts.

A vision-language model (LLaVA, Qwen2-VL, …) reads each image as a run of placeholder tokens in
its ids plus the image's pixel tensors beside them. gfcr's `rollout_func` gives each completion's
images (`gfcr_images`, in placeholder order), but TRL 1.16's `GRPOTrainer` takes pixels only from
the dataset's `image`/`images` columns, re-rendered with its processor from the prompt text: on
the rollout path it runs every forward pass (old, reference and loss logprobs) without pixels, so
the model would train on its placeholder embeddings with no picture behind them. This trainer
feeds the rollout's images to all of them:

- `_generate` turns the batch's `gfcr_images` into the model's image tensors (`VisionChat.pixel_inputs`,
  the processor's image processor, as `hf:` and `gfcr train` give them) and `num_images` per row;
- `_get_per_token_logps_and_entropies` gives them to the old and reference logprobs TRL scores
  while it builds the batch (where TRL passes no pixels);
- `_generate_and_score_completions` puts them in the batch, where TRL's own loss reads them
  (`pixel_values`, `num_images`) and TRL's shuffle and split across gradient accumulation steps
  keep each row's pixels with it (`split_pixel_values_by_grid`).

Text batches (no `gfcr_images`) train exactly as under `GRPOTrainer`.

Importing this module imports TRL (`pip install -e '.[trl]'`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from trl import GRPOTrainer

from gfcr.agents.policies.vision import VisionChat
from gfcr.core import Image
from gfcr.errors import ConfigError


class VisionGRPOTrainer(GRPOTrainer):
    """A `GRPOTrainer` that trains a vision-language model on the images of gfcr's episodes: use it
    with `rollout_func(env)` whose env shows images (e.g. `gfcr/Vision-v0`) and the model's
    processor as `processing_class`, with the same arguments as `GRPOTrainer`.

        from transformers import AutoProcessor
        from gfcr.integrations import trl as gfcr_trl

        trainer = gfcr_trl.VisionGRPOTrainer(
            model=path,
            processing_class=AutoProcessor.from_pretrained(path),
            args=GRPOConfig(output_dir="out", num_generations=4),
            train_dataset=gfcr_trl.dataset("gfcr/Vision-v0", n=64),
            rollout_func=gfcr_trl.rollout_func("gfcr/Vision-v0"),
            reward_funcs=gfcr_trl.env_reward,
        )

    Every forward pass TRL makes (the loss's, old logprobs when generation and optimizer steps are
    misaligned or vLLM's importance sampling is on, the reference model's when `beta` > 0, with or
    without a PEFT adapter) gets each row's own pixels. Refused with a `ConfigError`: a processor
    whose image tensors are not one `pixel_values` row per image (LLaVA's layout, which TRL's
    shuffle keeps with the rows; Qwen2-VL's `image_grid_thw` also needs `mm_token_type_ids`, which
    gfcr's policies do not give yet).
    """

    _gfcr_pixels: dict[str, Any] | None = None  # the batch being scored: pixel_values and num_images
    _gfcr_chat: VisionChat | None = None

    def _generate(self, prompts: list[Any]) -> tuple[Any, ...]:
        out = super()._generate(prompts)
        # TRL 1.16: (prompt_ids, completion_ids, tool_mask, completions, logprobs, extra_fields, ...)
        extra_fields = out[5]  # the rollout_func's fields beyond ids and logprobs
        images = extra_fields.get("gfcr_images")
        self._gfcr_pixels = None if images is None else self._pixels(images)
        return out

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        try:
            output = super()._generate_and_score_completions(inputs)
            if self._gfcr_pixels is not None:
                output |= self._gfcr_pixels  # TRL's loss reads them, and shuffles them with their rows
        finally:
            self._gfcr_pixels = None
        return output

    def _get_per_token_logps_and_entropies(  # type: ignore[override]
        self,
        model: Any,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        logits_to_keep: int,
        batch_size: int | None = None,
        **kwargs: Any,
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        if kwargs.get("pixel_values") is None and self._gfcr_pixels is not None:
            kwargs |= self._gfcr_pixels  # old or reference logprobs, scored while the batch is built
        score = super()._get_per_token_logps_and_entropies
        num_images = kwargs.get("num_images")
        size = batch_size or input_ids.size(0)
        starts = range(0, input_ids.size(0), size)
        if num_images is None or all(sum(num_images[s : s + size]) for s in starts):
            return score(model, input_ids, attention_mask, logits_to_keep, batch_size, **kwargs)
        # a chunk of rows without images: a LLaVA's forward pass refuses an empty pixel tensor, so
        # each chunk is scored with its own rows' pixels, or none
        parts = [
            score(
                model,
                input_ids[s : s + size],
                attention_mask[s : s + size],
                logits_to_keep,
                **(kwargs | rows_pixels(kwargs, s, s + size)),
            )
            for s in starts
        ]
        entropies = [p[1] for p in parts if p[1] is not None]
        aux_losses = [p[2] for p in parts if p[2] is not None]
        return (
            torch.cat([p[0] for p in parts]),
            torch.cat(entropies) if entropies else None,
            torch.stack(aux_losses).mean() if aux_losses else None,
        )

    def _pixels(self, images: Sequence[Sequence[Image]]) -> dict[str, Any]:
        """The batch's image tensors (all rows' images, row by row, in placeholder order: the order
        the model scatters them into the ids) and `num_images`, each row's count."""
        if self._gfcr_chat is None:
            if getattr(self.processing_class, "image_processor", None) is None:
                raise ConfigError(
                    f"the rollout gives images (gfcr_images) but processing_class is a "
                    f"{type(self.processing_class).__name__}; pass the model's processor "
                    "(processing_class=AutoProcessor.from_pretrained(path))"
                )
            self._gfcr_chat = VisionChat(self.processing_class)
        flat = [image for row in images for image in row]
        pixels = self._gfcr_chat.pixel_inputs(flat)
        if set(pixels) != {"pixel_values"} or pixels["pixel_values"].size(0) != len(flat):
            shapes = {name: tuple(t.shape) for name, t in pixels.items()}
            raise ConfigError(
                f"{type(self.processing_class).__name__} gives {len(flat)} images as {shapes}; "
                "VisionGRPOTrainer takes one pixel_values row per image (a LLaVA), the layout whose rows "
                "TRL keeps with their images: train a LLaVA-family model"
            )
        return {
            "pixel_values": pixels["pixel_values"].to(self.accelerator.device),
            "num_images": [len(row) for row in images],
        }


def rows_pixels(kwargs: dict[str, Any], start: int, end: int) -> dict[str, Any]:
    """`pixel_values` (one row per image) and `num_images` of a batch's rows `start:end`; both None
    where those rows show no image.

    >>> pixels = {"pixel_values": torch.arange(3), "num_images": [1, 0, 2]}
    >>> rows_pixels(pixels, 1, 3), rows_pixels(pixels, 1, 2)
    ({'pixel_values': tensor([1, 2]), 'num_images': [0, 2]}, {'pixel_values': None, 'num_images': None})
    """
    counts = kwargs["num_images"]
    first, last = sum(counts[:start]), sum(counts[:end])
    if first == last:
        return {"pixel_values": None, "num_images": None}
    return {"pixel_values": kwargs["pixel_values"][first:last], "num_images": counts[start:end]}
