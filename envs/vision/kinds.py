"""The kinds of generated visual questions: each one's levels, generator, drawing and legend.

>>> sorted(KINDS), KINDS["chart"].levels
(['attribute', 'chart', 'count', 'geometry', 'maze', 'spatial'], 4)
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gfcr.envs.vision import charts, geometry, maze, scenes
from gfcr.envs.vision.canvas import Canvas
from gfcr.envs.vision.puzzle import Puzzle


@dataclass(frozen=True)
class Kind:
    """A kind of question: `make(level, rng)` for levels 1..`levels`, and how its scene is drawn.
    `legend(scene)`: the picture's legend as text, for the `read_legend` tool (None: no legend)."""

    levels: int
    make: Callable[[int, random.Random], Puzzle]
    draw: Callable[[dict[str, Any], Canvas], None]
    legend: Callable[[dict[str, Any]], str] | None = None


KINDS: dict[str, Kind] = {
    "count": Kind(3, scenes.count, scenes.draw),
    "attribute": Kind(3, scenes.attribute, scenes.draw),
    "spatial": Kind(3, scenes.spatial, scenes.draw),
    "chart": Kind(4, charts.chart, charts.draw, charts.legend),
    "geometry": Kind(3, geometry.geometry, geometry.draw),
    "maze": Kind(3, maze.maze, maze.draw),
}
