"""gfcr's browser actions: what each does (`BrowserActions`), and how a model's text calls them.

`BrowserActions` carries out each action on an episode's page; the env offers its methods as
tools (`action_tools`), and `INSTRUCTIONS` tells the model about them. A model calls them as
native tools or as function calls in its text: `click("e5")`, `fill(e7, "Ada")`, one or more per
message, anywhere in it (reasoning first is fine). `parse_calls` reads those: arguments are
Python/JSON literals; a bare word stands for itself (`click(e5)`, `press(Enter)`). Keyword
arguments work too. Nothing is evaluated: arguments go through `ast.literal_eval`.

>>> signatures = {"fill": ["ref", "text"], "click": ["ref"]}
>>> calls, problems = parse_calls('I will type, then submit.\\nfill(e6, "Keli")\\nclick("e7")', signatures)
>>> [(c.name, c.arguments) for c in calls], problems
([('fill', {'ref': 'e6', 'text': 'Keli'}), ('click', {'ref': 'e7'})], [])
>>> parse_calls("click(e5, e6)", {"click": ["ref"]})[1]
['click(e5, e6): click takes 1 argument (ref), got 2']
>>> format_call("fill", "e6", 'say "hi"')
'fill("e6", "say \\\\"hi\\\\"")'
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from gfcr.core import ToolCall, ToolSpec
from gfcr.core.python_ast import parse_python
from gfcr.core.tools import time_left
from gfcr.errors import ToolError

if TYPE_CHECKING:
    from gfcr.envs.browser.episode import BrowserEpisode

MAX_CALLS = 50
ACTIONS = (
    "click", "dblclick", "hover", "fill", "select", "press", "type", "drag_and_drop", "scroll",
    "mouse_move", "mouse_click", "mouse_down", "mouse_up", "goto", "back", "answer", "noop",
)  # fmt: skip
METHODS = {"type": "type_text"}  # actions whose method has another name (`type` is a builtin's)
INSTRUCTIONS = (
    "You are using a web browser to reach the goal below. Act with function calls, one or more per message:\n"
    "click(ref, button, clicks), dblclick(ref), hover(ref), fill(ref, text), select(ref, option), "
    "press(key), type(text), drag_and_drop(source, target), scroll(dx, dy), mouse_move(x, y), "
    "mouse_click(x, y, button, clicks), mouse_down(x, y, button), mouse_up(x, y, button), goto(url), back(), "
    "answer(text), noop(ms).\n"
    'A ref names an element of the page below, e.g. click("e5"); x and y are pixels of the 800x600 viewport '
    "(the screenshot), and a drag's source and target are refs or [x, y] points. "
    "answer(text) gives your answer and ends the task."
)
HOW_TO_ACT = 'No action found; write a call such as click("e5") or fill("e6", "text").'


class BrowserActions:
    """gfcr's browser actions, each carried out on the page of `episode` (the env's tools)."""

    def __init__(self, episode: BrowserEpisode) -> None:
        self.episode = episode

    def click(self, ref: str, button: Literal["left", "middle", "right"] = "left", clicks: int = 1) -> str:
        """Click an element of the page.

        Args:
            ref: The element's reference in the page text, e.g. "e5".
            button: The mouse button: "left", "middle" or "right".
            clicks: 1 for a click, 2 for a double click, 3 for a triple click (which selects a paragraph).
        """
        _check_clicks(clicks)
        self.episode.on_page(lambda tab: tab.click(ref, button, count=clicks))
        done = {1: "Clicked", 2: "Double-clicked", 3: "Triple-clicked"}[clicks]
        return f"{done} {ref}." if button == "left" else f"{done} {ref} with the {button} button."

    def dblclick(self, ref: str) -> str:
        """Double-click an element of the page.

        Args:
            ref: The element's reference in the page text, e.g. "e5".
        """
        self.episode.on_page(lambda tab: tab.click(ref, count=2))
        return f"Double-clicked {ref}."

    def hover(self, ref: str) -> str:
        """Move the mouse over an element (menus and tooltips that open on hover show then).

        Args:
            ref: The element's reference in the page text, e.g. "e5".
        """
        self.episode.on_page(lambda tab: tab.hover(ref))
        return f"Hovered over {ref}."

    def fill(self, ref: str, text: str) -> str:
        """Replace the text of a text box (or other editable element) with `text`.

        Args:
            ref: The text box's reference in the page text, e.g. "e6".
            text: The text to type into it.
        """
        self.episode.on_page(lambda tab: tab.fill(ref, text))
        return f"Filled {ref}."

    def select(self, ref: str, option: str) -> str:
        """Choose an option of a drop-down list (a combobox).

        Args:
            ref: The list's reference in the page text.
            option: The option's text (or its value).
        """
        self.episode.on_page(lambda tab: tab.select(ref, option))
        return f"Selected {option!r} in {ref}."

    def press(self, key: str) -> str:
        """Press a key or key combination on the focused element, e.g. "Enter", "Tab", "Control+A".

        Args:
            key: The key, named as Playwright names keys ("Enter", "ArrowDown", "a", "Shift+Tab").
        """
        self.episode.on_page(lambda tab: tab.press(key))
        return f"Pressed {key}."

    def type_text(self, text: str) -> str:
        """Type text key by key into the focused element (click or fill a text box first);
        1,000 characters at most (fill puts a longer text in at once).

        Args:
            text: The text to type.
        """
        self.episode.on_page(lambda tab: tab.type(text))
        return f"Typed {len(text)} character{'s' * (len(text) != 1)}."

    def drag_and_drop(self, source: str | list[float], target: str | list[float]) -> str:
        """Drag with the left mouse button from `source` to `target` and drop there.

        Args:
            source: Where the drag starts: an element's ref ("e5", its centre) or an [x, y] point.
            target: Where it ends: an element's ref or an [x, y] point.
        """
        self.episode.on_page(lambda tab: tab.drag(source, target))
        return f"Dragged from {json.dumps(source)} to {json.dumps(target)}."

    def mouse_move(self, x: float, y: float) -> str:
        """Move the mouse to a point of the viewport (the screenshot's pixels), with buttons as they are.

        Args:
            x: Pixels from the viewport's left edge.
            y: Pixels from the viewport's top edge.
        """
        self.episode.on_page(lambda tab: tab.mouse_move(x, y))
        return f"Moved the mouse to ({x:g}, {y:g})."

    def mouse_click(
        self, x: float, y: float, button: Literal["left", "middle", "right"] = "left", clicks: int = 1
    ) -> str:
        """Click at a point of the viewport (the screenshot's pixels), whatever is there.

        Args:
            x: Pixels from the viewport's left edge.
            y: Pixels from the viewport's top edge.
            button: The mouse button: "left", "middle" or "right".
            clicks: 1 for a click, 2 for a double click, 3 for a triple click.
        """
        _check_clicks(clicks)
        self.episode.on_page(lambda tab: tab.mouse_click(x, y, button, clicks))
        return f"Clicked at ({x:g}, {y:g})."

    def mouse_down(self, x: float, y: float, button: Literal["left", "middle", "right"] = "left") -> str:
        """Move the mouse to a point and press a button there, holding it (release it with mouse_up).

        Args:
            x: Pixels from the viewport's left edge.
            y: Pixels from the viewport's top edge.
            button: The mouse button: "left", "middle" or "right".
        """
        self.episode.on_page(lambda tab: tab.mouse_down(x, y, button))
        return f"Pressed the {button} button at ({x:g}, {y:g})."

    def mouse_up(self, x: float, y: float, button: Literal["left", "middle", "right"] = "left") -> str:
        """Move the mouse to a point and release a button there.

        Args:
            x: Pixels from the viewport's left edge.
            y: Pixels from the viewport's top edge.
            button: The mouse button: "left", "middle" or "right".
        """
        self.episode.on_page(lambda tab: tab.mouse_up(x, y, button))
        return f"Released the {button} button at ({x:g}, {y:g})."

    def scroll(self, dx: float, dy: float) -> str:
        """Scroll what is under the pointer (the element last clicked, else the page) by (dx, dy) pixels.

        To scroll a text area or a list, click it first.

        Args:
            dx: Pixels to scroll right (negative: left).
            dy: Pixels to scroll down (negative: up).
        """
        self.episode.on_page(lambda tab: tab.scroll(dx, dy))
        return f"Scrolled by ({dx}, {dy})."

    def goto(self, url: str) -> str:
        """Open a page of this task's site, by path ("/shop/cart") or full URL on the same site.

        Args:
            url: The path or URL to open.
        """
        self.episode.on_page(lambda tab: tab.goto(url))
        return f"Opened {url}."

    def back(self) -> str:
        """Go back to the previous page."""
        self.episode.on_page(lambda tab: tab.back())
        return "Went back."

    def answer(self, text: str) -> str:
        """Give your answer (or say you are done); this ends the task.

        Args:
            text: The answer, e.g. a name, a price or a time.
        """
        self.episode.answer = text
        return "Answer given."

    def noop(self, ms: int = 0) -> str:
        """Do nothing; optionally wait `ms` milliseconds (at most 10000 per step) for the page to change.

        Args:
            ms: How long to wait, in milliseconds.
        """
        # One step waits 10 s at most, in all, and never past its budget's deadline.
        ms = max(0, min(int(ms), self.episode.wait_left_ms, int(time_left(ms / 1000) * 1000)))
        self.episode.wait_left_ms -= ms
        self.episode.on_page(lambda tab: tab.wait(ms))
        return f"Waited {ms} ms." if ms else "Did nothing."


def action_tools(episode: BrowserEpisode) -> list[ToolSpec]:
    """gfcr's actions as tools, named as `ACTIONS` names them, each running on `episode`'s page."""
    actions = BrowserActions(episode)
    return [ToolSpec.from_function(getattr(actions, METHODS.get(name, name)), name) for name in ACTIONS]


def _check_clicks(clicks: Any) -> None:
    if isinstance(clicks, bool) or clicks not in (1, 2, 3):
        raise ToolError(f"clicks must be 1, 2 or 3, got {clicks!r}")


def parse_calls(text: str, signatures: Mapping[str, Sequence[str]]) -> tuple[list[ToolCall], list[str]]:
    """The calls of the actions named in `signatures` (name -> parameter names) found in `text`."""
    if not signatures:
        return [], []
    start = re.compile(r"(?<![\w.])(" + "|".join(map(re.escape, signatures)) + r")\(")
    calls: list[ToolCall] = []
    problems: list[str] = []
    position = 0
    while len(calls) + len(problems) < MAX_CALLS and (match := start.search(text, position)):
        end = _closing_paren(text, match.end() - 1)
        source = text[match.start() : end]
        position = end
        try:
            calls.append(_to_call(source, match.group(1), signatures[match.group(1)], len(calls)))
        except ValueError as e:
            problems.append(f"{_clip(source)}: {e}")
    return calls, problems


def format_call(name: str, *args: Any) -> str:
    """The text of a call, arguments as JSON literals (which Python reads the same)."""
    return f"{name}({', '.join(json.dumps(a, ensure_ascii=False) for a in args)})"


def _closing_paren(text: str, open_at: int) -> int:
    """Index just past the `)` matching the `(` at `open_at`, skipping strings; end of line if none."""
    depth, quote, escaped = 0, "", False
    for i in range(open_at, len(text)):
        char = text[i]
        if quote:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        elif char == "\n" and depth == 1:
            break
    newline = text.find("\n", open_at)
    return len(text) if newline < 0 else newline


def _to_call(source: str, name: str, parameters: Sequence[str], number: int) -> ToolCall:
    try:
        tree = parse_python(source.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise ValueError(
            f"not a valid call; write e.g. {name}({', '.join(repr('...') for _ in parameters)})"
        ) from None
    if not isinstance(tree, ast.Call) or tree.keywords and any(k.arg is None for k in tree.keywords):
        raise ValueError(f"not a plain call of {name}")
    if len(tree.args) > len(parameters):
        raise ValueError(
            f"{name} takes {len(parameters)} argument{'s' * (len(parameters) != 1)} "
            f"({', '.join(parameters) or 'none'}), got {len(tree.args)}"
        )
    arguments = {parameters[i]: _literal(node) for i, node in enumerate(tree.args)}
    for keyword in tree.keywords:
        if keyword.arg in arguments:
            raise ValueError(f"{keyword.arg} is given twice")
        arguments[str(keyword.arg)] = _literal(keyword.value)
    return ToolCall(name, arguments, f"text_{number}")


def _literal(node: ast.expr) -> Any:
    if isinstance(node, ast.Name):  # a bare word: click(e5), press(Enter)
        return node.id
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        raise ValueError(
            f'argument {ast.unparse(node)[:40]!r} is not a literal (quote text: "...")'
        ) from None


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
