"""Set-of-marks: a screenshot with a numbered box around each element an agent can act on.

The labels are the elements' refs (`e5`), the same the page text and the actions use, so a
vision-language model can read a ref off the picture and call `click("e5")`, or act at the pixels
it sees (`mouse_click(x, y)`): boxes come from the accessibility snapshot with `boxes=True`
(`[box=x,y,width,height]`, CSS pixels of the viewport, which are the screenshot's pixels).
`capture` takes the screenshot, marked or not, on the browser host's loop.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

from gfcr.envs.browser.snapshot import Node, parse_snapshot

if TYPE_CHECKING:
    from gfcr.envs.browser.tab import Tab

ACTIONABLE = frozenset(
    {
        "button",
        "link",
        "textbox",
        "searchbox",
        "checkbox",
        "radio",
        "combobox",
        "spinbutton",
        "slider",
        "switch",
        "tab",
        "menuitem",
        "listbox",
        "treeitem",
    }
)
COLOR = (230, 30, 90)
Box = tuple[float, float, float, float]  # x, y, width, height in the viewport's pixels


def marked(node: Node) -> bool:
    """Whether `node` gets a mark: an actionable role, or anything the page styles as clickable."""
    return node.ref is not None and (node.role in ACTIONABLE or node.attrs.get("cursor") == "pointer")


def mark_boxes(snapshot_with_boxes: str) -> dict[str, Box]:
    """Ref -> (x, y, width, height) of each marked element with a box on the viewport.

    >>> mark_boxes('- button "Go" [ref=e5] [box=10,20,80,30]\\n- generic [ref=e6] [box=0,0,5,5]')
    {'e5': (10.0, 20.0, 80.0, 30.0)}
    """
    boxes = {}
    for node in parse_snapshot(snapshot_with_boxes).walk():
        box = node.attrs.get("box", "")
        if not marked(node) or box.count(",") != 3:
            continue
        x, y, width, height = (float(v) for v in box.split(","))
        if width > 0 and height > 0:
            boxes[str(node.ref)] = (x, y, width, height)
    return boxes


def draw_marks(png: bytes, boxes: dict[str, Box]) -> bytes:
    """`png` with a labelled rectangle over each box of `boxes` (from `mark_boxes`); PNG bytes back."""
    from PIL import Image, ImageDraw

    image = Image.open(io.BytesIO(png)).convert("RGB")
    draw = ImageDraw.Draw(image)
    for ref, (x, y, width, height) in boxes.items():
        # the outline just outside the box and the label above it: a small element stays visible
        draw.rectangle((x - 2, y - 2, x + width + 1, y + height + 1), outline=COLOR, width=2)
        label_width = 7 * len(ref) + 4
        top = max(y - 14, 0)
        draw.rectangle((x - 2, top, x - 2 + label_width, top + 12), fill=COLOR)
        draw.text((x, top), ref, fill=(255, 255, 255))
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


async def capture(tab: Tab, set_of_marks: bool = False) -> tuple[bytes, dict[str, Box] | None]:
    """A screenshot of `tab` (PNG bytes) and None; with `set_of_marks`, the screenshot with the
    marks drawn on it and their boxes (from `mark_boxes`)."""
    png = await tab.screenshot()
    if not set_of_marks:
        return png, None
    boxes = mark_boxes(await tab.snapshot(boxes=True))
    return draw_marks(png, boxes), boxes
