"""`Tab`: one episode's browser context and page, confined to one origin.

Every method is a coroutine for the browser host's loop (`gfcr.envs.browser.host`). A tab is:

- confined: a route aborts every request that does not go to its own origin (a regex that the
  browser matches itself, so requests to the origin never round-trip to Python); service workers
  are blocked, downloads refused, new windows closed, dialogs accepted — each noted in `notes`
  so the agent is told;
- settled by events, never by fixed sleeps: after an action, a main-frame navigation it started
  is awaited until the new document's `load` (or the request's failure), then the page's requests
  still in flight;
- addressed by the stable element references of Playwright's AI-mode accessibility snapshot
  (`[ref=e12]`), which the actions take.
"""

from __future__ import annotations

import asyncio
import re
import weakref
from typing import Any
from urllib.parse import urljoin, urlsplit

from gfcr.envs.browser.server import BLANK
from gfcr.errors import ToolError

REF = re.compile(r"(?:f\d+)?e\d+")
VIEWPORT = {"width": 800, "height": 600}
MAX_WAIT_MS = 10_000
POPUP_NOTE = "The page tried to open a new window; it was closed."


class Tab:
    """A fresh browser context with one page on `origin` (build it with `await Tab.open(...)`)."""

    def __init__(self, context: Any, page: Any, origin: str, timeout_ms: int) -> None:
        self.context = context
        self.page = page
        self.origin = origin
        self.timeout_ms = timeout_ms
        self.notes: list[str] = []  # events the agent did not ask for: dialogs, blocked requests …
        self.crashed = False
        self.session: str | None = None  # the app session its cookie names, if any
        self._navigation: asyncio.Future[None] | None = None
        self._popups_reported = 0  # new windows reported by their blocked first request, not yet closed
        self._popups_closed = asyncio.Event()  # set whenever none is: a step returns after they close
        self._popups_closed.set()
        self._loading = 0  # requests of the page in flight
        self._loaded = asyncio.Event()  # set whenever none is
        self._loaded.set()

    @classmethod
    async def open(cls, browser: Any, origin: str, *, timeout_ms: int = 5_000) -> Tab:
        """A new context on `browser`, confined to `origin`, with one blank page."""
        context = await browser.new_context(
            viewport=VIEWPORT, service_workers="block", accept_downloads=False
        )
        tab = cls(context, None, origin, timeout_ms)
        tab.set_timeout(timeout_ms)
        foreign = re.compile("^(?!" + re.escape(origin) + "(?:/|$))")
        await context.route(foreign, tab._block)
        await context.route_web_socket(foreign, lambda ws: ws.close())
        tab.page = page = await context.new_page()
        context.on("page", tab._close_popup)
        page.on("dialog", tab._accept_dialog)
        page.on("download", lambda d: tab.notes.append(f"A download ({d.suggested_filename}) was refused."))
        page.on("crash", lambda _: setattr(tab, "crashed", True))
        page.on("request", tab._on_request)
        page.on("requestfinished", tab._on_request_done)
        page.on("requestfailed", tab._on_request_failed)
        page.on("load", lambda _: tab._navigated())
        # Wait on the origin itself: the renderer for the site starts now, and the task's page does
        # not swap processes (and connections) when it loads.
        await page.goto(origin + BLANK)
        return tab

    def set_timeout(self, timeout_ms: int) -> None:
        """How long an action may wait for its element (navigations get twice as long)."""
        self.timeout_ms = timeout_ms
        self.context.set_default_timeout(timeout_ms)
        self.context.set_default_navigation_timeout(timeout_ms * 2)

    # -- what the agent can do -------------------------------------------------------------------

    async def goto(self, url: str) -> None:
        """Load `url` (a path, or an absolute URL on the tab's own origin)."""
        target = urljoin(self.origin + "/", url)
        if not _same_origin(target, self.origin):
            raise ToolError(f"goto({url!r}): only this task's own site is reachable; give a path such as '/'")
        await self._act(self.page.goto(target, wait_until="load"))

    async def click(self, ref: str) -> None:
        await self._act((await self._find(ref)).click())

    async def fill(self, ref: str, text: str) -> None:
        await self._act((await self._find(ref)).fill(text))

    async def select(self, ref: str, option: str) -> None:
        """Choose the option whose label (or else value) is `option` in a <select>."""
        element = await self._find(ref)
        options = await element.evaluate("e => Array.from(e.options || [], o => [o.label.trim(), o.value])")
        if not options:
            raise ToolError(f"select({ref!r}, {option!r}): {ref} is not a drop-down list")
        value = _option_value(options, option.strip())
        if value is None:
            labels = [label for label, _ in options]
            raise ToolError(f"select({ref!r}, {option!r}): no such option; the options are {labels}")
        await self._act(element.select_option(value=value))

    async def press(self, key: str) -> None:
        """Press `key` on the focused element (the page's body when none is).

        Through a locator, not `page.keyboard`: Playwright then waits for a navigation the key
        requested (Enter in a form schedules its submission after the key event returns).
        """
        focused = self.page.locator("*:focus")
        target = focused if await focused.count() == 1 else self.page.locator("body")
        await self._act(target.press(key))

    async def scroll(self, dx: float, dy: float) -> None:
        await self._act(self.page.mouse.wheel(dx, dy))

    async def back(self) -> None:
        await self._act(self.page.go_back(wait_until="load"))

    async def wait(self, ms: int) -> None:
        """Let the page run for `ms` milliseconds (capped at 10 s), for pages that change by timers."""
        await asyncio.sleep(min(max(ms, 0), MAX_WAIT_MS) / 1000)

    # -- what the env reads ----------------------------------------------------------------------

    @property
    def path(self) -> str:
        """The page's URL relative to the origin ('/shop/cart?x=1'), or the full URL elsewhere."""
        url = self.page.url
        if not _same_origin(url, self.origin):
            return url
        return url[len(self.origin) :] or "/"

    async def snapshot(self) -> str:
        """The page as accessibility-tree text with element references (`[ref=e5]`)."""
        for _ in range(3):
            try:
                return await self.page.aria_snapshot(mode="ai")
            except Exception as e:  # a navigation replaced the document mid-snapshot: read the new one
                if "context was destroyed" not in str(e) and "navigat" not in str(e):
                    raise
                await self.page.wait_for_load_state("load")
        return await self.page.aria_snapshot(mode="ai")

    async def boxes(self) -> str:
        """The snapshot with each element's bounding box (`[box=x,y,w,h]`), for set-of-marks."""
        return await self.page.aria_snapshot(mode="ai", boxes=True)

    async def screenshot(self) -> bytes:
        return await self.page.screenshot(type="png")

    async def close(self) -> None:
        try:
            await self.context.close()
        except Exception:  # the browser died with the context in it: nothing to close
            pass

    # -- machinery ---------------------------------------------------------------------------------

    async def _find(self, ref: str) -> Any:
        if not isinstance(ref, str) or not REF.fullmatch(ref):
            raise ToolError(f"{ref!r} is not an element reference; use a ref from the page, like 'e5'")
        element = self.page.locator(f"aria-ref={ref}")
        if await element.count() == 0:
            raise ToolError(f"there is no element {ref} on this page; use a ref from the latest page")
        return element

    async def _act(self, action: Any) -> None:
        """Await a Playwright action, then let the page settle; Playwright errors become `ToolError`."""
        try:
            await action
        except ToolError:
            raise
        except Exception as e:
            raise ToolError(_short_error(e)) from e
        await self._settle()

    async def rendered(self) -> None:
        """Wait for the next frame to be drawn, then for what drawing it requested (images, fonts)."""
        await self.page.evaluate("() => new Promise(done => requestAnimationFrame(() => done()))")
        await self._wait(self._loaded.wait(), self.timeout_ms)

    async def _settle(self) -> None:
        try:  # one round trip to the page: the events the action caused arrive before its answer
            await self.page.evaluate("0")
        except Exception:  # the document is being replaced: the navigation wait below covers it
            pass
        if self._navigation is not None:
            await self._wait(asyncio.shield(self._navigation), self.timeout_ms * 2)
            self._navigation = None
        await self._wait(self._loaded.wait(), self.timeout_ms)
        await self._wait(self._popups_closed.wait(), self.timeout_ms)

    async def _wait(self, event: Any, timeout_ms: int) -> None:
        try:
            await asyncio.wait_for(event, timeout_ms / 1000)
        except TimeoutError:
            if "The page is still loading." not in self.notes:
                self.notes.append("The page is still loading.")

    def _on_request(self, request: Any) -> None:
        self._loading += 1
        self._loaded.clear()
        if request.is_navigation_request() and _frame_of(request) == self.page.main_frame:
            if self._navigation is None or self._navigation.done():
                self._navigation = asyncio.get_running_loop().create_future()

    def _on_request_done(self, request: Any) -> None:
        self._loading = max(self._loading - 1, 0)
        if self._loading == 0:
            self._loaded.set()

    def _on_request_failed(self, request: Any) -> None:
        self._on_request_done(request)
        if request.is_navigation_request() and _frame_of(request) == self.page.main_frame:
            self._navigated()

    def _navigated(self) -> None:
        if self._navigation is not None and not self._navigation.done():
            self._navigation.set_result(None)

    async def _block(self, route: Any) -> None:
        url = route.request.url
        note = f"Blocked a request to {_origin_of(url)}: only this task's own site is reachable."
        if not url.startswith(("data:", "blob:", "about:")) and note not in self.notes:
            self.notes.append(note)
        if route.request.is_navigation_request() and _frame_of(route.request) is None:
            # a new window's first request comes before its frame (and before the "page" event that
            # closes the window): report the window now, so the agent hears of it this step
            self._popups_reported += 1
            self._popups_closed.clear()
            self.notes.append(POPUP_NOTE)
        await route.abort("blockedbyclient")

    async def _accept_dialog(self, dialog: Any) -> None:
        self.notes.append(f"A {dialog.type} dialog said {dialog.message!r}; it was accepted.")
        await dialog.accept()

    async def _close_popup(self, page: Any) -> None:
        if page is self.page:
            return
        reported = self._popups_reported > 0
        if not reported:
            self.notes.append(POPUP_NOTE)
        try:
            await page.close()
        finally:
            if reported:
                self._popups_reported -= 1
                if self._popups_reported == 0:
                    self._popups_closed.set()


