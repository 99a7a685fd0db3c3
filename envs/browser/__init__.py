"""The browser family: `gfcr/Browser-v0`, web tasks in headless Chromium driven by Playwright.

Tasks: MiniWoB's 130 pages (the `miniwob` package) and gfcr's own apps (shop, booking, mail),
all served on loopback. See `gfcr.envs.browser.env` and docs/browser.md.
"""

from gfcr.envs.browser.env import BrowserEnv

__all__ = ["BrowserEnv"]
