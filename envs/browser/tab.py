"""`Tab`: an env's browser context and page, confined to one origin, recycled between episodes.

Every method is a coroutine for the browser host's loop (`gfcr.envs.browser.host`). A tab is:

- confined: a route aborts every request that does not go to its own origin (a regex that the
  browser matches itself, so requests to the origin never round-trip to Python); service workers
  are blocked, downloads refused, new windows closed, dialogs accepted — each noted in `notes`
  so the agent is told;
- settled by events, never by fixed sleeps: after an action, a main-frame navigation it started
  is awaited until the new document's `load` (or the request's failure), then the page's requests
  still in flight;
- addressed by the stable element references of Playwright's AI-mode accessibility snapshot
  (`[ref=e12]`), which the actions take;
- given a clipboard of its own: headless Chromium keeps one clipboard for the whole browser, which
  every context shares, so `press` saves what a copy or cut put there in the tab and puts it back
  before a paste, the three steps under one lock per browser (an episode never sees another's).
"""

from __future__ import annotations

import asyncio
import math
import re
import weakref
from collections.abc import Awaitable, Sequence
from typing import Any
from urllib.parse import urljoin, urlsplit

from gfcr.envs.browser.actionable import LISTENERS, reveal_actionable, revealed
from gfcr.envs.browser.server import BLANK
from gfcr.errors import ToolError

