"""`BrowserHost`: one Chromium per process, driven by Playwright's async API on its own thread.

Playwright's sync API can neither run inside an asyncio loop nor move between threads, and a
vectorized runner steps envs from a thread pool or an event loop. So every Playwright call runs
on the host's private event loop: envs submit coroutines with `run()` from any thread and wait
with a timeout, and the envs of one process share one browser (one context each). The browser is
launched on first use and relaunched when it has died; a forked child gets a host of its own.

Usage (it launches a browser, so it is not run as a doctest):

    host = browser_host()
    async def version():
        return (await host.browser()).version
    host.run(version(), timeout=30)   # e.g. '156.0.8078.108'
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Awaitable, Coroutine
from typing import Any, TypeVar

from gfcr.envs.browser.chromium import CHROMIUM_FLAGS, find_chromium
from gfcr.envs.browser.process_local import ProcessLocal
from gfcr.errors import BrowserError

logger = logging.getLogger(__name__)
T = TypeVar("T")
CLOSE_TIMEOUT_S = 10.0


class BrowserHost:
    """A Chromium and the event-loop thread that drives it.

    `executable_path` picks the browser (see `find_chromium`); `headless=False` shows windows.
    """

    def __init__(self, executable_path: str | None = None, headless: bool = True) -> None:
        self.executable_path = executable_path
        self.headless = headless
        self.launches = 0  # how many times a browser was started (a relaunch after a crash counts)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="gfcr-browser", daemon=True)
        self._thread.start()
        self._playwright: Any = None
        self._browser: Any = None
        self._launching: asyncio.Lock | None = None

    def run(self, work: Awaitable[T], timeout: float) -> T:
        """Run the coroutine `work` on the host's loop; `BrowserError` if it takes over `timeout` s."""
        future = asyncio.run_coroutine_threadsafe(_awaited(work), self._loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError as e:
            future.cancel()
            raise BrowserError(f"the browser did not finish within {timeout:g} s") from e

    def spawn(self, work: Coroutine[Any, Any, Any]) -> None:
        """Start `work` on the host's loop without waiting for it (its failure is only logged)."""
        if not self._thread.is_alive() or self._loop.is_closed():
            work.close()  # the host is gone (interpreter exit): nothing left to clean up
            return
        asyncio.run_coroutine_threadsafe(work, self._loop).add_done_callback(_log_failure)

    async def browser(self) -> Any:
        """The running browser; launches one (again, after a crash) when needed."""
        if self._launching is None:
            self._launching = asyncio.Lock()
        async with self._launching:
            if self._browser is None or not self._browser.is_connected():
                await self._launch()
            return self._browser

    async def _launch(self) -> None:
        if self._browser is not None:
            logger.warning("the browser died; starting a new one")
        try:
            await self._start_browser()
        except BrowserError:
            raise
        except Exception:  # a dead Playwright driver: start a new driver once, then give up
            await self._stop_playwright()
            await self._start_browser()
        self.launches += 1

    async def _start_browser(self) -> None:
        if self._playwright is None:
            try:
                from playwright.async_api import async_playwright
            except ImportError as e:
                raise BrowserError("the browser envs need Playwright: pip install 'gfcr[browser]'") from e
            self._playwright = await async_playwright().start()
        chromium = self._playwright.chromium
        path = find_chromium(self.executable_path, chromium.executable_path)
        try:
            self._browser = await chromium.launch(
                executable_path=path, headless=self.headless, args=list(CHROMIUM_FLAGS)
            )
        except Exception as e:
            if "Executable doesn't exist" in str(e) or "spawn" in str(e):
                raise BrowserError(f"cannot start Chromium at {path or chromium.executable_path}: {e}") from e
            raise

    async def _stop_playwright(self) -> None:
        browser, playwright, self._browser, self._playwright = self._browser, self._playwright, None, None
        for closing in (browser, playwright):
            if closing is not None:
                try:
                    await (closing.close() if closing is browser else closing.stop())
                except Exception as e:  # already dead: nothing left to close
                    logger.debug("closing %s failed: %s", type(closing).__name__, e)

    def close(self) -> None:
        """Close the browser and stop the loop thread (the host cannot be used afterwards)."""
        if not self._thread.is_alive():
            return
        try:
            asyncio.run_coroutine_threadsafe(self._stop_playwright(), self._loop).result(CLOSE_TIMEOUT_S)
        except Exception as e:  # at exit, a stuck browser must not hang the interpreter
            logger.warning("closing the browser failed: %s", e)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(CLOSE_TIMEOUT_S)


def _log_failure(future: concurrent.futures.Future[Any]) -> None:
    if not future.cancelled() and future.exception() is not None:
        logger.debug("background browser work failed: %s", future.exception())


async def _awaited(work: Awaitable[T]) -> T:
    return await work


_HOSTS: dict[tuple[str | None, bool], ProcessLocal[BrowserHost]] = {}
_HOSTS_LOCK = threading.Lock()


def browser_host(executable_path: str | None = None, headless: bool = True) -> BrowserHost:
    """This process's host for these browser settings (built on first use, shared by every env)."""
    key = (executable_path, headless)
    with _HOSTS_LOCK:
        if key not in _HOSTS:
            _HOSTS[key] = ProcessLocal(lambda: BrowserHost(executable_path, headless))
        local = _HOSTS[key]
    return local.get()
