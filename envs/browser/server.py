"""`LoopbackServer`: the HTTP server on 127.0.0.1 that serves every page the browser envs show.

- `/wob/…`: the files of the `miniwob` package's `html/` folder (MiniWoB's task pages), read once
  and kept in memory; a task page comes with its scripts and style sheets inlined (`inline_page`),
  so that a reset loads one document, not five to ten;
- `/static/…`: the apps' style sheet; `/blank`: an empty page, where new tabs wait;
- `/<app>/…`: gfcr's own web apps, rendered per request from the state of the episode's session,
  which the `gfcr_session` cookie of the episode's browser context names.

Every response says which scripts may run (`gfcr.envs.browser.policy`): on a task page and an
app page those the server wrote, elsewhere none.

One server per process (`loopback_server()`), on a free port, threads for requests; the env
opens a session per episode and judges the episode against that session's state.
"""

from __future__ import annotations

import http.server
import logging
import mimetypes
import posixpath
import re
import secrets
import sys
import threading
from dataclasses import dataclass, field
from functools import cache
from http.cookies import SimpleCookie
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from gfcr.envs.browser.apps import APPS
from gfcr.envs.browser.apps.app import App, Request, Response, not_found, parse_form
from gfcr.envs.browser.policy import NO_SCRIPTS, SCRIPT_NONCE, own_scripts_policy
from gfcr.envs.browser.process_local import ProcessLocal
from gfcr.errors import DataError

logger = logging.getLogger(__name__)
COOKIE = "gfcr_session"
BLANK = "/blank"  # an empty page on the origin, where new tabs wait for their task
MAX_BODY = 1 << 20
NO_ICON = '<link rel="icon" href="data:,">'  # no favicon request: a page is loaded when its document is
_SUBRESOURCE = re.compile(
    r'<script src="(?P<script>[^":]+)"></script>'
    r'|<link rel="stylesheet"(?: type="text/css")? href="(?P<style>[^":]+)">'
)
_CSS_URL = re.compile(r"""url\((['"]?)(?![a-z]+:|/|#)([^'")]+)\1\)""")
_SCRIPT = re.compile(r"<script\b(.*?)</script", re.IGNORECASE | re.DOTALL)  # where a script's data ends
# jscolor (the colour wheel pages) reads its options from an attribute with `new Function`
EVAL_LIBRARIES = ("jscolor.min.js",)


@dataclass
class Session:
    """One episode's server-side state in one app; requests to it are served one at a time."""

    app: App
    state: Any
    lock: threading.Lock = field(default_factory=threading.Lock)


class LoopbackServer:
    """Serves MiniWoB's files and gfcr's apps on `origin` (http://127.0.0.1:PORT)."""

    def __init__(self) -> None:
        self.sessions: dict[str, Session] = {}
        self._httpd = _QuietServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self.origin = f"http://127.0.0.1:{self._httpd.server_port}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="gfcr-loopback", daemon=True)
        self._thread.start()

    def open_session(self, app: App, state: Any) -> str:
        """Start an episode's session with `state`; returns the token its cookie must carry."""
        token = secrets.token_urlsafe(16)
        self.sessions[token] = Session(app, state)
        return token

    def close_session(self, token: str | None) -> None:
        if token is not None:
            self.sessions.pop(token, None)

    def respond(
        self, method: str, target: str, body: bytes, cookie_header: str
    ) -> tuple[int, dict[str, str], bytes]:
        """Status, headers and body for one request (the HTTP handler's only logic).

        Every response says which scripts may run: a task page's or an app page's own, else none.
        """
        status, headers, content = self._route(method, target, body, cookie_header)
        return status, {"Content-Security-Policy": NO_SCRIPTS, **headers}, content

    def _route(
        self, method: str, target: str, body: bytes, cookie_header: str
    ) -> tuple[int, dict[str, str], bytes]:
        url = urlsplit(target)
        path = unquote(url.path)
        if path == BLANK:
            return 200, {"Content-Type": "text/html; charset=utf-8"}, b"<!DOCTYPE html><title>blank</title>"
        if path.startswith("/wob/miniwob/") and path.endswith(".html"):
            return _task_page(path[len("/wob/") :])
        if path.startswith("/wob/"):
            return _static(miniwob_html(), path[len("/wob/") :])
        if path.startswith("/static/"):
            return _static(_apps_static(), path[len("/static/") :])
        prefix, _, rest = path.lstrip("/").partition("/")
        if prefix not in APPS:
            return _page(not_found(f"There is no page at {path}."))
        session = self.sessions.get(_cookie(cookie_header))
        if session is None or session.app.name != prefix:
            return _page(not_found("This page belongs to no open episode."))
        request = Request(
            method, "/" + rest, parse_form(url.query), parse_form(body.decode("utf-8", "replace"))
        )
        with session.lock:
            status, headers, content = _page(session.app.handle(session.state, request))
        return status, {**headers, "Content-Security-Policy": own_scripts_policy()}, content

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def miniwob_html() -> Path:
    """The `html/` folder of the installed `miniwob` package (MiniWoB's pages and their scripts)."""
    try:
        return Path(str(resources.files("miniwob").joinpath("html")))
    except ModuleNotFoundError as e:
        raise DataError("the MiniWoB tasks need the 'miniwob' package: pip install miniwob==1.1.0") from e


