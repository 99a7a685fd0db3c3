"""The solvers' registry and the helpers they share: reading the goal, finding and acting on nodes."""

from __future__ import annotations

import re
from collections.abc import Callable

from gfcr.envs.browser.actions import format_call as call
from gfcr.envs.browser.snapshot import Node, PageView

Solver = Callable[[PageView], list[str]]
SOLVERS: dict[str, Solver] = {}
ORDINAL = re.compile(r"(\d+)(?:st|nd|rd|th)")


def next_actions(page_name: str, page: PageView) -> list[str]:
    """The solver's next actions for MiniWoB page `page_name`; empty if it has no solver."""
    solver = SOLVERS.get(page_name)
    return solver(page) if solver else []


def solves(*pages: str) -> Callable[[Solver], Solver]:
    def register(solver: Solver) -> Solver:
        for page in pages:
            SOLVERS[page] = solver
        return solver

    return register


def quoted(goal: str) -> list[str]:
    """The double-quoted strings of the goal, in order."""
    return re.findall(r'"([^"]*)"', goal)


def ordinal(goal: str) -> int:
    """The first ordinal of the goal as an index: "the 3rd textbox" -> 2."""
    match = ORDINAL.search(goal)
    return int(match.group(1)) - 1 if match else 0


def ref(node: Node | None) -> str:
    if node is None or node.ref is None:
        raise LookupError("the element the solver needs is not on the page")
    return node.ref


def click(node: Node | None) -> str:
    return call("click", ref(node))


def fill(node: Node | None, text: str) -> str:
    return call("fill", ref(node), text)


def submit(page: PageView, name: str = "Submit") -> str:
    return click(page.find("button", name))


def listed(text: str) -> list[str]:
    """ "A, B and C" -> ["A", "B", "C"] ("nothing" -> [])."""
    text = text.strip()
    return [] if text == "nothing" else [part.strip() for part in re.split(r",| and ", text) if part.strip()]


def textboxes(page: PageView) -> list[Node]:
    return page.find_all("textbox")
