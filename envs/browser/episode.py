"""`BrowserEpisode`: one episode in the browser, as the env's thread sees it.

It holds what the episode has — the browser host, the site, the task, the tab, the goal shown, the
agent's answer, a browser failure — and makes each of the env's calls on it blocking: the call is
a coroutine run on the host's event loop (`gfcr.envs.browser.host`) and waited for within a bound
derived from the actions' own timeout, so that an env stepped from any thread never hangs on a
hung browser. The tab outlives the episode: `end` releases what the site kept for the episode (an
app's session), and the next `open` recycles the tab (`gfcr.envs.browser.tab.fresh_tab`), which is
faster than a new one; `discard` closes it. A browser failure during an action is kept in
`error`: the step then truncates the episode and discards the tab, and the next `open` starts anew.

Usage (it launches a browser, so it is not run as a doctest):

    episode = BrowserEpisode(action_timeout_ms=5_000, showing=Showing(picture=True))
    episode.open(MiniwobSite(), task)
    episode.first_page                                # a View: the goal and the page as text, a screenshot
    episode.on_page(lambda tab: tab.click("e5"))
    judgement, view = episode.look()
    episode.end()                                     # the tab stays, for the next open to recycle
    episode.discard(wait=True)                        # closes it
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from gfcr.core import Task
from gfcr.envs.browser.host import BrowserHost, browser_host
from gfcr.envs.browser.server import loopback_server
from gfcr.envs.browser.site import Site, SiteJudgement
from gfcr.envs.browser.tab import MAX_WAIT_MS, Tab, fresh_tab
from gfcr.envs.browser.view import TEXT, Showing, View, view_page
from gfcr.errors import BrowserError, ToolError

logger = logging.getLogger(__name__)
CLOSE_TIMEOUT_S = 10.0


class BrowserEpisode:
    """The running episode of one env: its site, task and tab, and the blocking calls on them.

    `action_timeout_ms` is each browser action's own timeout (Playwright's); `executable_path` and
    `headless` pick the browser (`gfcr.envs.browser.host.browser_host`); `showing` what a look at
    the page shows (`gfcr.envs.browser.view`).
    """

    def __init__(
        self,
        action_timeout_ms: int,
        executable_path: str | None = None,
        headless: bool = True,
        showing: Showing = TEXT,
    ) -> None:
        self.action_timeout_ms = action_timeout_ms
        self.browser_settings = (executable_path, headless)
        self.showing = showing
        self.host: BrowserHost | None = None
        self.site: Site | None = None
        self.task: Task | None = None
        self.tab: Tab | None = None
        self.goal = ""
        self.first_page = View("")  # the page as the episode opened: the goal first, then the page
        self.answer: str | None = None  # the text of the agent's answer(...), which ends the task
        self.error: BrowserError | None = None
        self.wait_left_ms = MAX_WAIT_MS  # what noop may still wait in this step

    # -- beginning and end -----------------------------------------------------------------------

    def open(self, site: Site, task: Task) -> None:
        """Begin an episode of `task` on `site` (after `end` of the last one) in a tab as good as
        new; the page's text is then in `first_page`. `BrowserError` if the page cannot be opened.
        """
        try:
            self._open(site, task)
        except Exception:  # a browser that died since the last episode: the second try relaunches it
            logger.info("opening %s failed once; trying again", task.id, exc_info=True)
            self.end()  # what the failed try opened
            try:
                self._open(site, task)
            except Exception as e:
                raise BrowserError(f"cannot open task {task.id!r} in the browser: {e}") from e

    def end(self) -> None:
        """The episode is over: the site forgets what it kept for it (an app's session). The tab
        stays as it is (a screenshot still shows the last page), for the next `open` to recycle."""
        if self.tab is not None and self.site is not None:
            self.site.close(self.tab)

    def discard(self, wait: bool = False) -> None:
        """Close the tab (and the site's session); without `wait`, in the background."""
        tab, self.tab = self.tab, None
        if tab is None or self.host is None:
            return
        if self.site is not None:
            self.site.close(tab)
        if wait:
            try:
                self.host.run(tab.close(), CLOSE_TIMEOUT_S)
            except BrowserError:
                pass
        else:
            self.host.spawn(tab.close())

    # -- calls during the episode ----------------------------------------------------------------

    def on_page(self, work: Callable[[Tab], Awaitable[object]]) -> None:
        """Run `work(tab)` on the episode's page; a browser failure or a crashed page is kept in
        `error` (so that the step truncates the episode), and a failure is raised as well."""
        tab = self._open_tab()
        try:
            self._started()[0].run(work(tab), self.timeout_s())
        except BrowserError as e:
            self.error = e
            raise
        if tab.crashed:
            self.error = BrowserError("the page crashed")

    def judge(self) -> SiteJudgement:
        """The site's judgement of the episode now."""
        host, site, task = self._started()
        return host.run(site.judge(self._open_tab(), task, self.answer), self.timeout_s())

    def look(self) -> tuple[SiteJudgement, View]:
        """The site's judgement now and the page as `showing` says, its text with the notes first
        (dialogs accepted, windows closed … since the last look)."""
        host, site, task = self._started()
        tab = self._open_tab()

        async def look() -> tuple[SiteJudgement, View]:
            judgement, view = await asyncio.gather(
                site.judge(tab, task, self.answer), view_page(tab, self.goal, self.showing)
            )
            notes, tab.notes = tab.notes, []
            return judgement, replace(view, text="\n".join([*notes, view.text]))

        return host.run(look(), self.timeout_s())

    def final_state(self) -> tuple[dict[str, Any], SiteJudgement]:
        """The episode's final state as recorded for `BrowserVerifier`, and the site's judgement of it."""
        host, site, task = self._started()
        site_state = host.run(site.final_state(self._open_tab(), task), self.timeout_s())
        state = {"site": site.name, "answer": self.answer, "site_state": site_state}
        return state, site.judge_state(task, site_state, self.answer)

    def picture(self) -> View | None:
        """The page's screenshot now (marked as `showing` says), without its text; None while no
        page is open. A failure to take it is in the view's `error`."""
        if (tab := self.tab) is None:
            return None
        showing = replace(self.showing, text=False, picture=True)
        try:
            return self._started()[0].run(view_page(tab, self.goal, showing), self.timeout_s())
        except Exception as e:  # a screenshot is extra: its failure must not fail the step
            return View("", error=str(e))

    def timeout_s(self, actions: int = 1) -> float:
        """A safety bound on one call to the browser: its actions' own timeouts, and a margin."""
        return actions * 3 * self.action_timeout_ms / 1000 + 10

    # -- machinery -------------------------------------------------------------------------------

    def _open(self, site: Site, task: Task) -> None:
        host = browser_host(*self.browser_settings)
        if host is not self.host:  # another process's host (after a fork), or none yet
            self.discard()
        self.host, self.site, self.task = host, site, task
        self.goal, self.first_page, self.answer, self.error = "", View(""), None, None  # none of the last's
        self.goal, self.first_page = host.run(self._load(), self.timeout_s(4))

    async def _load(self) -> tuple[str, View]:
        """In a fresh tab, the task's first page: the goal the site gives, and the page shown."""
        host, site, task = self._started()
        browser, origin = await host.browser(), loopback_server().origin
        self.tab = await fresh_tab(browser, origin, self.action_timeout_ms, used=self.tab)
        goal = await site.open(self.tab, task)
        return goal, await view_page(self.tab, goal, self.showing)

    def _started(self) -> tuple[BrowserHost, Site, Task]:
        """The browser host, the site and the task of the running episode; `ToolError` before any."""
        if self.host is None or self.site is None or self.task is None:
            raise ToolError("no page is open; call reset() first")
        return self.host, self.site, self.task

    def _open_tab(self) -> Tab:
        if self.tab is None:
            raise ToolError("no page is open; call reset() first")
        return self.tab
