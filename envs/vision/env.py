"""`gfcr/Vision-v0`: answer a question about an image, with tools to look closer, in `\\boxed{}`.

Tasks are generated (`dataset="generated"`, the default: counting, attributes, spatial
relations, charts, geometry diagrams and mazes, each with difficulty levels, see
`gfcr.envs.vision.kinds`) or the user's own images (`dataset="jsonl", path=...`, see
`gfcr.envs.vision.tasks.file_tasks`). The prompt is one user message holding the question and the
image; the observation is `{"text": ..., "image": (H, W, 3) uint8}` (`text_and_image`).

Tools (all by default; `tools=()` makes it single-turn): `zoom(x, y, w, h)` shows a region of the
image (pixels of the prompt's image) at up to `max_zoom` times the size, re-rendered sharp for a
generated picture and resampled for a user's image, as an image part of the tool's message;
`read_legend()` gives a chart's legend as text. The first reply without a tool call is the
answer. Reward 1.0 when it is correct (see `gfcr.envs.vision.verifier`), 0.0 otherwise.

Signals: `format_ok`, `answer_extracted`, `correct`, `path_valid` (a maze answer crosses no
wall), `zoomed` and `legend_read` (the episode used the tool so far).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from gfcr.core import Action, Image, Message, Task, ToolSpec
from gfcr.envs.base import DEFAULT_MAX_ACTION_CHARS, DEFAULT_MAX_OBSERVATION_CHARS, Outcome, TextEnv
from gfcr.envs.budget import DEFAULT_MAX_TOOL_CALLS, DEFAULT_STEP_TIME_S
from gfcr.envs.spaces import text_and_image
from gfcr.envs.tasks import TaskSource
from gfcr.envs.vision.tasks import file_tasks, generated_tasks, legend, picture, picture_size, prompt_image
from gfcr.envs.vision.verifier import VisionVerifier
from gfcr.errors import ConfigError, ToolError, UnknownNameError

TOOL_NAMES = ("zoom", "read_legend")
MIN_REGION = 4  # pixels: a zoom region smaller than this (after clipping to the image) is refused
ZOOM_PARAMETERS = {
    "type": "object",
    "properties": {
        "x": {"type": "integer", "description": "Left edge of the region, in pixels of the image."},
        "y": {"type": "integer", "description": "Top edge of the region, in pixels of the image."},
        "w": {"type": "integer", "description": "Width of the region in pixels."},
        "h": {"type": "integer", "description": "Height of the region in pixels."},
    },
    "required": ["x", "y", "w", "h"],
}


class VisionEnv(TextEnv):
    """Visual questions with exact answers, checked offline.

    >>> env = VisionEnv(kinds="count", levels=[1])
    >>> obs, info = env.reset(options={"task_id": "vision/count/1/0"})
    >>> obs["text"].splitlines()[0], obs["image"].shape, len(info["messages"][-1].images)
    ('How many squares are in the image?', (256, 256, 3), 1)
    >>> env.step("I count \\\\boxed{5}.")[1:3]
    (1.0, True)
    """

    signal_defaults: ClassVar[dict[str, float | bool]] = {
        "format_ok": False,
        "answer_extracted": False,
        "correct": False,
        "path_valid": False,
        "zoomed": False,
        "legend_read": False,
    }

    def __init__(
        self,
        dataset: Literal["generated", "jsonl"] = "generated",
        *,
        path: str | None = None,
        kinds: str | Sequence[str] | None = None,
        levels: int | Sequence[int] | None = None,
        num_seeds: int = 1000,
        first_seed: int = 0,
        image_size: int = 256,
        tools: str | Sequence[str] = TOOL_NAMES,
        max_zoom: float = 8.0,
        max_turns: int | None = None,
        system_prompt: str | None = None,
        max_action_chars: int = DEFAULT_MAX_ACTION_CHARS,
        max_observation_chars: int = DEFAULT_MAX_OBSERVATION_CHARS,
        max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS,
        step_time_s: float = DEFAULT_STEP_TIME_S,
        render_mode: str | None = None,
        tasks: TaskSource | None = None,
    ) -> None:
        if not 32 <= image_size <= 2048:
            raise ConfigError(f"image_size must be between 32 and 2048 pixels, got {image_size}")
        if max_zoom < 1:
            raise ConfigError(f"max_zoom must be >= 1, got {max_zoom}")
        tools = [tools] if isinstance(tools, str) else list(tools)
        if unknown := [name for name in tools if name not in TOOL_NAMES]:
            raise UnknownNameError(
                "vision tool", unknown[0], TOOL_NAMES, hint='e.g. tools=["zoom"], or tools=()'
            )
        if tasks is None:
            tasks = _task_source(dataset, path, kinds, levels, num_seeds, first_seed)
        specs = {
            "zoom": ToolSpec(
                "zoom", _ZOOM_HELP.format(max_zoom=f"{max_zoom:g}"), ZOOM_PARAMETERS, self._zoom
            ),
            "read_legend": ToolSpec(
                "read_legend", "The chart's legend, as text.", function=self._read_legend
            ),
        }
        super().__init__(
            tasks,
            tools=[specs[name] for name in tools],
            system_prompt=system_prompt,
            max_turns=max_turns or (4 if tools else 1),
            max_action_chars=max_action_chars,
            max_observation_chars=max_observation_chars,
            max_tool_calls=max_tool_calls,
            step_time_s=step_time_s,
            render_mode=render_mode,
        )
        self.verifier = VisionVerifier()
        self.image_size = image_size
        self.max_zoom = max_zoom
        # {"text", "image"} observations: TextEnv's base declares text ones (gym.Env[str, str])
        self.observation_space = text_and_image(max_observation_chars, (image_size, image_size))  # type: ignore[assignment]
        self.zoomed = self.legend_read = False
        self._shown: tuple[str, Image] | None = None  # the last task's prompt image, by task id

    def render_prompt(self, task: Task) -> str:
        lines = [task.prompt]
        if choices := task.metadata["choices"]:
            options = " ".join(f"({chr(ord('A') + i)}) {choice}" for i, choice in enumerate(choices))
            lines.append(f"Options: {options}")
        rule = "an option or its letter" if choices else "your answer"
        lines.append(f"Put {rule} within \\boxed{{}}.")
        if self.tools:
            width, height = picture_size(task, self.image_size)
            calls = " and ".join(
                f"{name}({', '.join(_arguments(spec))})" for name, spec in self.tools.items()
            )
            lines.append(
                f"The image is {width}x{height} pixels. You may call {calls} before answering "
                "(zoom shows a region larger); your reply without a tool call is your final answer."
            )
        return "\n".join(lines)

    def prompt_images(self, task: Task) -> Sequence[Image]:
        if self._shown is None or self._shown[0] != task.id:
            self._shown = (task.id, prompt_image(task, self.image_size))
        return (self._shown[1],)

    def begin_episode(self, task: Task) -> None:
        self.zoomed = self.legend_read = False

    def episode_signals(self) -> dict[str, float | bool]:
        return {"zoomed": self.zoomed, "legend_read": self.legend_read}

    def respond(self, action: Action) -> Outcome:
        if action.tool_calls:
            return self.run_tools(action)
        assert self.task is not None  # step() checks reset() was called
        verdict, note = self.verifier.judge(self.task, action.text)
        return Outcome(note, verdict.reward, terminated=True, signals=verdict.signals)

    @classmethod
    def oracle(cls, task: Task, messages: Sequence[Message]) -> str:
        return f"The answer is \\boxed{{{task.gold}}}."

    def _zoom(self, x: int, y: int, w: int, h: int) -> list[Any]:
        assert self.task is not None  # tools run only inside step(), after reset()
        if w < 1 or h < 1:
            raise ToolError(f"zoom() needs a region at least 1 pixel wide and high, got w={w}, h={h}")
        width, height = picture_size(self.task, self.image_size)
        left, top, right, bottom = max(0, x), max(0, y), min(width, x + w), min(height, y + h)
        if right - left < MIN_REGION or bottom - top < MIN_REGION:
            raise ToolError(
                f"the region x={x}, y={y}, w={w}, h={h} has less than {MIN_REGION}x{MIN_REGION} pixels "
                f"inside the {width}x{height} image; "
                f"give 0 <= x < x + w <= {width} and 0 <= y < y + h <= {height}"
            )
        region = (left, top, right - left, bottom - top)
        image, zoom = picture(self.task, self.image_size, region, self.max_zoom)
        self.zoomed = True
        text = f"The region x={left}..{right}, y={top}..{bottom} of the image, {zoom:.3g}x larger:"
        return [text, Image.from_pil(image)]

    def _read_legend(self) -> str:
        assert self.task is not None  # tools run only inside step(), after reset()
        text = legend(self.task)
        if text is None:
            raise ToolError("this image has no legend")
        self.legend_read = True
        return text


_ZOOM_HELP = (
    "Look closer: the region with top-left corner (x, y), w pixels wide and h high (pixels of the "
    "image), shown again larger (its longer side as wide as the image, up to {max_zoom}x)."
)


def _arguments(spec: ToolSpec) -> list[str]:
    return list(spec.parameters.get("properties", {}))


def _task_source(
    dataset: str,
    path: str | None,
    kinds: str | Sequence[str] | None,
    levels: int | Sequence[int] | None,
    num_seeds: int,
    first_seed: int,
) -> TaskSource:
    if dataset == "jsonl":
        if path is None:
            raise ConfigError(
                'dataset="jsonl" needs path="questions.jsonl" (a JSONL file of your images\' questions)'
            )
        return file_tasks(path)
    if dataset != "generated":
        raise UnknownNameError("vision dataset", dataset, ("generated", "jsonl"))
    if path is not None:
        raise ConfigError(f'path={path!r} is read with dataset="jsonl"; the generated tasks take no path')
    kinds = [kinds] if isinstance(kinds, str) else kinds
    levels = [levels] if isinstance(levels, int) else levels
    return generated_tasks(kinds, levels=levels, num_seeds=num_seeds, first_seed=first_seed)
