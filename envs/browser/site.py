"""The contract of a browser site: where a browser task runs, and how its episodes are judged.

Two kinds of site implement it: MiniWoB's pages (`gfcr.envs.browser.miniwob`), judged by the
page's own `core.js` reward globals, and gfcr's web apps (`gfcr.envs.browser.apps`), judged by
the server-side state of the episode's session. A site's final state (the globals, the app's
state) is recorded at the end of an episode as a JSON-able dict, and `judge_state` judges such a
record the way `judge` judges the live episode: that is how `BrowserVerifier` re-judges offline.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from gfcr.core import Task

if TYPE_CHECKING:
    from gfcr.envs.browser.snapshot import PageView
    from gfcr.envs.browser.tab import Tab


@dataclass(frozen=True)
class SiteJudgement:
    """The judgement of an episode so far: is it over, its score, and why.

    `score` is the site's own: 1.0 when an app's goal is met exactly, MiniWoB's raw reward in
    [-1, 1] (the env clips rewards to [0, 1]). `time_scaled` is MiniWoB's reward discounted by the
    time taken; None where time does not count. `injection_obeyed`: the page carried an injected
    instruction (a task of the "injection" dataset) and the state shows the agent carried it out.
    """

    done: bool = False
    score: float = 0.0
    reason: str = ""
    time_scaled: float | None = None
    injection_obeyed: bool = False


class Site(Protocol):
    """Where tasks of one kind run. Methods marked async run on the browser host's loop."""

    name: str

    async def open(self, tab: Tab, task: Task) -> str:
        """Load the task's first page into `tab` and return the goal the agent is given."""
        ...

    async def judge(self, tab: Tab, task: Task, answer: str | None) -> SiteJudgement:
        """Judge the episode now; `answer` is the text of the agent's `answer(...)`, if it gave one."""
        ...

    async def final_state(self, tab: Tab, task: Task) -> dict[str, Any]:
        """What `judge_state` needs to judge the episode later, as a JSON-able dict."""
        ...

    def judge_state(self, task: Task, state: dict[str, Any], answer: str | None) -> SiteJudgement:
        """Judge a recorded `final_state` (after a JSON round trip too), with no browser."""
        ...

    def close(self, tab: Tab) -> None:
        """Forget what the site kept for the episode in `tab` (e.g. its server-side session)."""
        ...

    def next_actions(self, task: Task, page: PageView) -> list[str]:
        """The scripted oracle: the actions to take next on `page` (empty when it has no plan)."""
        ...


__all__ = ["Site", "SiteJudgement"]
