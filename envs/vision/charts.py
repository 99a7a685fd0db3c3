"""Charts: the `chart` kind, bar charts and line plots with a question about what they show.

Levels: 1, the value of a bar, printed above it in a large font; 2, the tallest or shortest of six
bars (no values printed; the answer leads the next bar by at least a tenth of the largest value);
3, which series of a line plot has the largest or smallest value at some x (a legend names the
series by colour, in a small font: `read_legend` gives it as text; the answer leads by at least
6 units); 4, the value of one of ten bars, printed in a small font (`zoom` helps).

>>> import random
>>> puzzle = chart(1, random.Random(0))
>>> puzzle.question, puzzle.answer
('What is the value of the bar labelled plums?', '10')
"""

from __future__ import annotations

import math
import random
from typing import Any

from gfcr.envs.vision.canvas import Canvas
from gfcr.envs.vision.puzzle import Puzzle

FRUITS = ("apples", "pears", "plums", "figs", "kiwis", "limes", "dates", "grapes", "lemons", "mangos")
SERIES_COLOURS = ("red", "blue", "green", "orange", "purple")
LEFT, RIGHT, TOP, BOTTOM = 36.0, 246.0, 22.0, 222.0  # the plot area, in logical units
AXIS_FONT, LEGEND_FONT = 10.0, 8.0
VALUE_FONT = {1: 13.0, 4: 7.0}  # printed bar values by level
MAX_TRIES = 200


def chart(level: int, rng: random.Random) -> Puzzle:
    """One chart question of `level` (1..4, see the module docstring)."""
    if level in (1, 4):
        labels = rng.sample(FRUITS, 4) if level == 1 else [chr(ord("A") + i) for i in range(10)]
        values = [rng.randint(1, 20) if level == 1 else rng.randint(10, 99) for _ in labels]
        index = rng.randrange(len(labels))
        scene = _bars(labels, values, VALUE_FONT[level])
        question = f"What is the value of the bar labelled {labels[index]}?"
        return Puzzle(question, str(values[index]), "number", scene)
    for _ in range(MAX_TRIES):
        puzzle = _tallest(rng) if level == 2 else _line_plot(rng)
        if puzzle is not None:
            return puzzle
    raise RuntimeError("no clear chart found")  # pragma: no cover - MAX_TRIES is never reached


def _tallest(rng: random.Random) -> Puzzle | None:
    labels = rng.sample(FRUITS, 6)
    values = [rng.randint(5, 50) for _ in labels]
    largest = rng.random() < 0.5
    ranked = sorted(values, reverse=largest)
    if abs(ranked[0] - ranked[1]) < max(values) / 10:
        return None
    answer = labels[values.index(ranked[0])]
    question = f"Which bar is the {'tallest' if largest else 'shortest'}?"
    return Puzzle(question, answer, "choice", _bars(labels, values, 0.0), tuple(labels))


def _line_plot(rng: random.Random) -> Puzzle | None:
    names = rng.sample(FRUITS, rng.randint(2, 3))
    colours = rng.sample(SERIES_COLOURS, len(names))
    series: list[dict[str, Any]] = [
        {"name": name, "colour": colour, "values": [rng.randint(2, 40) for _ in range(6)]}
        for name, colour in zip(names, colours, strict=True)
    ]
    x = rng.randint(1, 6)
    largest = rng.random() < 0.5
    ranked = sorted(series, key=lambda s: s["values"][x - 1], reverse=largest)
    if abs(ranked[0]["values"][x - 1] - ranked[1]["values"][x - 1]) < 6:
        return None
    ymax, step = _axis(max(v for s in series for v in s["values"]))
    scene = {"type": "line", "xs": list(range(1, 7)), "series": series, "ymax": ymax, "step": step}
    word = "largest" if largest else "smallest"
    question = f"At x = {x}, which series has the {word} value?"
    return Puzzle(question, ranked[0]["name"], "choice", scene, tuple(names))


def _bars(labels: list[str], values: list[int], value_font: float) -> dict[str, Any]:
    ymax, step = _axis(max(values))
    return {
        "type": "bar",
        "labels": labels,
        "values": values,
        "ymax": ymax,
        "step": step,
        "value_font": value_font,
    }


def _axis(largest: int) -> tuple[int, int]:
    """A y axis for values up to `largest`: (top, tick step), with room above the tallest value.

    >>> _axis(20), _axis(99)
    ((25, 5), (120, 20))
    """
    step = 5 if largest <= 30 else 10 if largest <= 60 else 20
    return step * math.ceil(largest * 1.15 / step), step


def draw(scene: dict[str, Any], canvas: Canvas) -> None:
    _draw_axes(scene, canvas)
    if scene["type"] == "bar":
        _draw_bars(scene, canvas)
    else:
        _draw_lines(scene, canvas)


def legend(scene: dict[str, Any]) -> str:
    """The chart's legend as text (what `read_legend` returns)."""
    if scene["type"] == "bar":
        return "This chart has no legend: each bar is labelled below it."
    return "Legend: " + "; ".join(f"{s['colour']} line = {s['name']}" for s in scene["series"])


def _y(scene: dict[str, Any], value: float) -> float:
    return BOTTOM - (BOTTOM - TOP) * value / scene["ymax"]


def _draw_axes(scene: dict[str, Any], canvas: Canvas) -> None:
    for tick in range(0, scene["ymax"] + 1, scene["step"]):
        y = _y(scene, tick)
        canvas.line([(LEFT, y), (RIGHT, y)], width=0.5, fill=(220, 220, 220))
        canvas.text(LEFT - 4, y, str(tick), AXIS_FONT, anchor="rm")
    canvas.line([(LEFT, TOP), (LEFT, BOTTOM), (RIGHT, BOTTOM)], width=1.5)


def _draw_bars(scene: dict[str, Any], canvas: Canvas) -> None:
    slot = (RIGHT - LEFT) / len(scene["labels"])
    for i, (label, value) in enumerate(zip(scene["labels"], scene["values"], strict=True)):
        x0, x1 = LEFT + i * slot + slot * 0.15, LEFT + (i + 1) * slot - slot * 0.15
        top = _y(scene, value)
        canvas.rectangle(x0, top, x1, BOTTOM, (70, 120, 190))
        canvas.text((x0 + x1) / 2, BOTTOM + 9, label, AXIS_FONT)
        if scene["value_font"]:
            canvas.text((x0 + x1) / 2, top - 2, str(value), scene["value_font"], anchor="md")


def _draw_lines(scene: dict[str, Any], canvas: Canvas) -> None:
    xs = scene["xs"]
    slot = (RIGHT - LEFT) / len(xs)

    def px(x: int) -> float:
        return LEFT + (x - xs[0] + 0.5) * slot

    for x in xs:
        canvas.text(px(x), BOTTOM + 9, str(x), AXIS_FONT)
    canvas.text(RIGHT, BOTTOM + 9, "x", AXIS_FONT, anchor="rm")
    for series in scene["series"]:
        points = [(px(x), _y(scene, v)) for x, v in zip(xs, series["values"], strict=True)]
        canvas.line(points, width=2.5, fill=series["colour"])
        for x, y in points:
            canvas.circle(x, y, 3, series["colour"])
    x = LEFT  # the legend: a row above the plot, a short line of each series' colour and its name
    for series in scene["series"]:
        canvas.line([(x, 11), (x + 10, 11)], width=2.5, fill=series["colour"])
        canvas.text(x + 13, 11, series["name"], LEGEND_FONT, anchor="lm")
        x += 13 + len(series["name"]) * LEGEND_FONT * 0.6 + 12
