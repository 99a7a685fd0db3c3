"""Vision task sources (generated, or the user's own images) and the pictures they show.

Generated tasks are addressed `vision/<kind>/<level>/<seed>`: the id alone rebuilds the question,
its answer and its picture, on any machine (the generator is seeded by the id). A task's
metadata holds its `scene` (JSON data that draws the picture at any resolution) or, for a user's
image, the image file's `image` path; `picture(task, size, region)` renders either.

>>> source = generated_tasks(["maze"], levels=[1], num_seeds=5)
>>> len(source), source[3].id, source.get("vision/maze/1/3").metadata["answer_kind"]
(5, 'vision/maze/1/3', 'path')
"""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from PIL import Image as PILImage

from gfcr.core import Image, Task
from gfcr.envs.math.answers.numeric import parse_numbers
from gfcr.envs.tasks import TaskSource
from gfcr.envs.vision.canvas import region_canvas, zoom_factor
from gfcr.envs.vision.kinds import KINDS
from gfcr.envs.vision.puzzle import ANSWER_KINDS
from gfcr.errors import ConfigError, DataError, UnknownNameError

Region = tuple[int, int, int, int]  # x, y, width, height in pixels of the task's picture


def generated_tasks(
    kinds: Sequence[str] | None = None,
    *,
    levels: Sequence[int] | None = None,
    num_seeds: int = 1000,
    first_seed: int = 0,
) -> TaskSource:
    """Tasks of `kinds` (default: all) at `levels` (default: each kind's all; a level a kind lacks is
    skipped), seeds `first_seed` .. `first_seed + num_seeds - 1` of each, kind by kind, level by level."""
    kinds = list(KINDS) if kinds is None else list(kinds)
    for kind in kinds:
        if kind not in KINDS:
            raise UnknownNameError("vision task kind", kind, KINDS)
    if num_seeds < 1 or first_seed < 0:
        raise ConfigError(f"need num_seeds >= 1 and first_seed >= 0, got {num_seeds} and {first_seed}")
    pairs = tuple(
        (kind, level)
        for kind in kinds
        for level in range(1, KINDS[kind].levels + 1)
        if levels is None or level in levels
    )
    if not pairs:
        most = max(KINDS[kind].levels for kind in kinds)
        raise ConfigError(
            f"no task of kinds {kinds} has levels {list(levels or [])}; levels go from 1 to {most}"
        )
    # partials of module-level functions, not closures: the env must pickle
    build = functools.partial(_build, pairs, num_seeds, first_seed)
    index_of = functools.partial(_index_of, pairs, num_seeds, first_seed)
    return TaskSource(f"vision-{'+'.join(kinds)}", len(pairs) * num_seeds, build, index_of)


def generated_task(kind: str, level: int, seed: int) -> Task:
    """The task `vision/<kind>/<level>/<seed>`.

    >>> generated_task("count", 1, 0).gold
    '5'
    """
    puzzle = KINDS[kind].make(level, random.Random(f"vision/{kind}/{level}/{seed}"))
    metadata = {
        "kind": kind,
        "category": f"vision/{kind}",  # a curriculum moves a kind's level (the id's category holds it)
        "level": level,
        "seed": seed,
        "answer_kind": puzzle.answer_kind,
        "choices": list(puzzle.choices),
        "scene": puzzle.scene,
        "image_key": f"{kind}/{level}/{seed}",  # the picture is the scene's: one per task
    }
    return Task(f"vision/{kind}/{level}/{seed}", puzzle.question, puzzle.answer, "vision", metadata)


