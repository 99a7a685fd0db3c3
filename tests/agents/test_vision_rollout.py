"""A multi-turn episode with images, played by a vision-language policy: token data that trains."""

from __future__ import annotations

import pytest
from PIL import Image as PILImage

from gfcr.agents.policies.tiny_model import IMAGE_TOKEN
from gfcr.agents.runner.rollout import rollout
from gfcr.core import Action, Image, SamplingParams, Task, read_jsonl, write_jsonl
from gfcr.envs.base import Outcome, TextEnv
from gfcr.envs.spaces import text_and_image
from gfcr.envs.tasks import TaskSource
from gfcr.trainers.batching import sample_from_trajectory
from gfcr.trainers.config import LossConfig
from gfcr.trainers.update import UpdateSettings, recompute_logprobs


def _square(colour: str, size: int) -> Image:
    return Image.from_pil(PILImage.new("RGB", (size, size), colour))


class LookTwice(TextEnv):
    """A red square with the prompt; every turn answers with a zoomed square of another colour."""

    signal_defaults = {"format_ok": False}
    colours = ("blue", "green", "yellow")

    def __init__(self) -> None:
        super().__init__(TaskSource.from_tasks("l", [Task("l/0", "Which colours?", "red")]), max_turns=3)
        self.observation_space = text_and_image(self.max_observation_chars, (32, 32))

    def prompt_images(self, task: Task) -> list[Image]:
        return [_square("red", 40)]

    def respond(self, action: Action) -> Outcome:
        image = _square(self.colours[self.turn - 1], 24 + 8 * self.turn)
        return Outcome(
            "Zoomed in.", reward=float(self.turn == 3), signals={"format_ok": True}, images=(image,)
        )


def test_the_token_data_keeps_every_image_in_placeholder_order_and_trains_on_them(vlm, tmp_path):
    sampling = SamplingParams(max_tokens=6, seed=0)
    trajectory = rollout(LookTwice(), vlm, env_id="look-twice", seed=0, sampling=sampling)
    tokens = trajectory.tokens
    assert trajectory.status == "ok" and len(trajectory.steps) == 3 and tokens is not None
    shown = [image for m in trajectory.messages for image in m.images]
    # the last observation's image is never encoded: no turn follows it
    assert (
        tokens.images == shown[:-1] == [_square(c, s) for c, s in (("red", 40), ("blue", 32), ("green", 40))]
    )
    placeholder = vlm.tokenizer.convert_tokens_to_ids(IMAGE_TOKEN)
    assert (tokens.prompt_ids + tokens.completion_ids).count(placeholder) == 16 * len(tokens.images)
    assert trajectory.prompt == "Which colours?" and trajectory.steps[0].observation == "Zoomed in."

    write_jsonl([trajectory], tmp_path / "episodes.jsonl")
    (back,) = read_jsonl(tmp_path / "episodes.jsonl")
    sample = sample_from_trajectory(back, 1.0)  # trained from the file, images read back by hash
    assert sample.images == tuple(tokens.images)
    settings = UpdateSettings(LossConfig(), pad_id=vlm.pad_id, pixels=vlm.pixel_inputs)
    (recomputed,) = recompute_logprobs(vlm.model, [sample], settings)
    sampled = [lp for lp, m in zip(sample.old_logprobs, sample.loss_mask, strict=True) if m]
    assert [lp for lp, m in zip(recomputed, sample.loss_mask, strict=True) if m] == pytest.approx(
        sampled, abs=1e-4
    )
