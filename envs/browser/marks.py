"""Set-of-marks: a screenshot with a numbered box around each element an agent can act on.

The labels are the elements' refs (`e5`), the same the page text and the actions use, so a
vision-language model can read a ref off the picture and call `click("e5")`. Boxes come from the
accessibility snapshot with `boxes=True` (`[box=x,y,width,height]`, CSS pixels of the viewport).
"""

from __future__ import annotations

import io

from gfcr.envs.browser.snapshot import Node, parse_snapshot

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


def marked(node: Node) -> bool:
    """Whether `node` gets a mark: an actionable role, or anything the page styles as clickable."""
    return node.ref is not None and (node.role in ACTIONABLE or node.attrs.get("cursor") == "pointer")


def draw_marks(png: bytes, snapshot_with_boxes: str) -> bytes:
    """`png` with a labelled rectangle over each marked element of the snapshot; PNG bytes back."""
    from PIL import Image, ImageDraw

    image = Image.open(io.BytesIO(png)).convert("RGB")
    draw = ImageDraw.Draw(image)
    for node in parse_snapshot(snapshot_with_boxes).walk():
        box = node.attrs.get("box", "")
        if not marked(node) or box.count(",") != 3:
            continue
        x, y, width, height = (float(v) for v in box.split(","))
        if width <= 0 or height <= 0:
            continue
        draw.rectangle((x, y, x + width, y + height), outline=COLOR, width=2)
        label_width = 7 * len(node.ref or "") + 4
        top = max(y - 12, 0)
        draw.rectangle((x, top, x + label_width, top + 12), fill=COLOR)
        draw.text((x + 2, top), node.ref or "", fill=(255, 255, 255))
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()
