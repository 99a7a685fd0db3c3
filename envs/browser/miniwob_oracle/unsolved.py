"""Why the MiniWoB pages without a solver have none: what the observation lacks, or the page.

A text solver reads only the latest observation (goal and accessibility text); the screenshot
solvers (`gfcr.envs.browser.miniwob_oracle.screenshot`) solve the pages whose task is drawn, where
the env shows the page as a picture. These pages need something else too — a sub-pixel point for
the full score, a memory of earlier pages, a race against the clock — or were not written. Most
stay doable by an agent: with the pointer actions at the screenshot's pixels
(`observation="screenshot"`), or with the conversation's history.
"""

from __future__ import annotations

VISION = "a vision agent can act on the screenshot"
# Pages that score a point's distance or an angle's error: the screenshot shows the points, but a
# click lands on a whole pixel, and the page's full score needs an exact one.
PARTIAL = (
    "the screenshot shows what it needs, but the full score needs an exact point, which whole-pixel clicks"
)
WHY_UNSOLVED: dict[str, str] = {
    "bisect-angle": "the angle is drawn on an SVG that the tree does not describe, only Submit; "
    f"{PARTIAL} may not reach (the score is the bisector's angular error, in floating point; not written)",
    "chase-circle": "real time: the reward counts every millisecond the pointer is outside a moving circle "
    "whose position the tree does not give (repeated mouse_move on the screenshot)",
    "circle-center": "the circle is drawn on an SVG that the tree does not describe, only Submit; "
    f"{PARTIAL} never reach: the page measures the click from a point half a pixel off the centre, so "
    "the best click scores (r - 0.7) / r, about 0.97",
    "click-checkboxes-soft": 'the goal names synonyms of the labels ("scarlet" for "red"): matching them '
    "needs a lexicon, which a language model has",
    "daily-calendar": "a drag that starts and ends on one cell sends no mouse move, so the event is never "
    "drawn; a solver from refs was not finished (a vision agent can drag at pixels)",
    "drag-cube": f"the tree lists the cube's six faces alike, whichever faces the user ({VISION})",
    "draw-circle": f"the target is drawn on an SVG that the tree does not describe ({VISION})",
    "draw-line": f"the target is drawn on an SVG that the tree does not describe ({VISION})",
    "find-midpoint": "the two points are drawn on an SVG that the tree does not describe; "
    f"{PARTIAL} reach only where the midpoint falls on a whole pixel",
    "hot-cold": "the HOT/WARM/COLD feedback is text, but a search needs the points tried before: an agent "
    "with the conversation's history can, a solver of the latest page cannot",
    "hover-shape": "the page never pays: MiniWoB 1.1.0 left its reward a TODO (its score is computed "
    "and never given to core.endEpisode), so the episode never ends, whatever an agent does",
    "moving-items": f"the moving circles are bare SVG shapes with no node in the tree ({VISION})",
    "right-angle": "the points are drawn on an SVG that the tree does not describe, only Submit; "
    f"{PARTIAL} may not reach (the score is the error from a right angle, in floating point; not written)",
    "simon-says": "the sequence shows as a flashing colour on unnamed buttons and must be remembered "
    "(a vision agent with the history)",
    "text-editor": "the colour swatches are nameless buttons, so the colour goals cannot be read from the "
    "tree (bold, italic and underline could be done with the keyboard; not written)",
    "use-colorwheel-2": "the target colour exists only as a swatch's background; the screenshot shows it, "
    "and typing its hex digits into the picker earns 1.0, but the page pays 1 minus the mean channel error "
    "for any colour submitted (about 0.6 for a blind Submit; use-colorwheel, in the text set, has the same "
    "rule): junk is paid, so the vision set leaves it out",
    "tic-tac-toe": "the X and O marks are CSS images: every square is the same nameless button; a game of "
    f"several turns against the page's moves, which a screenshot solver's one plan cannot follow ({VISION})",
}
