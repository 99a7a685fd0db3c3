"""How the agent is shown the page: as text, as a screenshot, or both (the env's `observation=`).

- "text" (the default): the goal, the page's path and its accessibility text, whose refs the
  element actions take;
- "screenshot": the goal and the path as text, and the page as a PNG of the 800 × 600 viewport,
  for vision-language agents. Its pixels are the viewport's CSS pixels, so the pointer actions
  take them as they are: x from the left edge, y from the top. With `set_of_marks`, each element
  an agent can act on is boxed on it and labelled with its ref (`gfcr.envs.browser.marks`);
- "both": the text and the screenshot.

`view_page` takes what an episode shows after each step; `View` is one such look at the page.

>>> print(reading_note("screenshot", marks=False))
The page is shown as a screenshot of the 800x600 viewport, not as text: x and y are its pixels, \
counted from its top-left corner (whole pixels), so what is drawn at (x, y) is clicked with \
mouse_click(x, y). Act with the pointer and the keyboard.
"""

from __future__ import annotations

from dataclasses import dataclass

from gfcr.core import Image
from gfcr.envs.browser.marks import Box, capture
from gfcr.envs.browser.snapshot import render_page
from gfcr.envs.browser.tab import VIEWPORT, Tab

OBSERVATIONS = ("text", "screenshot", "both")
WIDTH, HEIGHT = VIEWPORT["width"], VIEWPORT["height"]
SCREENSHOT_SHAPE = (HEIGHT, WIDTH)  # (H, W): the screenshot's pixels in a text_and_image observation


@dataclass(frozen=True)
class Showing:
    """What an episode shows of the page after each step."""

    text: bool = True  # the accessibility text with refs
    picture: bool = False  # a screenshot
    marks: bool = False  # set-of-marks drawn on the screenshot

    @classmethod
    def of(cls, observation: str, marks: bool = False, picture: bool = False) -> Showing:
        """What the `observation` mode shows; `picture`: a screenshot in any mode (for `info`)."""
        return cls(observation != "screenshot", picture or marks or observation != "text", marks)


TEXT = Showing()  # the page's text alone


@dataclass(frozen=True)
class View:
    """One look at the page: its text, its screenshot (None if not taken, or `error` says why it
    failed) and, with set-of-marks, the boxes drawn on it (ref -> x, y, width, height)."""

    text: str
    image: Image | None = None
    marks: dict[str, Box] | None = None
    error: str | None = None


async def view_page(tab: Tab, goal: str, showing: Showing) -> View:
    """The page in `tab` now, as `showing` says: the goal, the path, the text and/or the screenshot."""
    text = render_page(goal, tab.path, await tab.snapshot() if showing.text else None)
    if not showing.picture:
        return View(text)
    try:
        png, boxes = await capture(tab, showing.marks)
    except Exception as e:  # a picture of a page that just died: the step goes on without it
        return View(text, error=f"the screenshot failed: {e}")
    return View(text, Image(png, "image/png"), boxes)


def reading_note(observation: str, marks: bool) -> str:
    """What the prompt says, after the actions, about a page shown as a screenshot ("" in text mode)."""
    if observation == "text":
        return ""
    pixels = (
        "x and y are its pixels, counted from its top-left corner (whole pixels), so what is drawn "
        "at (x, y) is clicked with mouse_click(x, y)."
    )
    if observation == "both":
        note = f"The screenshot below shows the same page as the text ({WIDTH}x{HEIGHT} viewport): {pixels}"
    else:
        note = f"The page is shown as a screenshot of the {WIDTH}x{HEIGHT} viewport, not as text: {pixels}"
    if marks:
        return f'{note} Each element you can act on is boxed and labelled with its ref, e.g. click("e5").'
    return note if observation == "both" else f"{note} Act with the pointer and the keyboard."
