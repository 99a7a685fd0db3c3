"""MiniWoB++ tasks: the 130 pages of the `miniwob` package (1.1.0, MIT), served on loopback.

Task `miniwob/<page>/<seed>` is the page's episode generated after `Math.seedrandom(seed)`; the
reward comes from the page's own `core.js` globals (`WOB_RAW_REWARD_GLOBAL`, and
`WOB_REWARD_GLOBAL`, which MiniWoB discounts by the time taken), read off the task's own document
only: the one the episode's start marked with a fresh nonce. Any other page of the site reached
however (a `goto`, a link, `back()`, a reload, a page's script) ends the episode at 0: another
page's globals, an easy page's solved in place of the task's, are never taken for the task's, and
the record `BrowserVerifier` re-judges says which page was read. MiniWoB's own 10-20 s episode
timer is off unless `time_limit_s` is given: LLM agents think slowly, and the turn limit bounds
an episode anyway. The reward display, click canvas and start cover are hidden, so the page holds
only the task (and its text does not change with the clock).

>>> source = miniwob_source(["click-test", "enter-text"], num_seeds=3)
>>> len(source), source[4].id, source.get("miniwob/enter-text/2").metadata["seed"]
(6, 'miniwob/enter-text/1', 2)
>>> len(miniwob_pages())
130
"""

from __future__ import annotations

import functools
import secrets
import weakref
from collections.abc import Sequence
from functools import cache
from typing import Any

from gfcr.core import Task
from gfcr.envs.browser.host import browser_host
from gfcr.envs.browser.miniwob_oracle import SCREENSHOT_PAGES, plan_calls, plan_script
from gfcr.envs.browser.miniwob_oracle import next_actions as miniwob_next_actions
from gfcr.envs.browser.server import loopback_server, miniwob_html
from gfcr.envs.browser.site import SiteJudgement
from gfcr.envs.browser.snapshot import PageView
from gfcr.envs.browser.tab import Tab, fresh_tab
from gfcr.envs.tasks import TaskSource
from gfcr.errors import UnknownNameError

REPLICA_TIMEOUT_S = 30.0  # opening a page, starting it and reading it: well under a second idle
NO_LIMIT_MS = 1_000_000_000  # about 11 days: "no timer" for setTimeout (which overflows past 2**31 ms)
HIDE = "#reward-display, #click-canvas, #sync-task-cover { display: none !important; }"
# One round trip starts the episode (seeded; no time limit unless one is set; MiniWoB's reward
# display hidden) and resolves, with the utterance, once the task's first frame is drawn and the
# images it showed have loaded and been laid out (the e-mail pages' icons are CSS `content` images
# that get their size, and with it a ref, only then; the browser's request events can reach the
# host after this call's answer, so the wait for them alone missed some on a loaded machine).
# Every page in html/miniwob is ready as soon as it starts (core.js's WOB_TASK_READY is never
# cleared there).
# The episode's nonce marks this document as the one the episode is judged on (read-only: the
# page's scripts cannot change it, and no other document has it); after the start, MiniWoB's
# START cover can deal no other problem in it.
# The natural-language tasks' getUtterance() returns {utterance, fields}; the agent gets the text.
START = """async ([seed, limitMs, hide, episode]) => {
  document.head.appendChild(Object.assign(document.createElement("style"), { textContent: hide }));
  Math.seedrandom(seed);
  core.EPISODE_MAX_TIME = limitMs;
  core.startEpisodeReal();
  core.startEpisodeReal = () => {};
  Object.defineProperty(window, "gfcrEpisode", { value: episode });
  // a frame's callbacks run before its style and layout, which request the images: the second
  // callback comes after the first frame is drawn
  const drawn = () => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)));
  await drawn();
  const loaded = [];  // a check per image shown: an <img> is complete, a CSS image has its entry
  for (const element of document.querySelectorAll("*")) {
    if (!element.checkVisibility()) continue;
    const style = getComputedStyle(element);
    for (const value of [style.content, style.backgroundImage])
      for (const [, url] of value.matchAll(/url\\("(http[^"]+)"\\)/g))
        loaded.push(() => performance.getEntriesByName(url).length > 0);  // its last byte came
    if (element instanceof HTMLImageElement) loaded.push(() => element.complete);
  }
  const deadline = performance.now() + 2000;
  if (!loaded.every(check => check())) {
    while (!loaded.every(check => check()) && performance.now() < deadline)
      await new Promise(wait => setTimeout(wait, 5));
    await drawn();  // laid out with their sizes
  }
  const u = core.getUtterance();
  return typeof u === "string" ? u : u.utterance;
}"""
# Which document is read, and its reward globals (absent on a page that is not MiniWoB's: 0).
READ_STATE = """() => ({
  page: location.pathname,
  page_episode: window.gfcrEpisode ?? null,
  WOB_DONE_GLOBAL: Boolean(window.WOB_DONE_GLOBAL),
  WOB_REWARD_GLOBAL: Number(window.WOB_REWARD_GLOBAL) || 0,
  WOB_RAW_REWARD_GLOBAL: Number(window.WOB_RAW_REWARD_GLOBAL) || 0,
  WOB_REWARD_REASON: window.WOB_REWARD_REASON == null ? null : String(window.WOB_REWARD_REASON),
})"""


