"""Solvers of the pages done with the pointer: dragging, sliding, drawing."""

from __future__ import annotations

import re

from PIL import ImageColor

from gfcr.envs.browser.actions import format_call as call
from gfcr.envs.browser.miniwob_oracle.registry import click, fill, ordinal, ref, solves, submit
from gfcr.envs.browser.snapshot import Node, PageView
from gfcr.envs.browser.tab import VIEWPORT

# Points at the edges of the viewport: a drag there moves a thing as far as it goes that way.
WIDTH, HEIGHT = VIEWPORT["width"], VIEWPORT["height"]
EDGES = {
    "left": [0, HEIGHT // 2], "right": [WIDTH - 1, HEIGHT // 2],
    "up": [WIDTH // 2, 0], "down": [WIDTH // 2, HEIGHT - 1],
}  # fmt: skip
MOVE = re.compile(r"Drag (.+?) (?:to the (.+?)(?: position)?|(up|down|left|right) by one(?: position)?)\.")
ROWS = {"top": 0, "center": 1, "bottom": 2}
COLUMNS = {"left": 0, "center": 1, "right": 2}


def _drag(source: Node, target: Node | list[int]) -> str:
    return call("drag_and_drop", ref(source), target if isinstance(target, list) else ref(target))


@solves("drag-box")
def _drag_box(page: PageView) -> list[str]:
    return [_drag(page.get("button", "s"), page.get("button", "L")), submit(page)]


@solves("drag-items", "drag-items-grid")
def _drag_items(page: PageView) -> list[str]:
    match = MOVE.search(page.goal)
    if match is None:
        raise LookupError(f"no move in the goal {page.goal!r}")
    name, place, step = match.groups()
    items = page.find_all("listitem")
    start = next(index for index, item in enumerate(items) if item.all_text() == name)
    columns = 3 if len(items) == 9 else 1
    if step:
        goal = start + {"up": -columns, "down": columns, "left": -1, "right": 1}[step]
    elif columns == 1:
        goal = {"top": 0, "bottom": len(items) - 1}.get(place, ordinal(place))
    else:  # "top left" ... "center" ... "bottom right"
        row, _, column = place.partition(" ")
        goal = 3 * ROWS[row] + COLUMNS[column or "center"]
    return [_drag(items[start], _drop_on(items, start, goal, columns))]


def _drop_on(items: list[Node], start: int, goal: int, columns: int) -> Node:
    """Where to drop an item of a jQuery UI sortable so that it lands at index `goal`.

    The sortable puts the dragged item after another once the pointer is past that item's middle
    moving down or right, and before it once the pointer is short of its middle moving up or left.
    A drop lands on its target's middle, and Chromium floors the pointer to whole pixels.
    """
    if columns == 1:  # the rows' middles are fractional: a drop on one counts as above it
        return items[goal + 1] if start < goal < len(items) - 1 else items[goal]
    return _grid_drop(items, start, goal, columns)


def _grid_drop(items: list[Node], start: int, goal: int, columns: int) -> Node:
    """The grid's cells have whole-pixel middles, so a drop on one counts as right on it.

    The dragged cell then goes after the cell it arrives on moving right or straight down, and
    before the cell whose label (in the top half of its cell) it arrives on moving straight up;
    moving left it goes through the goal cell to stop on the one past it. Other moves (onto the
    left column from the right, or up and right onto the cell that should follow) fall short.
    """

    def moves(position: int) -> tuple[int, int]:
        return position % columns - start % columns, position // columns - start // columns

    before, after = (goal, goal + 1) if goal > start else (goal - 1, goal)  # its new neighbours' cells
    right, down = moves(before)
    if before >= 0 and (right > 0 or (right == 0 and down > 0)):
        return items[before]
    right, down = moves(after)
    if after < len(items) and right == 0 and down < 0:
        return items[after].children[0]
    if 0 < goal % columns < start % columns:
        return items[goal - 1]
    return items[goal]


@solves("drag-sort-numbers")
def _drag_sort_numbers(page: PageView) -> list[str]:
    """Selection sort, one drag a step: the smallest number not yet in place goes to the first wrong place."""
    items = page.find_all("listitem")
    numbers = [int(item.all_text()) for item in items]
    for place, number in enumerate(numbers):
        smallest = min(range(place, len(numbers)), key=numbers.__getitem__)
        if numbers[smallest] < number:
            return [_drag(items[smallest], items[place])]
    return [submit(page)]


@solves("drag-circle", "drag-single-shape")
def _drag_shape(page: PageView) -> list[str]:
    direction = re.search(r"Drag the \w+ (\w+)", page.goal).group(1)  # type: ignore[union-attr]
    shape = page.get("img").children[0]
    return [_drag(shape, EDGES[direction]), submit(page)]


@solves("resize-textarea")
def _resize_textarea(page: PageView) -> list[str]:
    """Pull the textarea's bottom (height) or right (width) handle towards the viewport's edge or back.

    A textarea pulled down can cover Submit, so Submit is reached from the textarea with Tab.
    """
    larger = "larger" in page.goal
    if "height" in page.goal:
        side, direction = "s", "down" if larger else "up"
    else:
        side, direction = "e", "right" if larger else "left"
    handle = page.get("button", f"ui-resizable-handle ui-resizable-{side}")
    return [
        _drag(handle, EDGES[direction]),
        click(page.get("textbox")),
        call("press", "Tab"),
        call("press", "Enter"),
    ]


@solves("use-colorwheel")
def _use_colorwheel(page: PageView) -> list[str]:
    """The picker's text box takes the colour as hex digits, which is what the picker itself writes there."""
    color = re.search(r"Select (\w+) with", page.goal).group(1)  # type: ignore[union-attr]
    hex_digits = "".join(f"{channel:02x}" for channel in ImageColor.getrgb(color)[:3])  # CSS's named colours
    return [fill(page.find("textbox"), hex_digits), submit(page)]
