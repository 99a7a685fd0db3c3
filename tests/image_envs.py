"""An env that shows images, for the tests of images crossing wires and views (`test/Colour-v0`).

Each task shows a square of one colour and asks its name; a wrong answer is shown a second picture
(the square with a border) and may try once more, as is a call of the tool `look` (its result
holds that picture). Its observation space is `text_and_image`, so
resets and steps return `{"text", "image"}`, and every image travels in `info["messages"]`.
Test modules import it by name (tests/ is on `sys.path`; the verifiers venv adds it itself).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import gymnasium as gym
from PIL import Image as PILImage
from PIL import ImageDraw

from gfcr.core import Action, Image, Message, Task, ToolSpec
from gfcr.envs.base import Outcome, TextEnv
from gfcr.envs.spaces import text_and_image
from gfcr.envs.tasks import TaskSource

COLOURS = {"red": (220, 20, 20), "green": (20, 180, 20), "blue": (20, 20, 220)}
SIZE = (24, 16)  # (width, height) of every picture; the observation's pixels are (16, 24, 3)
ENV_ID = "test/Colour-v0"


def square(colour: str, border: bool = False) -> Image:
    """A picture of a `colour` square on white, as PNG (with a black border for the second look)."""
    picture = PILImage.new("RGB", SIZE, "white")
    draw = ImageDraw.Draw(picture)
    draw.rectangle((4, 2, 19, 13), fill=COLOURS[colour], outline="black" if border else None)
    return Image.from_pil(picture)


class ColourEnv(TextEnv):
    """Name the colour of the square: reward 1.0 for the right name, two tries."""

    signal_defaults: ClassVar[dict[str, float | bool]] = {"format_ok": False, "correct": False}

    def __init__(self, render_mode: str | None = None) -> None:
        tasks = [Task(f"colour-{name}", "What colour is the square?", gold=name) for name in COLOURS]
        tools = [ToolSpec.from_function(self.look)]
        super().__init__(
            TaskSource.from_tasks("colour", tasks), tools=tools, max_turns=2, render_mode=render_mode
        )
        self.observation_space = text_and_image(self.max_observation_chars, (SIZE[1], SIZE[0]))

    def prompt_images(self, task: Task) -> Sequence[Image]:
        return (square(str(task.gold)),)

    def look(self) -> list[str | Image]:
        """Look at the square again, more closely."""
        assert self.task is not None
        return ["The square, again:", square(str(self.task.gold), border=True)]

    def respond(self, action: Action) -> Outcome:
        assert self.task is not None
        if action.tool_calls:
            return self.run_tools(action)
        if action.text.strip().lower() == self.task.gold:
            return Outcome("Right.", 1.0, terminated=True, signals={"format_ok": True, "correct": True})
        look = square(str(self.task.gold), border=True)
        return Outcome("No. Look again:", images=(look,), signals={"format_ok": True})

    @classmethod
    def oracle(cls, task: Task, messages: Sequence[Message]) -> str:
        return str(task.gold)


if ENV_ID not in gym.registry:
    gym.register(ENV_ID, entry_point=ColourEnv, disable_env_checker=True)
