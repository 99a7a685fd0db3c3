"""The sites the browser env runs tasks on: MiniWoB's pages and gfcr's apps, by name.

>>> sorted(make_sites())
['booking', 'mail', 'miniwob', 'shop']
"""

from __future__ import annotations

from typing import Any

from gfcr.core import Task
from gfcr.envs.browser.apps import APPS, App
from gfcr.envs.browser.miniwob import MiniwobSite
from gfcr.envs.browser.server import COOKIE, loopback_server
from gfcr.envs.browser.site import Site, SiteJudgement
from gfcr.envs.browser.snapshot import PageView
from gfcr.envs.browser.tab import Tab


class AppSite:
    """Runs one of gfcr's apps: a server-side session per episode, judged on its state."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.name = app.name

    async def open(self, tab: Tab, task: Task) -> str:
        server = loopback_server()
        tab.session = server.open_session(self.app, self.app.initial_state(task))
        await tab.context.add_cookies([{"name": COOKIE, "value": tab.session, "url": tab.origin}])
        await tab.goto(task.metadata["start"])
        return task.prompt

    async def judge(self, tab: Tab, task: Task, answer: str | None) -> SiteJudgement:
        session = loopback_server().sessions[tab.session or ""]
        with session.lock:
            return self.app.judge(task, session.state, answer)

    async def final_state(self, tab: Tab, task: Task) -> dict[str, Any]:
        session = loopback_server().sessions[tab.session or ""]
        with session.lock:
            return self.app.dump_state(session.state)

    def judge_state(self, task: Task, state: dict[str, Any], answer: str | None) -> SiteJudgement:
        return self.app.judge(task, self.app.load_state(state), answer)

    def close(self, tab: Tab) -> None:
        loopback_server().close_session(tab.session)

    def next_actions(self, task: Task, page: PageView) -> list[str]:
        return self.app.next_actions(task, page)


def make_sites(miniwob_time_limit_s: float | None = None) -> dict[str, Site]:
    """Every site by name; `miniwob_time_limit_s` turns MiniWoB's own episode timer on."""
    return {
        "miniwob": MiniwobSite(miniwob_time_limit_s),
        **{name: AppSite(app) for name, app in APPS.items()},
    }
