"""`hf:` with a vision-language model: images in the prompt ids, pixels in generation, none mixed up."""

from __future__ import annotations

import pytest
from image_envs import square
from PIL import Image as PILImage

from gfcr.agents.policies.hf import HFPolicy
from gfcr.agents.policies.tiny_model import IMAGE_TOKEN
from gfcr.core import Image, Message, Request, SamplingParams

QUESTION = "What colour is the object?"


def _ask(colour: str, seed: int | None = None, temperature: float = 0.0) -> Request:
    sampling = SamplingParams(temperature=temperature, max_tokens=6, seed=seed)
    return Request((Message("user", [QUESTION, square(colour)]),), sampling=sampling)


def test_a_vision_model_sees_images_as_placeholder_runs_and_a_text_model_sees_the_text(vlm, tiny_model):
    assert vlm.sees_images and vlm.processor is not None
    placeholder = vlm.tokenizer.convert_tokens_to_ids(IMAGE_TOKEN)
    message = Message("user", [QUESTION, square("red"), "and this one?", square("blue")])
    assert vlm.encode_prompt([message], ()).count(placeholder) == 2 * 16  # (56 / 14)² each
    text_model = HFPolicy(tiny_model)
    assert not text_model.sees_images
    assert text_model.encode_prompt([message], ()) == text_model.encode_prompt(
        [Message("user", f"{QUESTION}\nand this one?")], ()
    )  # a text model is shown the text, never a placeholder it cannot fill


def test_what_the_model_writes_depends_on_the_image(vlm):
    red, blue = vlm.generate([_ask("red"), _ask("blue")])
    assert red.logprobs != blue.logprobs  # same ids, other pixels: other distributions


def test_a_batch_gives_each_row_its_own_images(vlm):
    """Images are concatenated row by row: a row's completion in a mixed batch equals its completion alone."""
    colours = ["red", "blue", "green", "red"]
    together = vlm.generate([_ask(c) for c in colours] + [Request((Message("user", QUESTION),))])
    for colour, completion in zip(colours, together, strict=False):
        (alone,) = vlm.generate([_ask(colour)])
        assert completion.completion_ids == alone.completion_ids
        assert completion.logprobs == pytest.approx(alone.logprobs, abs=1e-5)


def test_seeded_samples_of_one_question_about_two_images_draw_differently(vlm):
    for seed in range(20):
        red, blue = vlm.generate([_ask("red", seed, 1.0), _ask("blue", seed, 1.0)])
        (again,) = vlm.generate([_ask("red", seed, 1.0)])
        assert again.completion_ids == red.completion_ids  # reproducible
        assert red.completion_ids != blue.completion_ids  # the image is part of the sample's seed


def test_a_policy_never_samples_an_image_placeholder(vlm):
    """A placeholder with no picture behind it would not line up in the trainer's forward pass."""
    placeholder = vlm.tokenizer.convert_tokens_to_ids(IMAGE_TOKEN)

    def favour_the_placeholder(module, inputs, logits):
        logits[..., placeholder] += 50.0  # the likeliest token by far
        return logits

    hook = vlm.model.lm_head.register_forward_hook(favour_the_placeholder)
    try:
        completions = vlm.generate(
            [_ask(colour, seed, 1.0) for seed in range(8) for colour in ("red", "blue")]
        )
    finally:
        hook.remove()
    assert all(placeholder not in c.completion_ids and len(c.completion_ids) == 6 for c in completions)


def test_prompt_ids_are_the_processors_own_expansion(vlm):
    """The chat expands each image slot once per picture size; the ids are what the processor makes
    of the rendered text and all its pictures at once."""
    small = Image.from_pil(PILImage.new("RGB", (20, 30), "red"))
    message = Message("user", ["Compare", square("blue"), "with", small, "and", square("red")])
    text = vlm.chat._render(vlm.chat._conversation([message]), add_generation_prompt=True)
    pictures = [image.to_pil() for image in message.images]
    expected = vlm.processor(text=[text], images=pictures, add_special_tokens=False)["input_ids"][0]
    assert vlm.encode_prompt([message], ()) == list(expected)
    pixels = vlm.processor.image_processor(pictures, return_tensors="pt")["pixel_values"]
    assert vlm.pixel_inputs(message.images)["pixel_values"].equal(pixels)
