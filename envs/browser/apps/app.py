"""The web-app contract: what a multi-page app served on loopback provides to the browser env.

An app renders pages on the server from a per-episode state (a fresh copy for every episode, in
the episode's session), and judges the episode against that state — never against the page text.
At the end of an episode the env records the state as a JSON-able dict (`dump_state`), so that
`BrowserVerifier` can rebuild it (`load_state`) and judge it again offline.
Its tasks are procedural: task `<app>/<i>` is built from seed `i`, the same on every machine, and
its gold data holds what the scripted oracle needs to solve it.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar
from urllib.parse import parse_qs

from gfcr.core import Task
from gfcr.envs.browser.apps.html import esc
from gfcr.envs.browser.site import SiteJudgement
from gfcr.envs.browser.snapshot import PageView


@dataclass(frozen=True)
class Request:
    """An HTTP request to an app: `path` is relative to the app (`/cart`), `form` holds the POST body.

    >>> Request("GET", "/search", query=parse_form("q=blue+mug")).value("q")
    'blue mug'
    """

    method: str
    path: str
    query: dict[str, list[str]] = field(default_factory=dict)
    form: dict[str, list[str]] = field(default_factory=dict)

    def value(self, name: str, default: str = "") -> str:
        """A field of the form (POST) or the query string (GET), stripped."""
        values = self.form.get(name) or self.query.get(name) or [default]
        return values[0].strip()

    def values(self, name: str) -> list[str]:
        """Every value of a repeated field (checkboxes)."""
        return self.form.get(name) or self.query.get(name) or []


@dataclass(frozen=True)
class Response:
    """A page (`body`), or a redirect (303 to `location`, after a POST), or an error status.

    `headers` replace the defaults (e.g. a file to download instead of a page).
    """

    body: str = ""
    status: int = 200
    location: str | None = None
    headers: dict[str, str] = field(default_factory=dict)


def redirect(location: str) -> Response:
    return Response(status=303, location=location)


def not_found(what: str) -> Response:
    """A 404 page saying `what` (plain text: a path in it may hold anything the agent typed).

    >>> not_found("There is no page at /<b>.").body
    '<h1>Not found</h1><p>There is no page at /&lt;b&gt;.</p>'
    """
    return Response(f"<h1>Not found</h1><p>{esc(what)}</p>", status=404)


def parse_form(text: str) -> dict[str, list[str]]:
    return parse_qs(text, keep_blank_values=True)


class App(ABC):
    """A web app: its tasks, its server-side pages and state, its judge and its scripted solver."""

    name: ClassVar[str]  # URL prefix and task-id prefix: /shop/, shop/17
    num_tasks: ClassVar[int]  # tasks shop/0 … shop/{num_tasks-1}
    num_injection_tasks: ClassVar[int] = 0  # tasks shop/injection/0 …, the "injection" dataset

    @abstractmethod
    def task(self, index: int) -> Task:
        """Task `<name>/<index>`: the goal in `prompt`, the solution in `gold`."""

    def injection_task(self, index: int) -> Task:
        """Task `<name>/injection/<index>`: an ordinary goal on pages that carry an instruction from
        someone else (`gfcr.envs.browser.apps.injection`), described in `gold["injection"]`; the
        judge sets `injection_obeyed` when the state shows it was carried out."""
        raise IndexError(f"the {self.name} app has no injection tasks (num_injection_tasks is 0)")

    @abstractmethod
    def initial_state(self, task: Task) -> Any:
        """A fresh server-side state for one episode of `task`."""

    @abstractmethod
    def handle(self, state: Any, request: Request) -> Response:
        """Serve one request against the episode's state (called under the session's lock)."""

    @abstractmethod
    def judge(self, task: Task, state: Any, answer: str | None) -> SiteJudgement:
        """Judge the state (and the agent's `answer(...)`, if it gave one) against the task's goal."""

    def dump_state(self, state: Any) -> dict[str, Any]:
        """The state as a JSON-able dict (default: the dataclass's fields, recursively)."""
        return dataclasses.asdict(state)

    @abstractmethod
    def load_state(self, data: dict[str, Any]) -> Any:
        """The state `dump_state` gave `data` for, also after a JSON round trip (tuples as lists)."""

    @abstractmethod
    def next_actions(self, task: Task, page: PageView) -> list[str]:
        """The oracle: the actions (e.g. `click("e5")`) to take next on `page` to solve `task`."""
