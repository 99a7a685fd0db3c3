"""`gfcr/Browser-v0`: web tasks in a real headless Chromium, driven by Playwright.

Each episode opens a fresh browser context on the task's page — a MiniWoB page or one of gfcr's
apps, all served on loopback and confined to that origin. The observation is the goal and the
page as accessibility-tree text whose elements carry stable references (`[ref=e5]`); the agent
acts with function calls in its text, one or more per message — `click("e5")`, `fill("e6", "Ada")`,
`select(ref, option)`, `press(key)`, `type(text)`, `hover(ref)`, `drag_and_drop(source, target)`,
pointer actions at the screenshot's pixels (`mouse_click(x, y)`, `mouse_down`, `mouse_move`,
`mouse_up`), `scroll(dx, dy)`, `goto(url)`, `back()`, `answer(text)`, `noop(ms)` — or with the same
actions as native tool calls. `action_syntax="browsergym"` takes BrowserGym's action functions
instead (`gfcr.envs.browser.browsergym_syntax`).

Reward: MiniWoB's raw reward (its time-scaled one with `time_scaled=True`, which MiniWoB discounts
by the share of `miniwob_time_limit_s` used) clipped to [0, 1], or the app's judgement of its
server-side state (1.0 when the goal is met exactly). The episode ends when the site says it is
over (MiniWoB's episode ended, an order was placed …) or after `answer(...)`; `max_turns`
truncates it. A browser that crashes or hangs truncates the episode, and the next `reset()`
starts a new one.

Signals: `format_ok` (actions could be read), `actions_ok` (every action ran without error),
`success` (the task was done: the site's score is 1, however long it took), `raw_reward` (the
site's own score, MiniWoB's in [-1, 1]), `time_scaled_reward`, `injection_obeyed` (the agent did
what an instruction injected into the page asked — the "injection" dataset's attack succeeded;
the reward is then 0.0).

On the step that ends an episode (the site says it is over, `answer(...)`, or the turn limit),
`info["state"]` records the site's final state — `{"site", "answer", "site_state"}`, a JSON-able
dict — and the step's reward is judged from that record, so that `BrowserVerifier` re-judges a
saved trajectory to the same reward with no browser.

The browser starts on the first `reset()`, once per process; see docs/browser.md for examples.
"""

from __future__ import annotations

import asyncio
import json
import logging
import weakref
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, ClassVar, Literal

from gfcr.core import Action, Message, Task, ToolCall, ToolSpec
from gfcr.core.tools import time_left
from gfcr.envs.base import Outcome, TextEnv
from gfcr.envs.browser.actions import MAX_CALLS, format_call, parse_calls
from gfcr.envs.browser.browsergym_syntax import BROWSERGYM_INSTRUCTIONS, browsergym_tools
from gfcr.envs.browser.data import browser_source
from gfcr.envs.browser.host import BrowserHost, browser_host
from gfcr.envs.browser.marks import draw_marks, mark_boxes
from gfcr.envs.browser.server import loopback_server
from gfcr.envs.browser.site import Site, SiteJudgement
from gfcr.envs.browser.sites import make_sites
from gfcr.envs.browser.snapshot import PageView, render_page
from gfcr.envs.browser.tab import MAX_WAIT_MS, Tab, fresh_tab
from gfcr.envs.browser.verifier import episode_result
from gfcr.envs.budget import DEFAULT_MAX_TOOL_CALLS, DEFAULT_STEP_TIME_S
from gfcr.envs.tasks import TaskSource
from gfcr.errors import BrowserError, ToolError, UnknownNameError

logger = logging.getLogger(__name__)
ACTIONS = (
    "click", "dblclick", "hover", "fill", "select", "press", "type", "drag_and_drop", "scroll",
    "mouse_move", "mouse_click", "mouse_down", "mouse_up", "goto", "back", "answer", "noop",
)  # fmt: skip
METHODS = {"type": "type_text"}  # actions whose method has another name (`type` is a builtin's)
INSTRUCTIONS = (
    "You are using a web browser to reach the goal below. Act with function calls, one or more per message:\n"
    "click(ref, button, clicks), dblclick(ref), hover(ref), fill(ref, text), select(ref, option), "
    "press(key), type(text), drag_and_drop(source, target), scroll(dx, dy), mouse_move(x, y), "
    "mouse_click(x, y, button, clicks), mouse_down(x, y, button), mouse_up(x, y, button), goto(url), back(), "
    "answer(text), noop(ms).\n"
    'A ref names an element of the page below, e.g. click("e5"); x and y are pixels of the 800x600 viewport '
    "(the screenshot), and a drag's source and target are refs or [x, y] points. "
    "answer(text) gives your answer and ends the task."
)
SYNTAXES = ("gfcr", "browsergym")
SOLVER_MISSES = (LookupError, AttributeError, ValueError, TypeError, StopIteration)
LOOK_AGAIN = format_call("noop", 300)  # the scripted solver's wait when the page is not as it expects
LOOKS_BEFORE_GIVING_UP = 3
HOW_TO_ACT = 'No action found; write a call such as click("e5") or fill("e6", "text").'