def _apps_static() -> Path:
    return Path(str(resources.files("gfcr.envs.browser.apps").joinpath("static")))


@cache
def _read(path: Path) -> bytes | None:
    return path.read_bytes() if path.is_file() else None


@cache
def inline_page(root: Path, relative: str) -> bytes | None:
    """The HTML page `relative` under `root` with its local scripts and style sheets written into it.

    Each `<script src>` and style sheet link to a file under `root` becomes the file's text in
    place (style sheets' relative `url(...)`s rewritten to stay right), in the same order, so the
    page runs as before; a script holding `</script` is left linked. A favicon link of `data:`
    keeps the browser from asking for one. None if there is no such page.

    >>> page = inline_page(miniwob_html(), "miniwob/click-test.html").decode()
    >>> "<script src=" in page, "core.startEpisode" in page, page.count(NO_ICON)
    (False, True, 1)
    """
    html = _read((root / relative).resolve()) if _inside(root, root / relative) else None
    if html is None:
        return None
    folder = posixpath.dirname(relative)

    def inlined(match: re.Match[str]) -> str:
        linked = match.group("script") or match.group("style")
        path = posixpath.normpath(posixpath.join(folder, linked))
        content = _read((root / path).resolve()) if _inside(root, root / path) else None
        text = content.decode("utf-8") if content is not None else ""
        if content is None or "</script" in text.lower():
            return match.group(0)
        if match.group("script"):
            return f"<script>{text}</script>"
        base = posixpath.dirname(linked)
        rebased = _CSS_URL.sub(lambda m: f"url({m[1]}{posixpath.join(base, m[2])}{m[1]})", text)
        return f"<style>{rebased}</style>"

    page = _SUBRESOURCE.sub(inlined, html.decode("utf-8"))
    return page.replace("<head>", "<head>" + NO_ICON, 1).encode("utf-8")


@cache
def _task_page(relative: str) -> tuple[int, dict[str, str], bytes]:
    """A MiniWoB task page, inlined, whose script elements alone may run (they carry `SCRIPT_NONCE`).

    >>> status, headers, page = _task_page("miniwob/click-test.html")
    >>> headers["Content-Security-Policy"] == own_scripts_policy()
    True
    >>> page.count(b"<script>"), page.count(f'<script nonce="{SCRIPT_NONCE}">'.encode())
    (0, 4)
    """
    page = inline_page(miniwob_html(), relative)
    if page is None:
        return _html(None)
    source = (_read(miniwob_html() / relative) or b"").decode("utf-8")
    with_eval = any(library in source for library in EVAL_LIBRARIES)
    nonced = _SCRIPT.sub(lambda m: f'<script nonce="{SCRIPT_NONCE}"{m[1]}</script', page.decode("utf-8"))
    status, headers, content = _html(nonced.encode("utf-8"))
    return status, {**headers, "Content-Security-Policy": own_scripts_policy(with_eval)}, content


def _inside(root: Path, path: Path) -> bool:
    return path.resolve().is_relative_to(root.resolve())


def _html(content: bytes | None) -> tuple[int, dict[str, str], bytes]:
    if content is None:
        return 404, {"Content-Type": "text/plain"}, b"not found"
    return 200, {"Content-Type": "text/html; charset=utf-8"}, content


def _static(root: Path, relative: str) -> tuple[int, dict[str, str], bytes]:
    path = (root / relative).resolve()
    content = _read(path) if _inside(root, path) else None
    if content is None:
        return 404, {"Content-Type": "text/plain"}, b"not found"
    kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    return 200, {"Content-Type": kind + ("; charset=utf-8" if kind.startswith("text/") else "")}, content


def _page(response: Response) -> tuple[int, dict[str, str], bytes]:
    if response.location is not None:
        return response.status, {"Location": response.location}, b""
    headers = {"Content-Type": "text/html; charset=utf-8", **response.headers}
    return response.status, headers, response.body.encode("utf-8")


def _cookie(header: str) -> str:
    morsel = SimpleCookie(header).get(COOKIE)
    return morsel.value if morsel is not None else ""


class _QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A browser context closed mid-response (a reset while a page loads) is normal; the rest is logged.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            logger.warning("loopback server error for %s", client_address, exc_info=True)


def _handler_for(server: LoopbackServer) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: a page's scripts come over one connection

        def do_GET(self) -> None:
            self._serve(b"")

        def do_POST(self) -> None:
            length = min(int(self.headers.get("Content-Length") or 0), MAX_BODY)
            self._serve(self.rfile.read(length))

        def _serve(self, body: bytes) -> None:
            try:
                status, headers, content = server.respond(
                    self.command, self.path, body, self.headers.get("Cookie", "")
                )
            except Exception as e:  # an app's bug is a 500 page, not a dead server thread
                status, headers, content = 500, {"Content-Type": "text/plain"}, f"server error: {e}".encode()
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(content)))
            self.send_header(
                "Cache-Control", "no-store" if "html" in headers.get("Content-Type", "") else "max-age=3600"
            )
            self.end_headers()
            self.wfile.write(content)

        def log_message(self, format: str, *args: Any) -> None:  # requests are not worth a log line
            pass

    return Handler


_SERVER = ProcessLocal(LoopbackServer)


def loopback_server() -> LoopbackServer:
    """This process's server (started on first use)."""
    return _SERVER.get()