REF = re.compile(r"(?:f\d+)?e\d+")
FIRST_REF = re.compile(r"\[ref=(f\d+)?e\d+\]")  # in a snapshot: the main frame's (an iframe's come inside it)
VIEWPORT = {"width": 800, "height": 600}
MAX_WAIT_MS = 10_000
# Playwright types a key in 2-5 ms (a loaded machine, a page handling each key): 1,000 keys stay
# well inside an action's time, where 30,000 ran out of it
MAX_TYPED_CHARS = 1_000
POPUP_NOTE = "The page tried to open a new window; it was closed."
BUTTONS = ("left", "middle", "right")
MODIFIERS = ("Alt", "Control", "ControlOrMeta", "Meta", "Shift")
DRAG_STEPS = 10  # mouse moves between a drag's two ends: drag libraries want motion, not a jump
CLIPBOARD_KEYS = {"c": "copy", "x": "cut", "v": "paste", "insert": "copy"}  # after Control or Meta
SHIFT_CLIPBOARD_KEYS = {"insert": "paste", "delete": "cut"}


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
        self.episode: str | None = None  # the nonce a MiniWoB page's start marked its document with
        self._navigation: asyncio.Future[None] | None = None
        self._popups_reported = 0  # new windows reported by their blocked first request, not yet closed
        self._popups_closed = asyncio.Event()  # set whenever none is: a step returns after they close
        self._popups_closed.set()
        self._loading = 0  # requests of the page in flight
        self._loaded = asyncio.Event()  # set whenever none is
        self._loaded.set()
        self.clipboard = ""  # what this tab last copied or cut
        self._held_keys: list[str] = []  # pressed by key_down, not yet released
        self._held_buttons: set[str] = set()  # pressed by mouse_down, not yet released
        self._frame_prefix = ""  # Playwright's prefix of the latest snapshot's main-frame refs, left out
        self._cdp: Any = None  # a DevTools session on the page (`open` starts it), for what Playwright lacks

    @classmethod
    async def open(cls, browser: Any, origin: str, *, timeout_ms: int = 5_000) -> Tab:
        """A new context on `browser`, confined to `origin`, with one blank page."""
        context = await browser.new_context(
            viewport=VIEWPORT, service_workers="block", accept_downloads=False
        )
        tab = cls(context, None, origin, timeout_ms)
        tab.set_timeout(timeout_ms)
        await context.add_init_script(LISTENERS)
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
        # No HTTP or memory cache: each episode's page loads its images and style sheets as a new
        # context's would, so the waits for them see their requests (and nothing carries over).
        tab._cdp = await context.new_cdp_session(page)
        await tab._cdp.send("Network.setCacheDisabled", {"cacheDisabled": True})
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

    async def click(
        self, ref: str, button: str = "left", modifiers: str | Sequence[str] = (), count: int = 1
    ) -> None:
        """Click the element `count` times with `button`, holding `modifiers` ("Shift", ["Alt", "Meta"]).

        On an element the page made clickable by script (`gfcr.envs.browser.actionable`), the
        pointer comes to rest over it first, as a hand pauses before it presses: what the hover
        changes (an icon swapped for its hover image) settles during the click's own wait for a
        stable element, so the press cannot land while the element reshapes.
        """
        options = {"button": _button(button), "modifiers": _modifiers(modifiers), "click_count": count}
        element = await self._find(ref)
        if await revealed(element):  # force: no actionability checks for the hover, the click makes them
            await self._act(_in_order(element.hover(force=True), element.click(**options)))
        else:
            await self._act(element.click(**options))

    async def hover(self, ref: str) -> None:
        await self._act((await self._find(ref)).hover())

    async def focus(self, ref: str) -> None:
        await self._act((await self._find(ref)).focus())

    async def set_checked(self, ref: str, checked: bool) -> None:
        await self._act((await self._find(ref)).set_checked(checked))

    async def fill(self, ref: str, text: str) -> None:
        await self._act((await self._find(ref)).fill(text))

    async def select(self, ref: str, option: str | Sequence[str]) -> None:
        """Choose the option whose label (or else value) is `option` in a <select> (a list: several)."""
        element = await self._find(ref)
        options = await element.evaluate("e => Array.from(e.options || [], o => [o.label.trim(), o.value])")
        if not options:
            raise ToolError(f"select({ref!r}, {option!r}): {ref} is not a drop-down list")
        values = []
        for wanted in [option] if isinstance(option, str) else option:
            value = _option_value(options, str(wanted).strip())
            if value is None:
                labels = [label for label, _ in options]
                raise ToolError(
                    f"select({ref!r}, {option!r}): no option {wanted!r}; the options are {labels}"
                )
            values.append(value)
        await self._act(element.select_option(value=values))

    async def press(self, key: str, ref: str | None = None) -> None:
        """Press `key` (or a chord, "Control+A") on element `ref`, else the focused one, else the body.

        Through a locator, not `page.keyboard`: Playwright then waits for a navigation the key
        requested (Enter in a form schedules its submission after the key event returns).
        """
        if ref is not None:
            target = await self._find(ref)
        else:
            focused = self.page.locator("*:focus")
            target = focused if await focused.count() == 1 else self.page.locator("body")
        command = clipboard_command(key)
        if command is None:
            await self._act(target.press(key))
            return
        async with _clipboard_lock(self.context.browser):
            await self.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=self.origin)
            try:
                # The tab's own text first: a paste pastes it, a copy of nothing leaves it there.
                await self._clipboard_call("text => navigator.clipboard.writeText(text)", self.clipboard)
                await self._act(target.press(key))
                if command != "paste":
                    self.clipboard = await self._clipboard_call("() => navigator.clipboard.readText()")
            finally:
                await self.context.clear_permissions()

    async def type(self, text: str) -> None:
        """Type `text` key by key into the focused element, as a keyboard would: `MAX_TYPED_CHARS` at most."""
        if len(text) > MAX_TYPED_CHARS:
            raise ToolError(
                f"type() types at most {MAX_TYPED_CHARS} characters at a time, got {len(text)}: "
                "type a long text in parts, or put it in at once with fill(ref, text)"
            )
        await self._act(self.page.keyboard.type(text))

    async def insert_text(self, text: str) -> None:
        """Put `text` into the focused element at once (one input event, no key events)."""
        await self._act(self.page.keyboard.insert_text(text))

    async def key_down(self, key: str) -> None:
        await self._act(self.page.keyboard.down(key))
        self._held_keys.append(key)

    async def key_up(self, key: str) -> None:
        await self._act(self.page.keyboard.up(key))
        if key in self._held_keys:
            self._held_keys.remove(key)

    # pointer actions at coordinates: CSS pixels of the viewport, which are the screenshot's pixels

    async def mouse_move(self, x: float, y: float) -> None:
        await self._act(self.page.mouse.move(*self._point(x, y)))

    async def mouse_click(self, x: float, y: float, button: str = "left", count: int = 1) -> None:
        await self._act(self.page.mouse.click(*self._point(x, y), button=_button(button), click_count=count))

    async def mouse_down(self, x: float, y: float, button: str = "left") -> None:
        point, button = self._point(x, y), _button(button)
        await self._act(_in_order(self.page.mouse.move(*point), self.page.mouse.down(button=button)))
        self._held_buttons.add(button)

    async def mouse_up(self, x: float, y: float, button: str = "left") -> None:
        point, button = self._point(x, y), _button(button)
        await self._act(_in_order(self.page.mouse.move(*point), self.page.mouse.up(button=button)))
        self._held_buttons.discard(button)

    async def drag(self, source: Any, target: Any) -> None:
        """Press the left button on `source`, move to `target`, release; each a ref or an `[x, y]` point."""
        for end in (source, target):  # a bad end is refused before the button goes down
            if isinstance(end, str):
                await self._find(end)
            else:
                self._point(*_pair(end))

        async def drag() -> None:
            mouse = self.page.mouse
            await mouse.move(*await self._point_of(source))
            await mouse.down()
            try:
                await mouse.move(*await self._point_of(target), steps=DRAG_STEPS)
            finally:
                await mouse.up()

        await self._act(drag())

    async def scroll(self, dx: float, dy: float) -> None:
        await self._act(self.page.mouse.wheel(dx, dy))

    async def back(self) -> None:
        await self._act(self.page.go_back(wait_until="load"))

    async def forward(self) -> None:
        await self._act(self.page.go_forward(wait_until="load"))

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

    async def snapshot(self, boxes: bool = False) -> str:
        """The page as accessibility-tree text with element references (`[ref=e5]`).

        Actionable elements without a role get one first (`gfcr.envs.browser.actionable`), so
        that they have refs too. With `boxes`, each element carries its bounding box
        (`[box=x,y,width,height]`, CSS pixels of the viewport), for set-of-marks.

        Playwright prefixes the refs with a number that counts the page's documents (`f7e5`); the
        main frame's refs are given without it (`e5`, which `_find` maps back), so the same page
        reads the same however many episodes its tab has served. An iframe's keep theirs.
        """
        for _ in range(3):
            try:
                await reveal_actionable(self.page)
                text = await self.page.aria_snapshot(mode="ai", boxes=boxes)
                break
            except Exception as e:  # a navigation replaced the document mid-snapshot: read the new one
                if "context was destroyed" not in str(e) and "navigat" not in str(e):
                    raise
                await self.page.wait_for_load_state("load")
        else:
            text = await self.page.aria_snapshot(mode="ai", boxes=boxes)
        first = FIRST_REF.search(text)
        self._frame_prefix = (first.group(1) or "") if first else ""
        if not self._frame_prefix:
            return text
        return text.replace(f"[ref={self._frame_prefix}e", "[ref=e")

    async def screenshot(self) -> bytes:
        return await self.page.screenshot(type="png")

    async def recycle(self) -> None:
        """Make this tab as good as new for another episode, keeping its context and renderer.

        The keys and buttons the episode holds are released and its document left for a blank one
        (its scripts, timers and unload handlers end there); the pointer leaves the page; the
        origin's cookies and storage (local, session, IndexedDB, Cache Storage), the window's name
        and the history of the episode's pages are cleared, and so are the notes, the clipboard and
        the episode's session and nonce.
        """
        for key in reversed(self._held_keys):
            await self.page.keyboard.up(key)
        for button in self._held_buttons:
            await self.page.mouse.up(button=button)
        self._held_keys, self._held_buttons = [], set()
        await self.page.goto(self.origin + BLANK, wait_until="commit")
        await asyncio.gather(  # independent of each other: one round trip's wait for all
            self.page.mouse.move(-1, -1),
            self._cdp.send("Storage.clearDataForOrigin", {"origin": self.origin, "storageTypes": "all"}),
            self.page.evaluate("() => { sessionStorage.clear(); window.name = ''; }"),
            self._cdp.send("Page.resetNavigationHistory"),
        )
        self.notes, self.session, self.episode, self.clipboard = [], None, None, ""

    async def close(self) -> None:
        try:
            await self.context.close()
        except Exception:  # the browser died with the context in it: nothing to close
            pass

    # -- machinery ---------------------------------------------------------------------------------

    async def _find(self, ref: str) -> Any:
        if not isinstance(ref, str) or not REF.fullmatch(ref):
            raise ToolError(f"{ref!r} is not an element reference; use a ref from the page, like 'e5'")
        prefix = self._frame_prefix if ref.startswith("e") else ""
        element = self.page.locator(f"aria-ref={prefix}{ref}")
        if await element.count() == 0:
            raise ToolError(f"there is no element {ref} on this page; use a ref from the latest page")
        return element

    def _point(self, x: Any, y: Any) -> tuple[float, float]:
        """(x, y) as floats, if it is a point of the viewport; `ToolError` saying why not otherwise."""
        size = self.page.viewport_size or VIEWPORT
        width, height = size["width"], size["height"]
        for value in (x, y):
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise ToolError(f"{value!r} is not a coordinate; give x and y as numbers of pixels")
        if not (0 <= x < width and 0 <= y < height):
            raise ToolError(
                f"({x:g}, {y:g}) is off the page: x must be in [0, {width}) and y in [0, {height}), "
                "pixels of the viewport as the screenshot shows it"
            )
        return float(x), float(y)

    async def _point_of(self, end: Any) -> tuple[float, float]:
        """The viewport point of a drag's end: an `[x, y]` pair, or the centre of element `end`."""
        if not isinstance(end, str):
            return self._point(*_pair(end))
        element = await self._find(end)
        await element.scroll_into_view_if_needed()
        box = await element.bounding_box()
        if box is None:
            raise ToolError(f"{end} is not visible on the page, so it cannot be dragged or dropped on")
        return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2

    async def _clipboard_call(self, script: str, arg: Any = None) -> Any:
        """`script`'s value on the page (a clipboard call); `ToolError` if the page cannot run it now."""
        try:
            return await self.page.evaluate(script, arg)
        except Exception as e:
            raise ToolError(f"the page could not use its clipboard ({_short_error(e)}); try again") from e

    async def _act(self, action: Any) -> None:
        """Await a Playwright action, then let the page settle; Playwright errors become `ToolError`."""
        try:
            await action
        except ToolError:
            raise
        except Exception as e:
            raise ToolError(_short_error(e)) from e
        await self._settle()

    async def requests_done(self) -> None:
        """Wait for the page's requests in flight (images, fonts a drawing asked for)."""
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


