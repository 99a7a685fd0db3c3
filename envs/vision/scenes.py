"""Scenes of coloured shapes: the `count`, `attribute` and `spatial` kinds (CLEVR-style, in 2D).

Objects sit in the cells of a jittered grid (a cell each, so they never overlap); each is a
circle, square, triangle or diamond of one colour. Questions name objects by colour and shape
("the red circle"); positions are those of the objects' centres, and a question about the
leftmost object, or the nearest one, is only asked where the picture settles it clearly (a
margin in position or distance, see `clear_extreme` and `clear_nearest`).

>>> import random
>>> puzzle = count(1, random.Random(0))
>>> puzzle.question, puzzle.answer, puzzle.answer_kind
('How many diamonds are in the image?', '3', 'number')
"""

from __future__ import annotations

import math
import random
from typing import Any

from gfcr.envs.vision.canvas import COLOURS, LOGICAL_SIZE, SHAPES, Canvas
from gfcr.envs.vision.puzzle import Puzzle

Object = dict[str, Any]  # {"shape", "colour", "x", "y", "r"}: centre and size in logical units
PALETTE = tuple(COLOURS)[:6]  # colours a question may name
SIDES = {"leftmost": ("x", 1), "rightmost": ("x", -1), "topmost": ("y", 1), "bottommost": ("y", -1)}
EXTREME_MARGIN = 14  # units between the extreme object's centre and the next one's
NEAREST_RATIO = 0.75  # the nearest object is at most this fraction of the second nearest's distance
MAX_TRIES = 200


def place(
    rng: random.Random, shapes: list[tuple[str, str]], grid: int, radius: tuple[int, int]
) -> list[Object]:
    """`shapes` ((shape, colour) pairs) in distinct cells of a `grid` x `grid` layout, jittered."""
    cell = LOGICAL_SIZE / grid
    objects = []
    for index, (shape, colour) in zip(rng.sample(range(grid * grid), len(shapes)), shapes, strict=True):
        r = rng.randint(*radius)
        slack = max(0.0, cell / 2 - r - 4)
        row, col = divmod(index, grid)
        x = (col + 0.5) * cell + rng.uniform(-slack, slack)
        y = (row + 0.5) * cell + rng.uniform(-slack, slack)
        objects.append({"shape": shape, "colour": colour, "x": round(x), "y": round(y), "r": r})
    return objects


def draw(scene: dict[str, Any], canvas: Canvas) -> None:
    for obj in scene["objects"]:
        canvas.shape(obj["shape"], obj["x"], obj["y"], obj["r"], obj["colour"])


def name(obj: Object) -> str:
    return f"{obj['colour']} {obj['shape']}"


def count(level: int, rng: random.Random) -> Puzzle:
    """Count objects of a shape (level 1), a colour (2), or a colour and shape among more (3).
    The count is drawn first, uniformly (1..5; 0..5 at level 3), so that no guess beats chance."""
    if level == 1:
        colour = rng.choice(PALETTE)
        target, other = rng.sample(SHAPES, 2)
        wanted = rng.randint(1, 5)
        pairs = [(target, colour)] * wanted + [(other, colour)] * rng.randint(0, min(3, 9 - wanted))
        objects = place(rng, pairs, 3, (18, 30))
        return Puzzle(f"How many {target}s are in the image?", str(wanted), "number", {"objects": objects})
    if level == 2:
        colour, *others = rng.sample(PALETTE, 4)
        shapes = rng.sample(SHAPES, 3)
        wanted = rng.randint(1, 5)
        pairs = [(rng.choice(shapes), colour) for _ in range(wanted)]
        pairs += [
            (rng.choice(shapes), rng.choice(others))
            for _ in range(rng.randint(max(0, 4 - wanted), 10 - wanted))
        ]
        rng.shuffle(pairs)
        question = f"How many {colour} objects are in the image?"
        return Puzzle(question, str(wanted), "number", {"objects": place(rng, pairs, 4, (12, 20))})
    shape, colour = rng.choice(SHAPES), rng.choice(PALETTE)
    wanted = rng.randint(0, 5)
    distractors = [(s, c) for s in SHAPES for c in PALETTE if (s, c) != (shape, colour)]
    pairs = [(shape, colour)] * wanted + [rng.choice(distractors) for _ in range(rng.randint(8, 16) - wanted)]
    rng.shuffle(pairs)
    question = f"How many {colour} {shape}s are in the image?"
    return Puzzle(question, str(wanted), "number", {"objects": place(rng, pairs, 5, (9, 15))})


