"""A `TextEnv` that shows images: the prompt's and each step's images reach `info["messages"]` as
image parts, and a `text_and_image` observation holds the text and the latest image's pixels."""

from __future__ import annotations

from gymnasium.utils.env_checker import check_env
from PIL import Image as PILImage

from gfcr.core import Action, Image, Task
from gfcr.envs.base import Outcome, TextEnv
from gfcr.envs.spaces import text_and_image
from gfcr.envs.tasks import TaskSource

SHAPE = (6, 8)


def square(colour: str, size: tuple[int, int] = (8, 6)) -> Image:
    return Image.from_pil(PILImage.new("RGB", size, colour))


class ColourEnv(TextEnv):
    """Shows a red square with the prompt; a step shows a blue one of another size, or nothing."""

    signal_defaults = {"format_ok": False}

    def __init__(self) -> None:
        super().__init__(TaskSource.from_tasks("c", [Task("c/0", "Name the colour.", "red")]), max_turns=3)
        self.observation_space = text_and_image(self.max_observation_chars, SHAPE)

    def prompt_images(self, task: Task) -> list[Image]:
        return [square("red")]

    def respond(self, action: Action) -> Outcome:
        if action.text == "look":
            return Outcome(
                "Here it is again.", signals={"format_ok": True}, images=(square("blue", (16, 12)),)
            )
        return Outcome("Nothing to see.", signals={"format_ok": True})


def test_images_reach_the_messages_and_the_observation():
    env = ColourEnv()
    obs, info = env.reset(seed=0)
    assert obs["text"] == "Name the colour." and info["messages"][-1].images == (square("red"),)
    assert obs["image"].shape == (*SHAPE, 3) and obs["image"][0, 0].tolist() == [255, 0, 0]
    obs, *_, info = env.step("look")
    assert info["messages"][0].text == obs["text"] == "Here it is again."
    assert info["messages"][0].images == (square("blue", (16, 12)),)  # at its own size in the message
    assert obs["image"].shape == (*SHAPE, 3) and obs["image"][0, 0].tolist() == [0, 0, 255]  # resized
    obs, *_ = env.step("anything")
    assert not obs["image"].any()  # a step that showed no image


def test_gymnasium_accepts_the_env():
    check_env(ColourEnv(), skip_render_check=True)