def _option_value(options: list[list[str]], wanted: str) -> str | None:
    """The value of the option labelled `wanted`, else valued `wanted`, else labelled so in any case."""
    tests = (
        lambda label, value: label == wanted,
        lambda label, value: value == wanted,
        lambda label, value: label.lower() == wanted.lower(),
    )
    return next((value for test in tests for label, value in options if test(label, value)), None)


def _frame_of(request: Any) -> Any:
    """The request's frame; None for a new window's first navigation, sent before its frame exists."""
    try:
        return request.frame
    except Exception:
        return None


def _same_origin(url: str, origin: str) -> bool:
    return url == origin or url.startswith(origin + "/")


def _origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.netloc else url[:60]


def _short_error(error: Exception) -> str:
    """Playwright's message without its call log: the first line, without the API prefix."""
    text = str(error).strip()
    first = re.sub(r"^\w+\.\w+: ", "", text.splitlines()[0]) if text else type(error).__name__
    if not first.startswith("Timeout"):
        return first
    covered = re.search(r"(<[^>]{0,80}>).{0,40} intercepts pointer events", text)
    why = (
        f"another element, {covered.group(1)}, covers it"
        if covered
        else "it stayed hidden, covered or disabled"
    )
    return f"{first}: {why}"


_SPARES: weakref.WeakKeyDictionary[Any, asyncio.Future[Tab]] = weakref.WeakKeyDictionary()


async def fresh_tab(browser: Any, origin: str, timeout_ms: int) -> Tab:
    """A never-used tab on `origin`: the one `browser` opened ahead, and the next is opened ahead.

    Opening a page starts a renderer process, the slowest part of a reset; doing it ahead, while
    the agent works, takes it off the next reset's path. Every episode still gets a new context.
    """
    spare, tab = _SPARES.pop(browser, None), None
    if spare is not None:
        try:
            tab = await spare
        except Exception:  # the browser died meanwhile: open one now (the caller relaunched it)
            tab = None
        if tab is not None and (tab.origin != origin or tab.crashed or tab.page.is_closed()):
            await tab.close()
            tab = None
    if tab is None:
        tab = await Tab.open(browser, origin)
    ahead = asyncio.ensure_future(Tab.open(browser, origin))
    ahead.add_done_callback(lambda f: f.cancelled() or f.exception())  # a failure is handled when taken
    _SPARES[browser] = ahead
    tab.set_timeout(timeout_ms)
    return tab
