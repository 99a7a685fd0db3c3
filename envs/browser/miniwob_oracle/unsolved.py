"""Why the MiniWoB pages without a solver have none: what the observation lacks.

A solver reads only the latest observation (goal and accessibility text). These pages need what
that text does not carry — colours, shapes, positions drawn on an SVG or canvas, or a memory of
earlier pages. Each stays doable by an agent: with the pointer actions at the screenshot's
pixels (`screenshot=True` or `set_of_marks=True`), or with the conversation's history.
"""

from __future__ import annotations

VISION = "a vision agent can act on the screenshot"
WHY_UNSOLVED: dict[str, str] = {
    "bisect-angle": f"the angle is drawn on an SVG that the tree does not describe, only Submit ({VISION})",
    "chase-circle": "real time: the reward counts every millisecond the pointer is outside a moving circle "
    "whose position the tree does not give (repeated mouse_move on the screenshot)",
    "circle-center": f"the circle is drawn on an SVG that the tree does not describe, only Submit ({VISION})",
    "click-checkboxes-soft": 'the goal names synonyms of the labels ("scarlet" for "red"): matching them '
    "needs a lexicon, which a language model has",
    "click-color": f"the boxes differ only by colour, which the accessibility tree does not carry ({VISION})",
    "click-shades": f"twelve unnamed buttons that differ only by shade ({VISION})",
    "click-shape": f"the goal names colour and size, which the tree lacks; shapes have no name ({VISION})",
    "click-widget": "a text input and a text area both read as a textbox with their text: the tree cannot "
    f"tell them apart ({VISION}: the area's resize handle)",
    "count-shape": f"colour, size and kind of the shapes are not in the tree ({VISION})",
    "count-sides": f"the shape is not in the tree, only the answer buttons ({VISION})",
    "daily-calendar": "a drag that starts and ends on one cell sends no mouse move, so the event is never "
    "drawn; a solver from refs was not finished (a vision agent can drag at pixels)",
    "drag-cube": f"the tree lists the cube's six faces alike, whichever faces the user ({VISION})",
    "drag-shapes": f"the shapes are identical unnamed buttons: circles cannot be told apart ({VISION})",
    "drag-shapes-2": f"the shapes are identical unnamed buttons: their kinds cannot be told apart ({VISION})",
    "draw-circle": f"the target is drawn on an SVG that the tree does not describe ({VISION})",
    "draw-line": f"the target is drawn on an SVG that the tree does not describe ({VISION})",
    "find-midpoint": f"the two points are drawn on an SVG that the tree does not describe ({VISION})",
    "grid-coordinate": f"the 25 grid points are unnamed buttons, placed only in the picture ({VISION})",
    "hot-cold": "the HOT/WARM/COLD feedback is text, but a search needs the points tried before: an agent "
    "with the conversation's history can, a solver of the latest page cannot",
    "hover-shape": f"which of the unnamed squares is highlighted shows only as a colour ({VISION})",
    "identify-shape": f"circles, rectangles and triangles are identical unnamed buttons ({VISION})",
    "moving-items": f"the moving circles are bare SVG shapes with no node in the tree ({VISION})",
    "number-checkboxes": f"the digit's pattern is an image without alt text ({VISION})",
    "right-angle": f"the points are drawn on an SVG that the tree does not describe, only Submit ({VISION})",
    "simon-says": "the sequence shows as a flashing colour on unnamed buttons and must be remembered "
    "(a vision agent with the history)",
    "text-editor": "the colour swatches are nameless buttons, so the colour goals cannot be read from the "
    "tree (bold, italic and underline could be done with the keyboard; not written)",
    "tic-tac-toe": f"the X and O marks are CSS images: every square is the same nameless button ({VISION})",
    "use-colorwheel-2": f"the target colour exists only as a swatch's background ({VISION})",
    "visual-addition": f"the blocks to count are empty elements that the tree does not show ({VISION})",
}
