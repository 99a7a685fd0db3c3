"""Which Chromium to drive, and the flags it runs with.

Playwright's own browser download (`playwright install chromium`) is used when present; otherwise
a system Chromium (Debian's `chromium`, Ubuntu's `chromium-browser`, Google Chrome). Set
`GFCR_CHROMIUM=/path/to/chrome`, or pass `executable_path=` to the env, to choose one yourself.

>>> "--no-sandbox" in CHROMIUM_FLAGS
True
>>> find_chromium(explicit="/no/such/chrome")
Traceback (most recent call last):
...
gfcr.errors.BrowserError: no browser at executable_path='/no/such/chrome'; give the path of a Chromium ...
"""

from __future__ import annotations

import os
import shutil

from gfcr.errors import BrowserError

# Headless Chromium in containers and CI: no setuid sandbox (often absent when running as root),
# no GPU, no background traffic to Google (the envs are offline), /tmp instead of a small /dev/shm.
CHROMIUM_FLAGS: tuple[str, ...] = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
)
SYSTEM_CHROMIUMS: tuple[str, ...] = (
    "/usr/bin/chromium",
    "/usr/lib/chromium/chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
)
INSTALL_HINT = (
    "install a Chromium: `apt-get install chromium` (Debian/Ubuntu; `make setup` does it as root) "
    "or `playwright install chromium`; or set GFCR_CHROMIUM=/path/to/chrome"
)


def find_chromium(explicit: str | None = None, playwright_default: str | None = None) -> str | None:
    """The executable to launch; None means Playwright's own download (`playwright_default`) is there.

    Order: `explicit`, then `$GFCR_CHROMIUM`, then Playwright's own browser, then a system Chromium.
    Raises `BrowserError` saying what to install when there is none.
    """
    for name, value in (("executable_path", explicit), ("GFCR_CHROMIUM", os.environ.get("GFCR_CHROMIUM"))):
        if value:
            if not _is_executable(value):
                raise BrowserError(
                    f"no browser at {name}={value!r}; give the path of a Chromium or Chrome executable"
                )
            return value
    if playwright_default and _is_executable(playwright_default):
        return None
    for candidate in SYSTEM_CHROMIUMS:
        path = shutil.which(candidate)
        if path:
            return path
    raise BrowserError(f"no Chromium found for the browser envs; {INSTALL_HINT}")


def _is_executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)