async def _in_order(*steps: Awaitable[Any]) -> None:
    """Await `steps` one after the other (one action for `Tab._act` made of several)."""
    for step in steps:
        await step


def clipboard_command(chord: str) -> str | None:
    """ "copy", "cut" or "paste" if the key chord does that in Chromium, else None.

    >>> clipboard_command("ControlOrMeta+c"), clipboard_command("Shift+Insert"), clipboard_command("c")
    ('copy', 'paste', None)
    """
    *held, key = chord.lower().split("+")
    if "alt" in held:
        return None
    if {"control", "meta", "controlormeta"} & set(held):
        return CLIPBOARD_KEYS.get(key.removeprefix("key"))
    return SHIFT_CLIPBOARD_KEYS.get(key) if "shift" in held else None


_CLIPBOARD_LOCKS: weakref.WeakKeyDictionary[Any, asyncio.Lock] = weakref.WeakKeyDictionary()


def _clipboard_lock(browser: Any) -> asyncio.Lock:
    """The lock that makes a tab's clipboard steps one unit on `browser`'s shared clipboard."""
    return _CLIPBOARD_LOCKS.setdefault(browser, asyncio.Lock())


def _button(button: Any) -> str:
    if button not in BUTTONS:
        raise ToolError(f"unknown mouse button {button!r}; use 'left', 'middle' or 'right'")
    return str(button)


