"""Scripted solvers of MiniWoB tasks; most read only the observation: the goal and the page tree.

Each solver maps the latest page to the next actions, like an agent would: it parses the goal
("Enter "Keli" into the text field…"), finds the elements by role and name, and answers with
calls such as `fill("e6", "Keli")`. Multi-step tasks (searching, guessing, autocomplete) decide from
what the page shows now, so a solver needs no memory. `SOLVED_PAGES` lists the pages covered;
the tests check that each reaches reward 1.0. `SCREENSHOT_PAGES` are the pages whose task is drawn
(a colour, a shape, a count of blocks): their solvers (`screenshot`) act at the screenshot's pixels
where the env shows the page as a picture. `WHY_UNSOLVED` says, for every other page, what the
observation lacks (a sub-pixel point, a memory of earlier pages) or that a solver was not written.

>>> from gfcr.envs.browser.snapshot import render_page
>>> page = PageView.parse(render_page('Enter "Keli" into the text field and press Submit.', "/",
...     '- textbox [ref=e6]\\n- button "Submit" [ref=e7]'))
>>> next_actions("enter-text", page)
['fill("e6", "Keli")', 'click("e7")']
"""

from __future__ import annotations

from gfcr.envs.browser.miniwob_oracle import clicking, forms, menus, pointer, social, widgets  # noqa: F401  (they register)
from gfcr.envs.browser.miniwob_oracle.registry import SOLVERS, PageView, next_actions
from gfcr.envs.browser.miniwob_oracle.screenshot import SCREENSHOT_PAGES, plan_calls, plan_script
from gfcr.envs.browser.miniwob_oracle.unsolved import WHY_UNSOLVED

SOLVED_PAGES: tuple[str, ...] = tuple(sorted(SOLVERS))

__all__ = [
    "SCREENSHOT_PAGES",
    "SOLVED_PAGES",
    "SOLVERS",
    "WHY_UNSOLVED",
    "PageView",
    "next_actions",
    "plan_calls",
    "plan_script",
]