def attribute(level: int, rng: random.Random) -> Puzzle:
    """The colour of the single object (level 1), the colour or shape of an object named by its
    other attribute (2), or of the leftmost/topmost/... object (3)."""
    if level == 1:
        objects = place(rng, [(rng.choice(SHAPES), rng.choice(PALETTE))], 1, (30, 60))
        return Puzzle(
            "What colour is the object?", objects[0]["colour"], "choice", {"objects": objects}, PALETTE
        )
    if level == 2:
        n = rng.randint(3, 4)
        objects = place(
            rng, list(zip(rng.sample(SHAPES, n), rng.sample(PALETTE, n), strict=True)), 3, (16, 28)
        )
        obj = rng.choice(objects)
        if rng.random() < 0.5:
            return Puzzle(
                f"What colour is the {obj['shape']}?", obj["colour"], "choice", {"objects": objects}, PALETTE
            )
        question = f"What shape is the {obj['colour']} object?"
        return Puzzle(question, obj["shape"], "choice", {"objects": objects}, SHAPES)
    for _ in range(MAX_TRIES):
        pairs = [(rng.choice(SHAPES), rng.choice(PALETTE)) for _ in range(rng.randint(5, 8))]
        objects = place(rng, pairs, 4, (10, 22))
        side = rng.choice(tuple(SIDES))
        found = clear_extreme(objects, side)
        if found is not None:
            asked = rng.choice(("colour", "shape"))
            choices = PALETTE if asked == "colour" else SHAPES
            question = f"What {asked} is the {side} object?"
            return Puzzle(question, found[asked], "choice", {"objects": objects}, choices)
    raise RuntimeError("no clear scene found")  # pragma: no cover - MAX_TRIES is never reached


def spatial(level: int, rng: random.Random) -> Puzzle:
    """Which of two objects is further left/right/up/down (level 1), which object is nearest to a
    named one (2), nearest to or farthest from the leftmost/topmost/... object (3)."""
    n, grid, radius = {
        1: (2, 2, (16, 30)),
        2: (rng.randint(3, 5), 3, (14, 24)),
        3: (rng.randint(6, 8), 4, (10, 20)),
    }[level]
    for _ in range(MAX_TRIES):
        pairs = rng.sample([(s, c) for s in SHAPES for c in PALETTE], n)  # names are unique
        objects = place(rng, pairs, grid, radius)
        puzzle = _relation(level, objects, rng)
        if puzzle is not None:
            return puzzle
    raise RuntimeError("no clear scene found")  # pragma: no cover - MAX_TRIES is never reached


def _relation(level: int, objects: list[Object], rng: random.Random) -> Puzzle | None:
    scene = {"objects": objects}
    if level == 1:
        side = rng.choice(tuple(SIDES))
        found = clear_extreme(objects, side, margin=30)
        if found is None:
            return None
        word = {
            "leftmost": "further left",
            "rightmost": "further right",
            "topmost": "higher",
            "bottommost": "lower",
        }[side]
        a, b = (name(o) for o in objects)
        return Puzzle(f"Which object is {word}: the {a} or the {b}?", name(found), "choice", scene, (a, b))
    if level == 2:
        anchor = rng.choice(objects)
        described = f"the {name(anchor)}"
    else:
        side = rng.choice(tuple(SIDES))
        found = clear_extreme(objects, side)
        if found is None:
            return None
        anchor, described = found, f"the {side} object"
    farthest = level == 3 and rng.random() < 0.5
    answer = clear_nearest(anchor, objects, farthest=farthest)
    if answer is None:
        return None
    others = tuple(name(o) for o in objects if o is not anchor)
    relation = "farthest from" if farthest else "nearest to"
    return Puzzle(f"Which object is {relation} {described}?", name(answer), "choice", scene, others)


def clear_extreme(objects: list[Object], side: str, margin: float = EXTREME_MARGIN) -> Object | None:
    """The object furthest to `side` ("leftmost" …) if it is so by `margin` units, by its centre and
    by its edge alike; None where the picture does not settle it.

    >>> a, b = {"x": 20, "y": 0, "r": 5}, {"x": 60, "y": 0, "r": 5}
    >>> clear_extreme([a, b], "leftmost") is a, clear_extreme([a, b], "topmost")
    (True, None)
    """
    axis, sign = SIDES[side]
    by_centre = sorted(objects, key=lambda o: sign * o[axis])
    by_edge = sorted(objects, key=lambda o: sign * o[axis] - o["r"])
    first, second = by_centre[0], by_centre[1]
    edge_gap = (sign * by_edge[1][axis] - by_edge[1]["r"]) - (sign * by_edge[0][axis] - by_edge[0]["r"])
    if by_edge[0] is not first or sign * (second[axis] - first[axis]) < margin or edge_gap < margin / 2:
        return None
    return first


def clear_nearest(anchor: Object, objects: list[Object], *, farthest: bool = False) -> Object | None:
    """The object nearest to (or farthest from) `anchor`, centre to centre, if clearly so (the two
    best distances differ by the factor `NEAREST_RATIO`); None otherwise."""
    others = sorted(
        (o for o in objects if o is not anchor), key=lambda o: _distance(anchor, o), reverse=farthest
    )
    if len(others) == 1:
        return others[0]
    best, runner_up = _distance(anchor, others[0]), _distance(anchor, others[1])
    clear = runner_up <= NEAREST_RATIO * best if farthest else best <= NEAREST_RATIO * runner_up
    return others[0] if clear else None


def _distance(a: Object, b: Object) -> float:
    return math.hypot(a["x"] - b["x"], a["y"] - b["y"])