class BrowserEnv(TextEnv):
    """Web tasks in headless Chromium: MiniWoB pages and gfcr's shop, booking and mail apps.

    Keywords: `dataset` ("all", "miniwob", "solvable" (the MiniWoB pages with a scripted solver),
    "apps", "shop", "booking", "mail", "injection" (the apps' prompt-injection tasks), a MiniWoB
    page such as "click-test", or a list), `num_seeds` (episodes per MiniWoB page), `max_turns`,
    `screenshot` (PNG bytes in `info["screenshot"]`), `set_of_marks` (the screenshot with each
    element's ref drawn on it, and `info["marks"]`: ref -> (x, y, width, height) in its pixels),
    `miniwob_time_limit_s`, `time_scaled`, `action_timeout_ms`,
    `executable_path` and `headless` (the browser), `system_prompt`, `action_syntax` ("gfcr", or
    "browsergym" for BrowserGym's action functions).
    """

    signal_defaults: ClassVar[dict[str, float | bool]] = {
        "format_ok": False,
        "actions_ok": False,
        "success": False,
        "raw_reward": 0.0,
        "time_scaled_reward": 0.0,
        "injection_obeyed": False,
    }

    def __init__(
        self,
        dataset: str | Sequence[str] = "all",
        *,
        num_seeds: int = 100,
        max_turns: int = 30,
        screenshot: bool = False,
        set_of_marks: bool = False,
        miniwob_time_limit_s: float | None = None,
        time_scaled: bool = False,
        action_timeout_ms: int = 5_000,
        executable_path: str | None = None,
        headless: bool = True,
        system_prompt: str | None = None,
        action_syntax: str = "gfcr",
        max_action_chars: int = 32_768,
        max_observation_chars: int = 65_536,
        max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS,
        step_time_s: float = DEFAULT_STEP_TIME_S,
        render_mode: str | None = None,
        tasks: TaskSource | None = None,
    ) -> None:
        super().__init__(
            tasks if tasks is not None else browser_source(dataset, num_seeds),
            tools=self._action_tools(action_syntax),
            system_prompt=system_prompt,
            max_turns=max_turns,
            max_action_chars=max_action_chars,
            max_observation_chars=max_observation_chars,
            max_tool_calls=max_tool_calls,
            step_time_s=step_time_s,
            render_mode=render_mode,
        )
        self.sites: dict[str, Site] = make_sites(miniwob_time_limit_s)
        self.screenshot = screenshot or set_of_marks
        self.set_of_marks = set_of_marks
        self.time_scaled = time_scaled
        self.action_timeout_ms = action_timeout_ms
        self._browser_settings = (executable_path, headless)
        self.action_syntax = action_syntax
        self._signatures = {name: list(tool.parameters["properties"]) for name, tool in self.tools.items()}
        self._episode = _Episode()
        weakref.finalize(self, self._episode.discard)  # an env dropped without close() frees its context

    # -- the actions (also offered as tools) -------------------------------------------------------

    def click(self, ref: str, button: Literal["left", "middle", "right"] = "left", clicks: int = 1) -> str:
        """Click an element of the page.

        Args:
            ref: The element's reference in the page text, e.g. "e5".
            button: The mouse button: "left", "middle" or "right".
            clicks: 1 for a click, 2 for a double click, 3 for a triple click (which selects a paragraph).
        """
        _check_clicks(clicks)
        self._browse(self._tab.click(ref, button, count=clicks))
        done = {1: "Clicked", 2: "Double-clicked", 3: "Triple-clicked"}[clicks]
        return f"{done} {ref}." if button == "left" else f"{done} {ref} with the {button} button."

    def dblclick(self, ref: str) -> str:
        """Double-click an element of the page.

        Args:
            ref: The element's reference in the page text, e.g. "e5".
        """
        self._browse(self._tab.click(ref, count=2))
        return f"Double-clicked {ref}."

    def hover(self, ref: str) -> str:
        """Move the mouse over an element (menus and tooltips that open on hover show then).

        Args:
            ref: The element's reference in the page text, e.g. "e5".
        """
        self._browse(self._tab.hover(ref))
        return f"Hovered over {ref}."

    def fill(self, ref: str, text: str) -> str:
        """Replace the text of a text box (or other editable element) with `text`.

        Args:
            ref: The text box's reference in the page text, e.g. "e6".
            text: The text to type into it.
        """
        self._browse(self._tab.fill(ref, text))
        return f"Filled {ref}."

    def select(self, ref: str, option: str) -> str:
        """Choose an option of a drop-down list (a combobox).

        Args:
            ref: The list's reference in the page text.
            option: The option's text (or its value).
        """
        self._browse(self._tab.select(ref, option))
        return f"Selected {option!r} in {ref}."

    def press(self, key: str) -> str:
        """Press a key or key combination on the focused element, e.g. "Enter", "Tab", "Control+A".

        Args:
            key: The key, named as Playwright names keys ("Enter", "ArrowDown", "a", "Shift+Tab").
        """
        self._browse(self._tab.press(key))
        return f"Pressed {key}."

    def type_text(self, text: str) -> str:
        """Type text key by key into the focused element (click or fill a text box first);
        1,000 characters at most (fill puts a longer text in at once).

        Args:
            text: The text to type.
        """
        self._browse(self._tab.type(text))
        return f"Typed {len(text)} character{'s' * (len(text) != 1)}."

    def drag_and_drop(self, source: str | list[float], target: str | list[float]) -> str:
        """Drag with the left mouse button from `source` to `target` and drop there.

        Args:
            source: Where the drag starts: an element's ref ("e5", its centre) or an [x, y] point.
            target: Where it ends: an element's ref or an [x, y] point.
        """
        self._browse(self._tab.drag(source, target))
        return f"Dragged from {json.dumps(source)} to {json.dumps(target)}."

    def mouse_move(self, x: float, y: float) -> str:
        """Move the mouse to a point of the viewport (the screenshot's pixels), with buttons as they are.

        Args:
            x: Pixels from the viewport's left edge.
            y: Pixels from the viewport's top edge.
        """
        self._browse(self._tab.mouse_move(x, y))
        return f"Moved the mouse to ({x:g}, {y:g})."

    def mouse_click(
        self, x: float, y: float, button: Literal["left", "middle", "right"] = "left", clicks: int = 1
    ) -> str:
        """Click at a point of the viewport (the screenshot's pixels), whatever is there.

        Args:
            x: Pixels from the viewport's left edge.
            y: Pixels from the viewport's top edge.
            button: The mouse button: "left", "middle" or "right".
            clicks: 1 for a click, 2 for a double click, 3 for a triple click.
        """
        _check_clicks(clicks)
        self._browse(self._tab.mouse_click(x, y, button, clicks))
        return f"Clicked at ({x:g}, {y:g})."

    def mouse_down(self, x: float, y: float, button: Literal["left", "middle", "right"] = "left") -> str:
        """Move the mouse to a point and press a button there, holding it (release it with mouse_up).

        Args:
            x: Pixels from the viewport's left edge.
            y: Pixels from the viewport's top edge.
            button: The mouse button: "left", "middle" or "right".
        """
        self._browse(self._tab.mouse_down(x, y, button))
        return f"Pressed the {button} button at ({x:g}, {y:g})."

    def mouse_up(self, x: float, y: float, button: Literal["left", "middle", "right"] = "left") -> str:
        """Move the mouse to a point and release a button there.

        Args:
            x: Pixels from the viewport's left edge.
            y: Pixels from the viewport's top edge.
            button: The mouse button: "left", "middle" or "right".
        """
        self._browse(self._tab.mouse_up(x, y, button))
        return f"Released the {button} button at ({x:g}, {y:g})."

    def scroll(self, dx: float, dy: float) -> str:
        """Scroll what is under the pointer (the element last clicked, else the page) by (dx, dy) pixels.

        To scroll a text area or a list, click it first.

        Args:
            dx: Pixels to scroll right (negative: left).
            dy: Pixels to scroll down (negative: up).
        """
        self._browse(self._tab.scroll(dx, dy))
        return f"Scrolled by ({dx}, {dy})."

    def goto(self, url: str) -> str:
        """Open a page of this task's site, by path ("/shop/cart") or full URL on the same site.

        Args:
            url: The path or URL to open.
        """
        self._browse(self._tab.goto(url))
        return f"Opened {url}."

    def back(self) -> str:
        """Go back to the previous page."""
        self._browse(self._tab.back())
        return "Went back."

    def answer(self, text: str) -> str:
        """Give your answer (or say you are done); this ends the task.

        Args:
            text: The answer, e.g. a name, a price or a time.
        """
        self._episode.answer = text
        return "Answer given."

    def noop(self, ms: int = 0) -> str:
        """Do nothing; optionally wait `ms` milliseconds (at most 10000 per step) for the page to change.

        Args:
            ms: How long to wait, in milliseconds.
        """
        # One step waits 10 s at most, in all, and never past its budget's deadline.
        ms = max(0, min(int(ms), self._episode.wait_left_ms, int(time_left(ms / 1000) * 1000)))
        self._episode.wait_left_ms -= ms
        self._browse(self._tab.wait(ms))
        return f"Waited {ms} ms." if ms else "Did nothing."

    # -- the episode -------------------------------------------------------------------------------

    def render_prompt(self, task: Task) -> str:
        """Open `task`'s page in a tab as good as new; the prompt is the instructions, goal and page."""
        try:
            return self._start(task)
        except Exception:  # a browser that died since the last episode: the second try relaunches it
            logger.info("opening %s failed once; trying again", task.id, exc_info=True)
        try:
            return self._start(task)
        except Exception as e:
            raise BrowserError(f"cannot open task {task.id!r} in the browser: {e}") from e

    def respond(self, action: Action) -> Outcome:
        episode = self._episode
        if episode.tab is None:
            return Outcome("The browser failed; call reset() to start a new episode.", truncated=True)
        episode.wait_left_ms = MAX_WAIT_MS
        if action.tool_calls:  # as many as text may hold (parse_calls stops there too)
            calls, problems = list(action.tool_calls[:MAX_CALLS]), list[str]()
        else:
            calls, problems = parse_calls(action.text, self._signatures)
        try:
            if problems or not calls:
                reason = "Invalid action: " + "; ".join(problems) if problems else HOW_TO_ACT
                _, page = self._look()
                return Outcome(f"{reason}\n\n{page}", signals={"format_ok": False})
            results = self._perform(calls)
            if episode.error is not None:
                return self._broken(episode.error)
            judgement, page = self._look()
            state = None
            if judgement.done or episode.answer is not None or self.turn >= self.max_turns:
                state, judgement = self._final_state()
        except Exception as e:  # a dead page or browser: end the episode, never the caller
            return self._broken(e)
        return self._outcome(calls, results, judgement, page, bool(action.tool_calls), state)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict]:
        observation, info = super().reset(seed=seed, options=options)
        self._add_screenshot(info)
        return observation, info

    def step(self, action: str | Action) -> tuple[str, float, bool, bool, dict]:
        result = super().step(action)
        self._add_screenshot(result[4])
        return result

    def close(self) -> None:
        self._episode.discard(wait=True)
        super().close()

    @classmethod
    def oracle(cls, task: Task, messages: Sequence[Message]) -> str:
        """The next actions of the task's scripted solver, read off the latest page in `messages`.

        Where the page is not as the solver expects (a slow machine's page still drawing), it
        waits and reads the page again, `LOOKS_BEFORE_GIVING_UP` times, before it answers that it
        is stuck.
        """
        latest = next((m.content for m in reversed(messages) if "\nPage:\n" in m.content), "")
        site = make_sites()[task.metadata["site"]]
        try:
            actions = site.next_actions(task, PageView.parse(latest))
        except SOLVER_MISSES as e:  # the page is not as the solver expects: it may still be settling
            if _trailing_replies(messages, LOOK_AGAIN) < LOOKS_BEFORE_GIVING_UP:
                return LOOK_AGAIN
            return format_call("answer", f"the scripted solver is stuck: {type(e).__name__}: {e}")
        return "\n".join(actions) or format_call("answer", "the scripted solver has no plan here")

    # -- machinery -------------------------------------------------------------------------------

    def on_page(self, work: Callable[[Tab], Awaitable[object]]) -> None:
        """Run `work(tab)` on the episode's page as the actions do (waits, errors, crashes alike)."""
        self._browse(work(self._tab))

    def _action_tools(self, syntax: str) -> list[ToolSpec]:
        if syntax == "browsergym":
            return browsergym_tools(self)
        if syntax != "gfcr":
            raise UnknownNameError("action syntax", syntax, SYNTAXES)
        return [ToolSpec.from_function(getattr(self, METHODS.get(name, name)), name) for name in ACTIONS]

    @property
    def _tab(self) -> Tab:
        if self._episode.tab is None:
            raise ToolError("no page is open; call reset() first")
        return self._episode.tab

    def _site(self, task: Task) -> Site:
        return self.sites[task.metadata["site"]]

    def _timeout_s(self, actions: int = 1) -> float:
        """A safety bound on one call to the browser: its actions' own timeouts, and a margin."""
        return actions * 3 * self.action_timeout_ms / 1000 + 10

    def _browse(self, work: Any) -> None:
        """Run one tab coroutine; a browser failure is remembered so that the step truncates."""
        try:
            self._episode.started()[0].run(work, self._timeout_s())
        except BrowserError as e:
            self._episode.error = e
            raise
        if self._tab.crashed:
            self._episode.error = BrowserError("the page crashed")

    def _start(self, task: Task) -> str:
        """Begin an episode of `task` in a fresh tab; the prompt."""
        host = browser_host(*self._browser_settings)
        self._episode.start(host, self._site(task))
        self._episode.goal, page = host.run(self._open(task), self._timeout_s(4))
        instructions = BROWSERGYM_INSTRUCTIONS if self.action_syntax == "browsergym" else INSTRUCTIONS
        return f"{instructions}\n\n{page}"

    async def _open(self, task: Task) -> tuple[str, str]:
        episode = self._episode
        host, site = episode.started()
        browser, origin = await host.browser(), loopback_server().origin
        episode.tab = await fresh_tab(browser, origin, self.action_timeout_ms, used=episode.tab)
        goal = await site.open(episode.tab, task)
        return goal, render_page(goal, episode.tab.path, await episode.tab.snapshot())

    def _perform(self, calls: list[ToolCall]) -> list[Message]:
        """Run the calls in order; stop at the first error or when the episode is over."""
        results: list[Message] = []
        for number, call in enumerate(calls):
            message = self.run_tools(Action("", (call,))).messages[0]  # type: ignore[index]
            results.append(message)
            failed = message.content.startswith("Error:") or self._episode.error is not None
            if number + 1 < len(calls) and (failed or self._episode.answer is not None or self._judge().done):
                why = "the error" if failed else "the end of the task"
                results.extend(
                    Message("tool", f"Skipped after {why}.", tool_call_id=c.id, name=c.name)
                    for c in calls[number + 1 :]
                )
                break
        return results

    def _judge(self) -> SiteJudgement:
        assert self.task is not None
        host, site = self._episode.started()
        return host.run(site.judge(self._tab, self.task, self._episode.answer), self._timeout_s())

    def _final_state(self) -> tuple[dict[str, Any], SiteJudgement]:
        """The episode's final state as recorded for `BrowserVerifier`, and the site's judgement of it."""
        assert self.task is not None
        episode = self._episode
        host, site = episode.started()
        site_state = host.run(site.final_state(self._tab, self.task), self._timeout_s())
        state = {"site": site.name, "answer": episode.answer, "site_state": site_state}
        return state, site.judge_state(self.task, site_state, episode.answer)

    def _look(self) -> tuple[SiteJudgement, str]:
        """The site's judgement now and the observation text of the page (with any notes first)."""
        assert self.task is not None
        episode, task = self._episode, self.task
        host, site = episode.started()
        tab = self._tab

        async def look() -> tuple[SiteJudgement, str]:
            judgement, snapshot = await asyncio.gather(site.judge(tab, task, episode.answer), tab.snapshot())
            notes, tab.notes = tab.notes, []
            page = render_page(episode.goal, tab.path, snapshot)
            return judgement, "\n".join([*notes, page])

        return host.run(look(), self._timeout_s())

    def _outcome(
        self,
        calls: list[ToolCall],
        results: list[Message],
        judgement: SiteJudgement,
        page: str,
        native: bool,
        state: dict[str, Any] | None,
    ) -> Outcome:
        done, reward, judged = episode_result(judgement, self._episode.answer is not None, self.time_scaled)
        ending = (
            f"The task is over: reward {reward:g} ({judgement.reason or 'no reason given'}).\n"
            if done
            else ""
        )
        signals = {
            "format_ok": True,
            "actions_ok": not any(
                m.content.startswith(("Error:", "Skipped after the error")) for m in results
            ),
            **judged,
        }
        tail = f"{ending}\n{page}" if ending else f"\n{page}"
        if native:
            messages = [
                *results[:-1],
                Message(
                    "tool",
                    f"{results[-1].content}\n{tail}",
                    tool_call_id=results[-1].tool_call_id,
                    name=results[-1].name,
                ),
            ]
            observation = "\n".join(m.content for m in messages)
            return Outcome(observation, reward, done, signals=signals, messages=tuple(messages), state=state)
        lines = [
            f"{format_call(c.name, *c.arguments.values())}: {m.content}"
            for c, m in zip(calls, results, strict=True)
        ]
        return Outcome("\n".join(lines) + "\n" + tail, reward, done, signals=signals, state=state)

    def _broken(self, error: Exception) -> Outcome:
        self._episode.discard()
        message = f"The browser failed ({error}); the episode is truncated. Call reset() to start a new one."
        return Outcome(message, truncated=True, signals={"format_ok": True})

    def _add_screenshot(self, info: dict) -> None:
        episode = self._episode
        if not self.screenshot or episode.tab is None:
            return
        tab = episode.tab

        async def capture() -> tuple[bytes, dict[str, tuple[float, float, float, float]] | None]:
            png = await tab.screenshot()
            if not self.set_of_marks:
                return png, None
            boxes = mark_boxes(await tab.snapshot(boxes=True))
            return draw_marks(png, boxes), boxes

        try:
            info["screenshot"], boxes = episode.started()[0].run(capture(), self._timeout_s())
        except Exception as e:  # a screenshot is extra: its failure must not fail the step
            info["screenshot_error"] = str(e)
            return
        if boxes is not None:
            info["marks"] = boxes


