"""BrowserGym's action syntax for `gfcr/Browser-v0` (`action_syntax="browsergym"`).

Agents and prompts written for BrowserGym's high-level action set call `click("a51")`,
`fill("237", "text")`, `select_option(...)`, `mouse_click(x, y)`, `keyboard_press("Enter")` …; with
this syntax the env reads those names and argument orders, in text and as native tools, and runs
them on gfcr's page. A BrowserGym `bid` is a gfcr ref (`e5`, `f2e7`): the page text shows them.

Every function of BrowserGym's set is accepted. `send_msg_to_user(text)` and
`report_infeasible(reason)` give the answer, as gfcr's `answer(text)` does, and end the task.
The env keeps one tab and takes no files, so `new_tab`, `tab_focus`, `tab_close`, `upload_file`
and `mouse_upload_file` answer with an error that says so.

>>> from gfcr.envs.browser import BrowserEnv
>>> tools = BrowserEnv(dataset="click-test", action_syntax="browsergym").tools
>>> list(tools["click"].parameters["properties"]), list(tools["mouse_drag_and_drop"].parameters["properties"])
(['bid', 'button', 'modifiers'], ['from_x', 'from_y', 'to_x', 'to_y'])
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from gfcr.core import ToolSpec
from gfcr.envs.browser.actions import BrowserActions
from gfcr.errors import ToolError

if TYPE_CHECKING:
    from gfcr.envs.browser.episode import BrowserEpisode

Button = Literal["left", "middle", "right"]
BROWSERGYM_INSTRUCTIONS = (
    "You are using a web browser to reach the goal below. Act with BrowserGym's action functions, "
    "one or more per message:\n"
    "click(bid, button, modifiers), dblclick(bid, button, modifiers), hover(bid), fill(bid, value), "
    "clear(bid), select_option(bid, options), check(bid), uncheck(bid), focus(bid), press(bid, key_comb), "
    "drag_and_drop(from_bid, to_bid), scroll(delta_x, delta_y), mouse_move(x, y), mouse_click(x, y, button), "
    "mouse_dblclick(x, y, button), mouse_down(x, y, button), mouse_up(x, y, button), "
    "mouse_drag_and_drop(from_x, from_y, to_x, to_y), keyboard_press(key), keyboard_type(text), "
    "keyboard_insert_text(text), keyboard_down(key), keyboard_up(key), goto(url), go_back(), go_forward(), "
    "noop(wait_ms), send_msg_to_user(text), report_infeasible(reason).\n"
    'A bid is an element\'s ref in the page below, e.g. click("e5"); x and y are pixels of the 800x600 '
    "viewport (the screenshot). send_msg_to_user(text) gives your answer and ends the task."
)
NAMES = (
    "click", "dblclick", "hover", "fill", "clear", "select_option", "check", "uncheck", "focus", "press",
    "drag_and_drop", "scroll", "mouse_move", "mouse_click", "mouse_dblclick", "mouse_down", "mouse_up",
    "mouse_drag_and_drop", "keyboard_press", "keyboard_type", "keyboard_insert_text", "keyboard_down",
    "keyboard_up", "goto", "go_back", "go_forward", "noop", "send_msg_to_user", "report_infeasible",
    "new_tab", "tab_focus", "tab_close", "upload_file", "mouse_upload_file",
)  # fmt: skip
ONE_TAB = "this browser keeps the task's one tab; act on the page shown"
NO_FILES = "file uploads are not available in this browser"


def browsergym_tools(episode: BrowserEpisode) -> list[ToolSpec]:
    """The tools of BrowserGym's action set, each running on `episode`'s page."""
    actions = BrowserGymActions(episode)
    return [ToolSpec.from_function(getattr(actions, name)) for name in NAMES]


class BrowserGymActions:
    """BrowserGym's action functions, carried out by gfcr's own actions or on `episode`'s page."""

    def __init__(self, episode: BrowserEpisode) -> None:
        self.episode = episode
        self.gfcr = BrowserActions(episode)

    def click(self, bid: str, button: Button = "left", modifiers: list[str] | None = None) -> str:
        """Click an element, optionally with another button or holding modifier keys.

        Args:
            bid: The element's ref in the page text, e.g. "e5".
            button: "left", "middle" or "right".
            modifiers: Keys held during the click: any of "Alt", "Control", "Meta", "Shift".
        """
        self.episode.on_page(lambda tab: tab.click(bid, button, modifiers or []))
        return f"Clicked {bid}."

    def dblclick(self, bid: str, button: Button = "left", modifiers: list[str] | None = None) -> str:
        """Double-click an element.

        Args:
            bid: The element's ref in the page text.
            button: "left", "middle" or "right".
            modifiers: Keys held during the clicks: any of "Alt", "Control", "Meta", "Shift".
        """
        self.episode.on_page(lambda tab: tab.click(bid, button, modifiers or [], count=2))
        return f"Double-clicked {bid}."

    def hover(self, bid: str) -> str:
        """Put the mouse over an element.

        Args:
            bid: The element's ref in the page text.
        """
        return self.gfcr.hover(bid)

    def fill(self, bid: str, value: str) -> str:
        """Set the text of an input, text area or editable element to `value`.

        Args:
            bid: The field's ref in the page text.
            value: The new text.
        """
        return self.gfcr.fill(bid, value)

    def clear(self, bid: str) -> str:
        """Empty a text field.

        Args:
            bid: The field's ref in the page text.
        """
        return self.gfcr.fill(bid, "")

    def select_option(self, bid: str, options: str | list[str]) -> str:
        """Choose one option (a text) or several (a list) of a <select> list, by label or value.

        Args:
            bid: The list's ref in the page text.
            options: The option, or a list of options for a multiple-choice list.
        """
        self.episode.on_page(lambda tab: tab.select(bid, options))
        return f"Selected {options!r} in {bid}."

    def check(self, bid: str) -> str:
        """Make sure a checkbox or radio button is checked.

        Args:
            bid: The checkbox's ref in the page text.
        """
        self.episode.on_page(lambda tab: tab.set_checked(bid, True))
        return f"Checked {bid}."

    def uncheck(self, bid: str) -> str:
        """Make sure a checkbox is not checked.

        Args:
            bid: The checkbox's ref in the page text.
        """
        self.episode.on_page(lambda tab: tab.set_checked(bid, False))
        return f"Unchecked {bid}."

    def focus(self, bid: str) -> str:
        """Give an element the keyboard focus.

        Args:
            bid: The element's ref in the page text.
        """
        self.episode.on_page(lambda tab: tab.focus(bid))
        return f"Focused {bid}."

    def press(self, bid: str, key_comb: str) -> str:
        """Focus an element and press a key or a combination such as "Control+a" or "Shift+Tab".

        Args:
            bid: The element's ref in the page text.
            key_comb: Key names joined by "+": "Enter", "Backspace", "ArrowDown", "a", "Control+a".
        """
        self.episode.on_page(lambda tab: tab.press(key_comb, bid))
        return f"Pressed {key_comb} on {bid}."

    def drag_and_drop(self, from_bid: str, to_bid: str) -> str:
        """Drag one element with the left button and drop it on another.

        Args:
            from_bid: The ref of the element to drag.
            to_bid: The ref of the element to drop it on.
        """
        return self.gfcr.drag_and_drop(from_bid, to_bid)

    def scroll(self, delta_x: float, delta_y: float) -> str:
        """Turn the mouse wheel: positive amounts scroll right and down, in pixels.

        Args:
            delta_x: Pixels to the right (negative: left).
            delta_y: Pixels down (negative: up).
        """
        return self.gfcr.scroll(delta_x, delta_y)

    def mouse_move(self, x: float, y: float) -> str:
        """Move the mouse to a point of the viewport.

        Args:
            x: Pixels from the left edge.
            y: Pixels from the top edge.
        """
        return self.gfcr.mouse_move(x, y)

    def mouse_click(self, x: float, y: float, button: Button = "left") -> str:
        """Click at a point of the viewport.

        Args:
            x: Pixels from the left edge.
            y: Pixels from the top edge.
            button: "left", "middle" or "right".
        """
        return self.gfcr.mouse_click(x, y, button)

    def mouse_dblclick(self, x: float, y: float, button: Button = "left") -> str:
        """Double-click at a point of the viewport.

        Args:
            x: Pixels from the left edge.
            y: Pixels from the top edge.
            button: "left", "middle" or "right".
        """
        return self.gfcr.mouse_click(x, y, button, clicks=2)

    def mouse_down(self, x: float, y: float, button: Button = "left") -> str:
        """Move the mouse to a point and press a button, holding it.

        Args:
            x: Pixels from the left edge.
            y: Pixels from the top edge.
            button: "left", "middle" or "right".
        """
        return self.gfcr.mouse_down(x, y, button)

    def mouse_up(self, x: float, y: float, button: Button = "left") -> str:
        """Move the mouse to a point and release a button.

        Args:
            x: Pixels from the left edge.
            y: Pixels from the top edge.
            button: "left", "middle" or "right".
        """
        return self.gfcr.mouse_up(x, y, button)

    def mouse_drag_and_drop(self, from_x: float, from_y: float, to_x: float, to_y: float) -> str:
        """Press the left button at one point, move to another and release it there.

        Args:
            from_x: Where the drag starts, pixels from the left edge.
            from_y: Where the drag starts, pixels from the top edge.
            to_x: Where it ends, pixels from the left edge.
            to_y: Where it ends, pixels from the top edge.
        """
        return self.gfcr.drag_and_drop([from_x, from_y], [to_x, to_y])

    def keyboard_press(self, key: str) -> str:
        """Press a key or combination ("Enter", "Control+a") on whatever has the focus.

        Args:
            key: Key names joined by "+".
        """
        return self.gfcr.press(key)

    def keyboard_type(self, text: str) -> str:
        """Type text key by key into whatever has the focus.

        Args:
            text: The text to type.
        """
        return self.gfcr.type_text(text)

    def keyboard_insert_text(self, text: str) -> str:
        """Insert text at once into whatever has the focus, without key events.

        Args:
            text: The text to insert.
        """
        self.episode.on_page(lambda tab: tab.insert_text(text))
        return f"Inserted {len(text)} characters."

    def keyboard_down(self, key: str) -> str:
        """Press a key and keep it down (release it with keyboard_up).

        Args:
            key: The key's name, e.g. "Shift".
        """
        self.episode.on_page(lambda tab: tab.key_down(key))
        return f"Holding {key} down."

    def keyboard_up(self, key: str) -> str:
        """Release a key held down.

        Args:
            key: The key's name.
        """
        self.episode.on_page(lambda tab: tab.key_up(key))
        return f"Released {key}."

    def goto(self, url: str) -> str:
        """Open a page of the task's site, by path or by full URL.

        Args:
            url: The path or URL.
        """
        return self.gfcr.goto(url)

    def go_back(self) -> str:
        """Go back one page in the history."""
        return self.gfcr.back()

    def go_forward(self) -> str:
        """Go forward one page in the history."""
        self.episode.on_page(lambda tab: tab.forward())
        return "Went forward."

    def noop(self, wait_ms: float = 1000) -> str:
        """Do nothing for a while (at most 10 s per step), so the page can change.

        Args:
            wait_ms: How long to wait, in milliseconds.
        """
        return self.gfcr.noop(int(wait_ms))

    def send_msg_to_user(self, text: str) -> str:
        """Tell the user the answer (or that the task is done); this ends the task.

        Args:
            text: The message, e.g. the answer to the question asked.
        """
        return self.gfcr.answer(text)

    def report_infeasible(self, reason: str) -> str:
        """Say that the task cannot be done, and why; this ends the task.

        Args:
            reason: Why it cannot be done.
        """
        return self.gfcr.answer(reason)

    def new_tab(self) -> str:
        """Open a new tab (not available: the task has one tab)."""
        raise ToolError(ONE_TAB)

    def tab_focus(self, index: int) -> str:
        """Switch to another tab (not available: the task has one tab).

        Args:
            index: The tab's position.
        """
        raise ToolError(ONE_TAB)

    def tab_close(self) -> str:
        """Close the tab (not available: the task has one tab)."""
        raise ToolError(ONE_TAB)

    def upload_file(self, bid: str, file: str | list[str]) -> str:
        """Choose files in a file input (not available).

        Args:
            bid: The file input's ref.
            file: A path, or a list of paths.
        """
        raise ToolError(NO_FILES)

    def mouse_upload_file(self, x: float, y: float, file: str | list[str]) -> str:
        """Click a point and choose files in the file dialog it opens (not available).

        Args:
            x: Pixels from the left edge.
            y: Pixels from the top edge.
            file: A path, or a list of paths.
        """
        raise ToolError(NO_FILES)
