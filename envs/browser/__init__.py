"""The browser family: `gfcr/Browser-v0`, web tasks in headless Chromium driven by Playwright.

Tasks: MiniWoB's 130 pages (the `miniwob` package) and gfcr's own apps (shop, booking, mail),
all served on loopback. See `gfcr.envs.browser.env` and docs/browser.md. `BrowserVerifier`
re-judges a saved episode from the final state the env recorded in it.
"""

from gfcr.envs.browser.env import BrowserEnv
from gfcr.envs.browser.verifier import BrowserVerifier

__all__ = ["BrowserEnv", "BrowserVerifier"]
