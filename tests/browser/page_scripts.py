"""Helpers the browser tests share: running a script on an env's page as the page's own would run."""

from __future__ import annotations

from typing import Any


def on_page(env: Any, script: str) -> Any:
    """What `script` (a JavaScript function's source) returns, evaluated on the env's page."""
    got = []

    async def run(tab):
        got.append(await tab.page.evaluate(script))

    env.unwrapped.on_page(run)
    return got[0]