@cache
def miniwob_pages() -> tuple[str, ...]:
    """Names of MiniWoB's task pages (`click-test`, …), sorted."""
    return tuple(sorted(path.stem for path in (miniwob_html() / "miniwob").glob("*.html")))


def miniwob_source(pages: Sequence[str] | None = None, num_seeds: int = 100) -> TaskSource:
    """`num_seeds` episodes of each page (every page by default): task `miniwob/<page>/<seed>`."""
    known = miniwob_pages()
    chosen = list(known if pages is None else pages)
    for page in chosen:
        if page not in known:
            raise UnknownNameError("MiniWoB page", page, known)

    # partials of module-level functions, not closures: an env holding the source must pickle
    build = functools.partial(_miniwob_task, tuple(chosen), num_seeds)
    index_of = functools.partial(_miniwob_index, tuple(chosen), num_seeds)
    return TaskSource("miniwob", len(chosen) * num_seeds, build, index_of)


def _miniwob_task(chosen: Sequence[str], num_seeds: int, index: int) -> Task:
    page, seed = chosen[index // num_seeds], index % num_seeds
    prompt = f"MiniWoB task {page} (seed {seed}); its goal is shown on the page."
    return Task(
        f"miniwob/{page}/{seed}", prompt, None, "miniwob", {"site": "miniwob", "page": page, "seed": seed}
    )


def _miniwob_index(chosen: Sequence[str], num_seeds: int, task_id: str) -> int | None:
    prefix, _, rest = task_id.partition("/")
    page, _, seed = rest.rpartition("/")
    if prefix != "miniwob" or page not in chosen or not seed.isdigit() or int(seed) >= num_seeds:
        return None
    return list(chosen).index(page) * num_seeds + int(seed)


class MiniwobSite:
    """Runs MiniWoB pages: seeds and starts the episode, reads the reward globals."""

    name = "miniwob"

    def __init__(self, time_limit_s: float | None = None) -> None:
        self.limit_ms = NO_LIMIT_MS if time_limit_s is None else int(time_limit_s * 1000)

    async def open(self, tab: Tab, task: Task) -> str:
        await tab.goto(page_path(task))
        tab.episode = secrets.token_urlsafe(12)
        utterance = await tab.page.evaluate(START, [task.metadata["seed"], self.limit_ms, HIDE, tab.episode])
        await tab.requests_done()  # what else the start asked for (START waits for the images shown)
        return str(utterance)

    async def judge(self, tab: Tab, task: Task, answer: str | None) -> SiteJudgement:
        return self.judge_state(task, await self.final_state(tab, task), answer)

    async def final_state(self, tab: Tab, task: Task) -> dict[str, Any]:
        """The page's reward globals (MiniWoB judges in JavaScript, so they are its final state), the
        page they were read on, its nonce (`page_episode`) and the episode's own (`episode`)."""
        return {**await tab.page.evaluate(READ_STATE), "episode": tab.episode}

    def judge_state(self, task: Task, state: dict[str, Any], answer: str | None) -> SiteJudgement:
        """Judge recorded reward globals, if they were read on the task's page in its episode.

        >>> task = miniwob_source(["click-test"], 1)[0]
        >>> state = {"WOB_DONE_GLOBAL": True, "WOB_REWARD_GLOBAL": 0.8, "WOB_RAW_REWARD_GLOBAL": 1.0,
        ...          "WOB_REWARD_REASON": None, "page": "/wob/miniwob/click-test.html",
        ...          "page_episode": "n0nce", "episode": "n0nce"}
        >>> MiniwobSite().judge_state(task, state, None)
        SiteJudgement(done=True, score=1.0, reason='success', time_scaled=0.8, injection_obeyed=False)
        >>> MiniwobSite().judge_state(task, {**state, "page_episode": None}, None).score  # a reload
        0.0
        """
        episode = state["episode"]
        if not episode or (state["page"], state["page_episode"]) != (page_path(task), episode):
            reason = (
                f"the episode's page was left or reloaded: the browser shows {state['page']}, and only "
                f"{page_path(task)} as the episode opened it is judged"
            )
            return SiteJudgement(True, 0.0, reason, 0.0)
        if not state["WOB_DONE_GLOBAL"]:
            return SiteJudgement(
                answer is not None, 0.0, "ended before the task was done" if answer is not None else ""
            )
        raw = float(state["WOB_RAW_REWARD_GLOBAL"])
        reason = state["WOB_REWARD_REASON"]
        return SiteJudgement(True, raw, str(reason or _describe(raw)), float(state["WOB_REWARD_GLOBAL"]))

    def close(self, tab: Tab) -> None:
        pass

    def next_actions(self, task: Task, page: PageView) -> list[str]:
        """The text solver's actions on `page`; on a page whose task is drawn, the screenshot
        solver's plan where the observation showed the screenshot (no plan where it did not)."""
        name = task.metadata["page"]
        if name not in SCREENSHOT_PAGES:
            return miniwob_next_actions(name, page)
        return plan_calls(on_replica(task, plan_script(name))) if page.screenshot else []


def on_replica(task: Task, script: str) -> Any:
    """The value of `script` (a JavaScript function of no argument) on a replica of the task's page.

    The replica is a tab of this process's browser, apart from every episode's, where the task's
    page starts as its episode did: the same seed deals the same problem, laid out alike in the
    same viewport. A scripted solver reads there what the page keeps in its DOM and scripts, and
    tries what it likes, without touching the episode's page. It shows the page as it starts, so
    it serves plans made in one message. The tab is kept for the next replica, which recycles it
    (`fresh_tab`) as an episode does. `LookupError` if the script fails.
    """
    host = browser_host()

    async def run() -> Any:
        browser = await host.browser()
        idle = _IDLE_REPLICAS.setdefault(browser, [])  # on the host's loop: one coroutine at a time
        tab = await fresh_tab(browser, loopback_server().origin, 5_000, used=idle.pop() if idle else None)
        try:
            await MiniwobSite().open(tab, task)
            return await tab.page.evaluate(script)
        except Exception as e:  # the page is not as the solver expects
            raise LookupError(f"the solver's script failed on a replica of {task.id}: {e}") from e
        finally:
            idle.append(tab)

    return host.run(run(), REPLICA_TIMEOUT_S)


_IDLE_REPLICAS: weakref.WeakKeyDictionary[Any, list[Tab]] = weakref.WeakKeyDictionary()  # browser -> tabs


def page_path(task: Task) -> str:
    """The path of the task's page on the loopback server.

    >>> page_path(miniwob_source(["click-test"], 1)[0])
    '/wob/miniwob/click-test.html'
    """
    return f"/wob/miniwob/{task.metadata['page']}.html"


def _describe(raw: Any) -> str:
    return "success" if raw >= 1 else "failure" if raw <= -1 else f"partial credit {raw}"
