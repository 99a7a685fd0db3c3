"""Helpers the browser tests share: running a script on an env's page as the page's own would run,
and reading whether a page shows a task."""

from __future__ import annotations

from typing import Any

from gfcr.envs.browser.snapshot import PageView


def on_page(env: Any, script: str) -> Any:
    """What `script` (a JavaScript function's source) returns, evaluated on the env's page."""
    got = []

    async def run(tab):
        got.append(await tab.page.evaluate(script))

    env.unwrapped.on_page(run)
    return got[0]


def shows_a_task(observation: str) -> bool:
    """Whether the last page in `observation` shows its goal and at least one element to act on."""
    page = PageView.parse(observation)
    return bool(page.goal.strip()) and any(node.ref is not None for node in page.root.walk())
