"""Solvers of the MiniWoB pages that need the screenshot: what they ask about is drawn, not named.

The accessibility text of these pages lacks what the task is about (a colour, a shape, a count of
blocks, a position on an SVG), which the screenshot shows; an agent shown the page as a picture
(`observation="screenshot"` or `"both"`) acts on it with the pointer at its pixels and with the
keyboard. `SCREENSHOT_SOLVERS` names, for each page, what the picture shows that the text does
not, and the solver's plan.

The solvers are the upper bound, not a vision agent: a plan is a JavaScript function body run on
a replica of the episode's page (the same seed deals the same problem, laid out alike:
`gfcr.envs.browser.miniwob.on_replica`), which reads the page's DOM and script state and returns
the calls — pointer actions at viewport pixels, which are the screenshot's, and keys. It sees the
page as the episode starts, so each plan does the whole task in one message. Helpers the plans
share (`PLAN_HELPERS`): `point(element)`, a whole-pixel point where a click lands on the element
(its centre, else the first of its box that is not covered); `click(element)`, a `mouse_click`
there; `find(selector)`; `centre(element)`, its box's centre; and `paid(selector)`, the element
whose click the page pays, found by clicking each on the replica with the episode's end held back
(the page's answer often lives only in a closure).

>>> plan_calls([["mouse_click", 41, 97], ["type", "12"], ["drag", [3, 4], [50, 60]]])
['mouse_click(41, 97)', 'type("12")', 'drag_and_drop([3, 4], [50, 60])']
"""

from __future__ import annotations

from typing import Any, NamedTuple

from gfcr.envs.browser.actions import format_call as call

PLAN_HELPERS = """
const point = element => {
  const box = element.getBoundingClientRect();
  const lands = (x, y) => {
    const top = document.elementFromPoint(x, y);
    return top !== null && (top === element || element.contains(top));
  };
  const x = Math.floor(box.left + box.width / 2), y = Math.floor(box.top + box.height / 2);
  if (lands(x, y)) return [x, y];
  for (let y = Math.ceil(box.top); y < box.bottom; y++)
    for (let x = Math.ceil(box.left); x < box.right; x++) if (lands(x, y)) return [x, y];
  throw new Error(`no point of ${element.outerHTML.slice(0, 60)} can be clicked`);
};
const click = element => ["mouse_click", ...point(element)];
const find = selector => {
  const element = document.querySelector(selector);
  if (element === null) throw new Error(`no ${selector} on the page`);
  return element;
};
const centre = element => {
  const box = element.getBoundingClientRect();
  return [Math.floor(box.left + box.width / 2), Math.floor(box.top + box.height / 2)];
};
const paid = selector => {
  const end = core.endEpisode;
  let reward = null;
  core.endEpisode = r => { if (reward === null) reward = r; };
  try {
    for (const element of document.querySelectorAll(selector)) {
      reward = null;
      element.dispatchEvent(new MouseEvent("click", { bubbles: true, cancelable: true, view: window }));
      if (reward > 0) return element;
    }
  } finally {
    core.endEpisode = end;
  }
  throw new Error(`no click on ${selector} is paid`);
};
const query = () => find("#query").textContent;
"""
# The shapes pages' kinds, as the goal names them and as SVG draws them.
SHAPE_TAGS = '{rectangles: "rect:not(#shape-container)", circles: "circle", triangles: "polygon"}'
SHAPES = "#area_svg rect:not(#shape-container), #area_svg circle, #area_svg polygon"


class ScreenshotSolver(NamedTuple):
    """What the screenshot shows that the page text does not, and the plan (a JS function body)."""

    shows: str
    plan: str


SCREENSHOT_SOLVERS: dict[str, ScreenshotSolver] = {
    "click-color": ScreenshotSolver(
        "the boxes differ only by colour", 'return [click(paid("#area .color"))];'
    ),
    "click-shades": ScreenshotSolver(
        "twelve unnamed squares that differ only by shade",
        """const colour = /shades of (\\w+)/.exec(query())[1];
        const shades = document.querySelectorAll(`#area span[data-color='${colour}']`);
        return [...[...shades].map(click), click(find("#submit"))];""",
    ),
    "click-shape": ScreenshotSolver(
        "the shapes' kinds, colours and sizes", 'return [click(paid("#area_svg > *"))];'
    ),
    "click-widget": ScreenshotSolver(
        "a text input and a text area, which read alike as text boxes",
        'return [click(paid("#area .widget"))];',
    ),
    "count-shape": ScreenshotSolver(
        "the shapes to count, with their colours and sizes",
        'return [click(paid("#count-buttons button"))];',
    ),
    "count-sides": ScreenshotSolver(
        "the polygon, drawn on a canvas", 'return [click(paid("#form button"))];'
    ),
    "drag-shapes": ScreenshotSolver(
        "which unnamed shape is a circle, a rectangle or a triangle, and where the box is",
        f"""const kind = {SHAPE_TAGS}[/Drag all (\\w+)/.exec(query())[1]];
        const box = centre(find("#shape-container"));
        const moves = [...document.querySelectorAll("#area_svg " + kind)].map(s => ["drag", point(s), box]);
        return [...moves, click(find("#subbtn"))];""",
    ),
    "drag-shapes-2": ScreenshotSolver(
        "the unnamed shapes' kinds and colours, and where the two boxes are",
        f"""const kind = /Drag all (\\w+) into/.exec(query());
        const colour = /Drag all (\\w+) shapes/.exec(query());
        const left = s => colour ? s.getAttribute("fill") === colour[1] : s.matches({SHAPE_TAGS}[kind[1]]);
        const [into, rest] = [...document.querySelectorAll("#shape-container")].map(centre);
        const shapes = document.querySelectorAll("{SHAPES}");
        const moves = [...shapes].map(s => ["drag", point(s), left(s) ? into : rest]);
        return [...moves, click(find("#subbtn"))];""",
    ),
    "grid-coordinate": ScreenshotSolver(
        "where each of the 25 unnamed grid points lies on the axes",
        'return [click(paid("#area svg circle"))];',
    ),
    "identify-shape": ScreenshotSolver(
        "the figure, an unnamed SVG shape, letter or digit", 'return [click(paid("#area-buttons button"))];'
    ),
    "number-checkboxes": ScreenshotSolver(
        "the digit's pattern, an image without alt text",
        """const digit = Number(/"(\\d)"/.exec(query())[1]);
        const boxes = document.querySelectorAll("#checkboxes input");
        const ticks = PATTERNS[digit].flat().flatMap((on, i) => on ? [click(boxes[i])] : []);
        return [...ticks, click(find("#subbtn"))];""",
    ),
    "visual-addition": ScreenshotSolver(
        "the blocks to count, empty elements",
        """const blocks = document.querySelectorAll("#math-problem .addition-block").length;
        return [click(find("#math-answer")), ["type", String(blocks)], click(find("#subbtn"))];""",
    ),
}
SCREENSHOT_PAGES: tuple[str, ...] = tuple(sorted(SCREENSHOT_SOLVERS))
ACTION_NAMES = {"drag": "drag_and_drop"}  # the plans' short names


def plan_script(page: str) -> str:
    """The JavaScript function that returns the plan of `page` on its replica."""
    return f"() => {{{PLAN_HELPERS}\n{SCREENSHOT_SOLVERS[page].plan}\n}}"


def plan_calls(plan: list[list[Any]]) -> list[str]:
    """A plan's calls (`[name, *arguments]` lists) as the text of the actions."""
    return [call(ACTION_NAMES.get(name, name), *arguments) for name, *arguments in plan]