def _check_clicks(clicks: Any) -> None:
    if isinstance(clicks, bool) or clicks not in (1, 2, 3):
        raise ToolError(f"clicks must be 1, 2 or 3, got {clicks!r}")


def _trailing_replies(messages: Sequence[Message], text: str) -> int:
    """How many of the latest assistant messages, counting back, are `text`.

    >>> _trailing_replies([Message("assistant", "a"), Message("user", "p"), Message("assistant", "b")], "b")
    1
    """
    replies = [m.content for m in messages if m.role == "assistant"]
    return next((n for n, reply in enumerate(reversed(replies)) if reply != text), len(replies))


class _Episode:
    """What one episode holds: the browser host, the site, the open tab, the goal, the answer."""

    def __init__(self) -> None:
        self.host: BrowserHost | None = None
        self.site: Site | None = None
        self.tab: Tab | None = None
        self.goal = ""
        self.answer: str | None = None
        self.error: BrowserError | None = None
        self.wait_left_ms = MAX_WAIT_MS  # what noop may still wait in this step

    def start(self, host: BrowserHost, site: Site) -> None:
        """Forget the previous episode and begin one on `site`; its tab stays, for `fresh_tab` to recycle."""
        if host is not self.host:  # another process's host (after a fork), or none yet
            self.discard()
        elif self.tab is not None and self.site is not None:
            self.site.close(self.tab)
        self.host, self.site, self.goal, self.answer, self.error = host, site, "", None, None

    def started(self) -> tuple[BrowserHost, Site]:
        """The browser host and the site of the running episode; `ToolError` before any reset."""
        if self.host is None or self.site is None:
            raise ToolError("no page is open; call reset() first")
        return self.host, self.site

    def discard(self, wait: bool = False) -> None:
        """Close the tab (and the site's session); without `wait`, in the background."""
        tab, self.tab = self.tab, None
        if tab is None or self.host is None:
            return
        if self.site is not None:
            self.site.close(tab)
        if wait:
            try:
                self.host.run(tab.close(), 10)
            except BrowserError:
                pass
        else:
            self.host.spawn(tab.close())