def _build(pairs: tuple[tuple[str, int], ...], num_seeds: int, first_seed: int, index: int) -> Task:
    kind, level = pairs[index // num_seeds]
    return generated_task(kind, level, first_seed + index % num_seeds)


def _index_of(
    pairs: tuple[tuple[str, int], ...], num_seeds: int, first_seed: int, task_id: str
) -> int | None:
    parts = task_id.split("/")
    if len(parts) != 4 or parts[0] != "vision" or not (parts[2].isdigit() and parts[3].isdigit()):
        return None
    pair, seed = (parts[1], int(parts[2])), int(parts[3]) - first_seed
    if pair not in pairs or not 0 <= seed < num_seeds:
        return None
    return pairs.index(pair) * num_seeds + seed


def file_tasks(path: str | Path) -> TaskSource:
    """The user's image set: a JSONL file, one question a line.

    Each line: `image` (a path, relative to the JSONL file's folder), `question`, `answer`, and
    optionally `choices` (a list of options, one of them the answer), `answer_kind` ("number",
    "choice" or "text"; default: "choice" with choices, "number" if the answer is a number, else
    "text"), `legend` (what `read_legend` returns) and `id` (default: the line's number).
    """
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise DataError(f"cannot read the vision task file {str(path)!r}: {e}") from e
    tasks = [_file_task(path, number, line) for number, line in enumerate(lines, 1) if line.strip()]
    if ids := [task.id for task in tasks]:
        if len(set(ids)) != len(ids):
            twice = next(i for i in ids if ids.count(i) > 1)
            raise DataError(f"{path}: task id {twice!r} appears more than once; give each line a unique 'id'")
    return TaskSource.from_tasks(path.stem, tasks)


def _file_task(path: Path, number: int, line: str) -> Task:
    where = f"{path}, line {number}"
    try:
        row = json.loads(line)
    except json.JSONDecodeError as e:
        raise DataError(f"{where}: not JSON ({e})") from e
    if not isinstance(row, dict) or (missing := [k for k in ("image", "question", "answer") if k not in row]):
        raise DataError(f"{where}: a line needs 'image', 'question' and 'answer'; missing {missing or 'all'}")
    image = (path.parent / str(row["image"])).resolve()
    if not image.is_file():
        raise DataError(
            f"{where}: image {row['image']!r} not found (looked for {image}); "
            "paths are relative to the JSONL file"
        )
    answer, choices = str(row["answer"]), [str(c) for c in row.get("choices") or []]
    default_kind = "choice" if choices else "number" if parse_numbers(answer.replace(" ", "")) else "text"
    answer_kind = row.get("answer_kind", default_kind)
    if answer_kind not in ANSWER_KINDS or answer_kind == "path":
        raise DataError(f"{where}: answer_kind must be 'number', 'choice' or 'text', got {answer_kind!r}")
    if answer_kind == "choice" and answer not in choices:
        raise DataError(f"{where}: answer {answer!r} is not one of the choices {choices}")
    metadata: dict[str, Any] = {
        "answer_kind": answer_kind,
        "choices": choices,
        "image": str(image),
        "image_key": str(image),
    }
    if "legend" in row:
        metadata["legend"] = str(row["legend"])
    task_id = f"{path.stem}/{row.get('id', number)}"
    return Task(task_id, str(row["question"]), answer, path.stem, metadata)


def prompt_image(task: Task, size: int) -> Image:
    """The image the prompt shows: a generated picture drawn `size` pixels square (PNG), a user's
    image file's own bytes."""
    if "image" in task.metadata:
        return Image.from_file(task.metadata["image"])
    return Image.from_pil(picture(task, size)[0])


def picture(
    task: Task, size: int, region: Region | None = None, max_zoom: float = 8.0
) -> tuple[PILImage.Image, float]:
    """`task`'s picture (a generated one drawn `size` pixels square, a user's image as it is), or a
    region of it enlarged up to `max_zoom` times, the longer side to `size` pixels; and the zoom.

    >>> image, zoom = picture(generated_task("chart", 4, 0), 256, (0, 0, 64, 64))
    >>> image.size, zoom
    ((256, 256), 4.0)
    """
    scene = task.metadata.get("scene")
    if scene is not None:
        canvas, zoom = region_canvas(size, region, max_zoom)
        KINDS[task.metadata["kind"]].draw(scene, canvas)
        return canvas.image, zoom
    image = _user_image(task.metadata["image"])
    if region is None:
        return image, 1.0
    x, y, w, h = region
    zoom = zoom_factor(size, w, h, max_zoom)
    crop = image.crop((x, y, x + w, y + h))
    return crop.resize((max(1, round(w * zoom)), max(1, round(h * zoom))), PILImage.Resampling.LANCZOS), zoom


def picture_size(task: Task, size: int) -> tuple[int, int]:
    """(width, height) of `task`'s picture in pixels."""
    return _user_image(task.metadata["image"]).size if "image" in task.metadata else (size, size)


def legend(task: Task) -> str | None:
    """The legend of `task`'s picture as text, None where it has none."""
    if "scene" in task.metadata:
        describe = KINDS[task.metadata["kind"]].legend
        return describe(task.metadata["scene"]) if describe else None
    return task.metadata.get("legend")


@functools.lru_cache(maxsize=8)
def _user_image(path: str) -> PILImage.Image:
    try:
        with PILImage.open(path) as image:
            return image.convert("RGB")
    except OSError as e:
        raise DataError(f"cannot read image {path!r}: {e}") from e
