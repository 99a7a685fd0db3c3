"""Solvers of the pages done with the pointer: dragging, sliding, drawing."""

from __future__ import annotations

from gfcr.envs.browser.actions import format_call as call
from gfcr.envs.browser.miniwob_oracle.base import ref, solves, submit
from gfcr.envs.browser.snapshot import PageView


@solves("drag-box")
def _drag_box(page: PageView) -> list[str]:
    small, large = ref(page.find("button", "s")), ref(page.find("button", "L"))
    return [call("drag_and_drop", small, large), submit(page)]
