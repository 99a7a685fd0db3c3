"""Geometry diagrams: the `geometry` kind, a figure drawn to scale with its givens written on it.

The question text gives no numbers: the angles and lengths are on the figure, and the unknown is
marked `x`. Answers are exact integers. Levels: 1, the third angle of a triangle (the angle sum);
2, a side of a right triangle (a Pythagorean triple, scaled); 3, the fourth angle of a convex
quadrilateral (the angle sum 360°) or a triangle's exterior angle (the sum of the two remote
interior angles).

>>> import random
>>> puzzle = geometry(1, random.Random(0))
>>> puzzle.question, puzzle.answer
('The figure shows a triangle with two of its angles. Find the angle marked x, in degrees.', '85')
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any

from gfcr.envs.vision.canvas import Canvas
from gfcr.envs.vision.puzzle import Puzzle

TRIPLES = ((3, 4, 5), (5, 12, 13), (8, 15, 17), (7, 24, 25), (20, 21, 29))
FRAME = (34.0, 222.0)  # figures are fitted into this square, in logical units
LABEL_FONT = 13.0
Point = tuple[float, float]
MAX_TRIES = 200


def geometry(level: int, rng: random.Random) -> Puzzle:
    """One diagram question of `level` (1..3, see the module docstring)."""
    if level == 1:
        return _triangle_angle(rng)
    if level == 2:
        return _right_triangle(rng)
    return _quadrilateral(rng) if rng.random() < 0.5 else _exterior_angle(rng)


def _triangle_angle(rng: random.Random) -> Puzzle:
    wanted = rng.randrange(25, 131, 5)  # drawn first, uniformly: no guess beats chance
    other = rng.randrange(25, 180 - wanted - 24, 5)
    unknown = rng.randrange(3)
    angles = [other, 180 - wanted - other]
    angles.insert(unknown, wanted)
    corners = _triangle(angles[0], angles[1])
    texts = ["x" if i == unknown else f"{angle}°" for i, angle in enumerate(angles)]
    scene = _figure(corners, [_angle_label(corners, i, t) for i, t in enumerate(texts)])
    question = "The figure shows a triangle with two of its angles. Find the angle marked x, in degrees."
    return Puzzle(question, str(angles[unknown]), "number", scene)


def _right_triangle(rng: random.Random) -> Puzzle:
    triple = rng.choice(TRIPLES)
    k = rng.randint(1, 3) if max(triple) < 20 else 1
    legs_first = rng.random() < 0.5
    p, q, r = (side * k for side in (triple if legs_first else (triple[1], triple[0], triple[2])))
    corners = [(0.0, 0.0), (float(p), 0.0), (0.0, float(q))]  # the right angle at the first corner
    sides = [(0, 1, p), (1, 2, r), (2, 0, q)]
    unknown = rng.randrange(3)
    fitted = _fit(corners)
    labels = [
        _side_label(fitted, i, j, "x" if n == unknown else str(length))
        for n, (i, j, length) in enumerate(sides)
    ]
    scene = _figure(fitted, labels, [_right_angle_mark(fitted)])
    question = "The figure shows a right triangle with two of its side lengths. Find the length marked x."
    return Puzzle(question, str(sides[unknown][2]), "number", scene)


def _quadrilateral(rng: random.Random) -> Puzzle:
    for _ in range(MAX_TRIES):
        angles = [rng.randrange(60, 141, 5) for _ in range(3)]
        angles.append(360 - sum(angles))
        if not 60 <= angles[3] <= 140:
            continue
        corners = _closed_polygon(angles, rng.uniform(0.7, 1.3), rng.uniform(0.7, 1.3))
        if corners is None:
            continue
        fitted = _fit(corners)
        unknown = rng.randrange(4)
        labels = [_angle_label(fitted, i, "x" if i == unknown else f"{a}°") for i, a in enumerate(angles)]
        question = (
            "The figure shows a quadrilateral with three of its angles. Find the angle marked x, in degrees."
        )
        return Puzzle(question, str(angles[unknown]), "number", _figure(fitted, labels))
    raise RuntimeError("no quadrilateral found")  # pragma: no cover - MAX_TRIES is never reached


def _exterior_angle(rng: random.Random) -> Puzzle:
    a, c = rng.randrange(30, 71, 5), rng.randrange(30, 81, 5)
    b = 180 - a - c
    corners = _triangle(a, b, frame=(34.0, 190.0))
    (ax, ay), (bx, by), _ = corners
    length = math.hypot(bx - ax, by - ay)
    end = (bx + (bx - ax) / length * 50, by + (by - ay) / length * 50)  # the base, extended past B
    labels = [_angle_label(corners, 0, f"{a}°"), _angle_label(corners, 2, f"{c}°")]
    # x sits outside the triangle, between the extension and side BC
    toward_c = _unit(corners[2], corners[1])
    along = _unit(end, corners[1])
    middle = _unit((toward_c[0] + along[0], toward_c[1] + along[1]), (0.0, 0.0))
    labels.append({"text": "x", "x": bx + middle[0] * 18, "y": by + middle[1] * 18})
    question = (
        "The figure shows a triangle with one side extended and two of its angles. "
        "Find the exterior angle marked x, in degrees."
    )
    return Puzzle(question, str(a + c), "number", _figure(corners, labels, [[corners[1], end]]))


def draw(scene: dict[str, Any], canvas: Canvas) -> None:
    points = [tuple(p) for p in scene["polygon"]]
    canvas.polygon(points, (235, 242, 252))
    canvas.line([*points, points[0]], width=2)
    for line in scene["lines"]:
        canvas.line([tuple(p) for p in line], width=1.5)
    for label in scene["labels"]:
        canvas.text(label["x"], label["y"], label["text"], LABEL_FONT)


def _figure(
    polygon: Sequence[Point], labels: list[dict[str, Any]], lines: Sequence[Sequence[Point]] = ()
) -> dict[str, Any]:
    def rounded(points: Sequence[Point]) -> list[list[float]]:
        return [[round(x, 2), round(y, 2)] for x, y in points]

    return {"polygon": rounded(polygon), "labels": labels, "lines": [rounded(line) for line in lines]}


def _triangle(a: float, b: float, frame: tuple[float, float] = FRAME) -> list[Point]:
    """A triangle with angle `a` at its left base corner, `b` at its right one, fitted to `frame`."""
    ta, tb = math.tan(math.radians(a)), math.tan(math.radians(b))
    apex_x = tb / (ta + tb)  # the apex over a base from 0 to 1
    return _fit([(0.0, 0.0), (1.0, 0.0), (apex_x, apex_x * ta)], frame)


def _closed_polygon(angles: Sequence[int], first: float, second: float) -> list[Point] | None:
    """The convex quadrilateral with these interior angles (at corners 0..3) and its first two sides
    `first` and `second` long, its other two solved so that it closes; None if one is too short."""
    headings = [0.0]
    for angle in angles[1:]:
        headings.append(headings[-1] + math.radians(180 - angle))
    d = [(math.cos(h), math.sin(h)) for h in headings]
    gap = (-(first * d[0][0] + second * d[1][0]), -(first * d[0][1] + second * d[1][1]))
    det = d[2][0] * d[3][1] - d[3][0] * d[2][1]
    if abs(det) < 1e-9:
        return None
    third = (gap[0] * d[3][1] - d[3][0] * gap[1]) / det
    fourth = (d[2][0] * gap[1] - gap[0] * d[2][1]) / det
    if min(third, fourth) < 0.6:
        return None
    corners = [(0.0, 0.0)]
    for length, (dx, dy) in zip((first, second, third), d, strict=False):
        corners.append((corners[-1][0] + length * dx, corners[-1][1] + length * dy))
    return corners


def _fit(points: Sequence[Point], frame: tuple[float, float] = FRAME) -> list[Point]:
    """`points` (y up) scaled to fill `frame` (y down, centred), keeping their shape."""
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    low, high = frame
    scale = (high - low) / max(max(xs) - min(xs), max(ys) - min(ys))
    dx = low + ((high - low) - (max(xs) - min(xs)) * scale) / 2
    dy = low + ((high - low) - (max(ys) - min(ys)) * scale) / 2
    return [(dx + (x - min(xs)) * scale, dy + (max(ys) - y) * scale) for x, y in points]


def _angle_label(corners: Sequence[Point], i: int, text: str) -> dict[str, Any]:
    """A label inside the corner `i`, on its bisector, further in at a sharper angle."""
    corner = corners[i]
    u, v = _unit(corners[i - 1], corner), _unit(corners[(i + 1) % len(corners)], corner)
    bisector = _unit((u[0] + v[0], u[1] + v[1]), (0.0, 0.0))
    half = math.acos(max(-1.0, min(1.0, u[0] * v[0] + u[1] * v[1]))) / 2
    distance = min(48.0, 15.0 / max(math.sin(half), 0.2))
    return {"text": text, "x": corner[0] + bisector[0] * distance, "y": corner[1] + bisector[1] * distance}


def _side_label(corners: Sequence[Point], i: int, j: int, text: str) -> dict[str, Any]:
    """A label beside side i-j, outside the figure."""
    (x0, y0), (x1, y1) = corners[i], corners[j]
    cx, cy = (sum(p[0] for p in corners) / len(corners), sum(p[1] for p in corners) / len(corners))
    mx, my = (x0 + x1) / 2, (y0 + y1) / 2
    out = _unit((mx, my), (cx, cy))
    return {"text": text, "x": mx + out[0] * 14, "y": my + out[1] * 14}


def _right_angle_mark(corners: Sequence[Point], size: float = 10.0) -> list[Point]:
    corner = corners[0]
    u, v = _unit(corners[1], corner), _unit(corners[2], corner)
    return [
        (corner[0] + u[0] * size, corner[1] + u[1] * size),
        (corner[0] + (u[0] + v[0]) * size, corner[1] + (u[1] + v[1]) * size),
        (corner[0] + v[0] * size, corner[1] + v[1] * size),
    ]


def _unit(to: Point, start: Point) -> Point:
    dx, dy = to[0] - start[0], to[1] - start[1]
    length = math.hypot(dx, dy) or 1.0
    return dx / length, dy / length
