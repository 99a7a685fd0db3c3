"""Grid mazes: the `maze` kind. The answer is a path of moves that the env checks by walking it.

A maze is a grid of cells (4 x 4 at level 1, 6 x 6 at level 2, 9 x 9 at level 3) carved by a
randomised depth-first search, so every cell is reachable; level 3 also opens a few more walls,
so that several paths lead to the goal. S is a random cell and G the cell farthest from it.
An answer is a string of moves U, D, L, R (up, down, left, right: one cell each; spaces and
commas between them are ignored). It is correct when walking it from S never crosses a wall or
leaves the grid and ends on G: any such path counts, the shortest or not.

>>> import random
>>> puzzle = maze(1, random.Random(0))
>>> walk(puzzle.scene, puzzle.answer), walk(puzzle.scene, "")
((True, True), (True, False))
"""

from __future__ import annotations

import random
import re
from collections import deque
from typing import Any

from gfcr.envs.vision.canvas import LOGICAL_SIZE, Canvas
from gfcr.envs.vision.puzzle import Puzzle

SIZES = {1: 4, 2: 6, 3: 9}
MOVES = {"U": (-1, 0, 1), "R": (0, 1, 2), "D": (1, 0, 4), "L": (0, -1, 8)}  # row, column, wall bit
OPPOSITE = {1: 4, 2: 8, 4: 1, 8: 2}
MARGIN = 8.0
_SEPARATORS = re.compile(r"[\s,]+")
_MOVES_RE = re.compile(r"[UDLR]*")


def maze(level: int, rng: random.Random) -> Puzzle:
    """A maze of level `level` with a path from S to G (the shortest, as the gold answer)."""
    n = SIZES[level]
    cells = _carve(n, rng)
    if level == 3:
        for _ in range(n // 2):  # loops: more than one way to the goal
            row, col = rng.randrange(n), rng.randrange(n - 1)
            cells[row][col] |= 2
            cells[row][col + 1] |= 8
    start = (rng.randrange(n), rng.randrange(n))
    paths = _shortest_paths(cells, start)
    goal = max(paths, key=lambda cell: (len(paths[cell]), cell))
    scene = {"size": n, "cells": cells, "start": list(start), "goal": list(goal)}
    question = (
        f"The image shows a maze on a {n} x {n} grid. Find a path from S to G that does not cross a wall. "
        "Answer with the moves, one letter per step to the next cell: U (up), D (down), L (left), "
        "R (right), e.g. \\boxed{RRDL}."
    )
    return Puzzle(question, paths[goal], "path", scene)


def parse_moves(answer: str, size: int) -> str | None:
    """The moves an answer spells (upper case, separators dropped), or None if it spells none or
    more steps than a path through every cell four times would take.

    >>> parse_moves("r, r d", 4), parse_moves("RRX", 4), parse_moves("", 4)
    ('RRD', None, '')
    """
    moves = _SEPARATORS.sub("", answer).upper()
    if len(moves) > 4 * size * size or not _MOVES_RE.fullmatch(moves):
        return None
    return moves


def walk(scene: dict[str, Any], moves: str) -> tuple[bool, bool]:
    """Walk `moves` from S: (no move crossed a wall or left the grid, the walk ended on G)."""
    row, col = scene["start"]
    cells = scene["cells"]
    for move in moves:
        d_row, d_col, wall = MOVES[move]
        if not cells[row][col] & wall:
            return False, False
        row, col = row + d_row, col + d_col
    return True, [row, col] == list(scene["goal"])


def draw(scene: dict[str, Any], canvas: Canvas) -> None:
    n = scene["size"]
    cell = (LOGICAL_SIZE - 2 * MARGIN) / n
    for (row, col), fill, letter in (
        (scene["start"], (200, 240, 200), "S"),
        (scene["goal"], (250, 205, 205), "G"),
    ):
        x, y = MARGIN + col * cell, MARGIN + row * cell
        canvas.rectangle(x, y, x + cell, y + cell, fill)
        canvas.text(x + cell / 2, y + cell / 2, letter, cell * 0.55)
    for row in range(n):
        for col in range(n):
            x, y, open_sides = MARGIN + col * cell, MARGIN + row * cell, scene["cells"][row][col]
            corners = {1: ((x, y), (x + cell, y)), 2: ((x + cell, y), (x + cell, y + cell)),
                       4: ((x, y + cell), (x + cell, y + cell)), 8: ((x, y), (x, y + cell))}  # fmt: skip
            for wall, ends in corners.items():
                if not open_sides & wall:
                    canvas.line(ends, width=2.5)


def _carve(n: int, rng: random.Random) -> list[list[int]]:
    """A perfect maze by randomised depth-first search: each cell's bit mask of open sides."""
    cells = [[0] * n for _ in range(n)]
    stack, seen = [(0, 0)], {(0, 0)}
    while stack:
        row, col = stack[-1]
        options = [
            (move, (row + dr, col + dc))
            for move, (dr, dc, _) in MOVES.items()
            if 0 <= row + dr < n and 0 <= col + dc < n and (row + dr, col + dc) not in seen
        ]
        if not options:
            stack.pop()
            continue
        move, (r, c) = rng.choice(options)
        wall = MOVES[move][2]
        cells[row][col] |= wall
        cells[r][c] |= OPPOSITE[wall]
        seen.add((r, c))
        stack.append((r, c))
    return cells


def _shortest_paths(cells: list[list[int]], start: tuple[int, int]) -> dict[tuple[int, int], str]:
    """Breadth-first search: the shortest move string from `start` to every cell."""
    paths = {start: ""}
    queue = deque([start])
    while queue:
        row, col = queue.popleft()
        for move, (dr, dc, wall) in MOVES.items():
            nxt = (row + dr, col + dc)
            if cells[row][col] & wall and nxt not in paths:
                paths[nxt] = paths[(row, col)] + move
                queue.append(nxt)
    return paths