def _modifiers(modifiers: Any) -> list[str]:
    """Modifier keys as Playwright takes them: a list of names; one name alone is allowed."""
    keys = [modifiers] if isinstance(modifiers, str) else modifiers
    if not isinstance(keys, list | tuple) or any(key not in MODIFIERS for key in keys):
        raise ToolError(f"modifiers must be names from {list(MODIFIERS)}, got {modifiers!r}")
    return list(keys)


def _pair(point: Any) -> tuple[Any, Any]:
    """An `[x, y]` point's two values; `ToolError` for anything else."""
    if isinstance(point, list | tuple) and len(point) == 2:
        return point[0], point[1]
    raise ToolError(f"{point!r} is neither an element ref ('e5') nor an [x, y] point")


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


async def fresh_tab(browser: Any, origin: str, timeout_ms: int, used: Tab | None = None) -> Tab:
    """A tab for a new episode on `origin`: `used` (the env's last one) recycled if it can be, else a new one.

    Recycling keeps the context and its renderer process: a new context's page starts a renderer,
    the slowest part of a reset, and a warm renderer loads the task's page faster
    (docs/benchmarks.md, "Browser env").
    """
    if used is not None:
        if used.context.browser is browser and used.origin == origin and not used.crashed:
            try:
                await used.recycle()
                used.set_timeout(timeout_ms)
                return used
            except Exception:  # closed, crashed or its browser died: a new tab instead
                pass
        await used.close()
    tab = await Tab.open(browser, origin)
    tab.set_timeout(timeout_ms)
    return tab
