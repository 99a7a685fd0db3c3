"""`gfcr/Browser-v0`: web tasks in a real headless Chromium, driven by Playwright.

Each episode opens a fresh browser context on the task's page — a MiniWoB page or one of gfcr's
apps, all served on loopback and confined to that origin. The observation is the goal and the
page as accessibility-tree text whose elements carry stable references (`[ref=e5]`), or, for
vision-language agents, the page as a screenshot, or both (`observation=`, see
`gfcr.envs.browser.view`). The agent acts with function calls in its text, one or more per
message — `click("e5")`, `fill("e6", "Ada")`, `select(ref, option)`, `press(key)`, `type(text)`,
`hover(ref)`, `drag_and_drop(source, target)`, pointer actions at the screenshot's pixels
(`mouse_click(x, y)`, `mouse_down`, `mouse_move`, `mouse_up`), `scroll(dx, dy)`, `goto(url)`,
`back()`, `answer(text)`, `noop(ms)` — or with the same actions as native tool calls.
`action_syntax="browsergym"` takes BrowserGym's action functions instead
(`gfcr.envs.browser.browsergym_syntax`).

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

In the screenshot modes the observation is a `text_and_image` dict, `{"text": ..., "image": (600,
800, 3) pixels}`, and each message that shows the page holds the screenshot as an image part.

The browser starts on the first `reset()`, once per process; see docs/browser.md for examples.
This module wires the parts into a `TextEnv`: the actions are `gfcr.envs.browser.actions` (and
`browsergym_syntax`), the episode's tab and the calls on it `gfcr.envs.browser.episode`, the
sites and their judges `gfcr.envs.browser.sites`.
"""

from __future__ import annotations

import weakref
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, ClassVar

from gfcr.core import Action, Image, Message, Task, ToolCall, ToolSpec
from gfcr.envs.base import DEFAULT_MAX_ACTION_CHARS, DEFAULT_MAX_OBSERVATION_CHARS, Outcome, TextEnv
from gfcr.envs.browser.actions import (
    HOW_TO_ACT,
    INSTRUCTIONS,
    MAX_CALLS,
    action_tools,
    format_call,
    parse_calls,
)
from gfcr.envs.browser.browsergym_syntax import BROWSERGYM_INSTRUCTIONS, browsergym_tools
from gfcr.envs.browser.data import browser_source
from gfcr.envs.browser.episode import BrowserEpisode
from gfcr.envs.browser.site import Site, SiteJudgement
from gfcr.envs.browser.sites import make_sites
from gfcr.envs.browser.snapshot import URL, PageView
from gfcr.envs.browser.tab import MAX_WAIT_MS, Tab
from gfcr.envs.browser.verifier import episode_result
from gfcr.envs.browser.view import OBSERVATIONS, SCREENSHOT_SHAPE, Showing, View, reading_note
from gfcr.envs.budget import DEFAULT_MAX_TOOL_CALLS, DEFAULT_STEP_TIME_S
from gfcr.envs.spaces import text_and_image
from gfcr.envs.tasks import TaskSource
from gfcr.errors import UnknownNameError

# action syntax -> its tools on an episode's page, and the instructions that open the prompt
SYNTAXES: dict[str, tuple[Callable[[BrowserEpisode], list[ToolSpec]], str]] = {
    "gfcr": (action_tools, INSTRUCTIONS),
    "browsergym": (browsergym_tools, BROWSERGYM_INSTRUCTIONS),
}
SOLVER_MISSES = (LookupError, AttributeError, ValueError, TypeError, StopIteration)
LOOK_AGAIN = format_call("noop", 300)  # the scripted solver's wait when the page is not as it expects
LOOKS_BEFORE_GIVING_UP = 3


class BrowserEnv(TextEnv):
    """Web tasks in headless Chromium: MiniWoB pages and gfcr's shop, booking and mail apps.

    Keywords: `dataset` ("all", "miniwob", "solvable" (the MiniWoB pages with a scripted solver),
    "vision" (the MiniWoB pages whose task is drawn, solved from the screenshot), "apps", "shop",
    "booking", "mail", "injection" (the apps' prompt-injection tasks), a MiniWoB page such as
    "click-test", or a list), `num_seeds` (episodes per MiniWoB page), `max_turns`,
    `observation` ("text", "screenshot": the page as a picture, its pixels the coordinates'
    frame, or "both"), `screenshot` (PNG bytes in `info["screenshot"]`), `set_of_marks` (the
    screenshot with each element's ref drawn on it, and `info["marks"]`: ref -> (x, y, width,
    height) in its pixels), `miniwob_time_limit_s`, `time_scaled`, `action_timeout_ms`,
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
        observation: str = "text",
        screenshot: bool = False,
        set_of_marks: bool = False,
        miniwob_time_limit_s: float | None = None,
        time_scaled: bool = False,
        action_timeout_ms: int = 5_000,
        executable_path: str | None = None,
        headless: bool = True,
        system_prompt: str | None = None,
        action_syntax: str = "gfcr",
        max_action_chars: int = DEFAULT_MAX_ACTION_CHARS,
        max_observation_chars: int = DEFAULT_MAX_OBSERVATION_CHARS,
        max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS,
        step_time_s: float = DEFAULT_STEP_TIME_S,
        render_mode: str | None = None,
        tasks: TaskSource | None = None,
    ) -> None:
        tasks = tasks if tasks is not None else browser_source(dataset, num_seeds)
        if action_syntax not in SYNTAXES:
            raise UnknownNameError("action syntax", action_syntax, SYNTAXES)
        if observation not in OBSERVATIONS:
            raise UnknownNameError("observation", observation, OBSERVATIONS)
        make_tools, instructions = SYNTAXES[action_syntax]
        self.instructions = "\n".join(filter(None, (instructions, reading_note(observation, set_of_marks))))
        showing = Showing.of(observation, set_of_marks, picture=screenshot)
        self._episode = BrowserEpisode(action_timeout_ms, executable_path, headless, showing)
        weakref.finalize(self, self._episode.discard)  # an env dropped without close() frees its context
        super().__init__(
            tasks,
            tools=make_tools(self._episode),
            system_prompt=system_prompt,
            max_turns=max_turns,
            max_action_chars=max_action_chars,
            max_observation_chars=max_observation_chars,
            max_tool_calls=max_tool_calls,
            step_time_s=step_time_s,
            render_mode=render_mode,
        )
        self.sites: dict[str, Site] = make_sites(miniwob_time_limit_s)
        self.observation = observation
        if observation != "text":  # TextEnv is a gym.Env[str, str]: a Dict space is its image modes' own
            self.observation_space = text_and_image(max_observation_chars, SCREENSHOT_SHAPE)  # type: ignore[assignment]
        self.screenshot = screenshot or set_of_marks  # the picture in info too
        self.set_of_marks = set_of_marks
        self._view: View | None = None  # the latest look at the page, until extra_info reads it
        self.time_scaled = time_scaled
        self.action_syntax = action_syntax
        self._signatures = {name: list(tool.parameters["properties"]) for name, tool in self.tools.items()}

    # -- the episode -------------------------------------------------------------------------------

    def begin_episode(self, task: Task) -> None:
        """Open `task`'s page in a tab as good as new (the last episode's, recycled)."""
        self._episode.open(self.sites[task.metadata["site"]], task)

    def render_prompt(self, task: Task) -> str:
        """The instructions, then the goal and the page `begin_episode` opened."""
        page, _ = self._show(self._episode.first_page)
        return f"{self.instructions}\n\n{page}"

    def prompt_images(self, task: Task) -> tuple[Image, ...]:
        """The first page's screenshot, in the screenshot modes."""
        return self._show(self._episode.first_page)[1]

    def respond(self, action: Action) -> Outcome:
        """Run the action's calls in order on the page, then judge the episode and show the page."""
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
                page, images = self._show(episode.look()[1])
                return Outcome(f"{reason}\n\n{page}", signals={"format_ok": False}, images=images)
            results = self._perform(calls)
            if episode.error is not None:
                return self._broken(episode.error)
            judgement, view = episode.look()
            state = None
            if judgement.done or episode.answer is not None or self.turn >= self.max_turns:
                state, judgement = episode.final_state()
        except Exception as e:  # a dead page or browser: end the episode, never the caller
            return self._broken(e)
        return self._outcome(calls, results, judgement, view, bool(action.tool_calls), state)

    def extra_info(self) -> dict[str, Any]:
        """The page's screenshot (and marks) after every reset and step, with `screenshot=True`:
        the picture the step's look at the page took, or a new one after a step that took none."""
        view, self._view = self._view, None
        if not self.screenshot:
            return {}
        if view is None or (view.image is None and view.error is None):
            view = self._episode.picture()
        if view is None:  # no page is open
            return {}
        if view.image is None:
            return {"screenshot_error": view.error}
        return {"screenshot": view.image.data} | ({} if view.marks is None else {"marks": view.marks})

    def end_episode(self) -> None:
        """The site forgets the episode (an app's session); the tab stays, for the next to recycle."""
        self._episode.end()

    def close(self) -> None:
        """Close the tab too. No hook serves: the tab is the env's, not an episode's — each
        `begin_episode` recycles the last one, which makes a reset faster than a new tab would."""
        super().close()
        self._episode.discard(wait=True)

    @classmethod
    def oracle(cls, task: Task, messages: Sequence[Message]) -> str:
        """The next actions of the task's scripted solver, read off the latest page in `messages`.

        Where the page is not as the solver expects (a slow machine's page still drawing), it
        waits and reads the page again, `LOOKS_BEFORE_GIVING_UP` times, before it answers that it
        is stuck.
        """
        latest = next((m for m in reversed(messages) if f"\n{URL}" in m.text), Message("user", ""))
        page = PageView.parse(latest.text, screenshot=bool(latest.images))
        site = make_sites()[task.metadata["site"]]
        try:
            actions = site.next_actions(task, page)
        except SOLVER_MISSES as e:  # the page is not as the solver expects: it may still be settling
            settling = bool(page.root.children) or not page.screenshot  # not a page shown without text
            if settling and _trailing_replies(messages, LOOK_AGAIN) < LOOKS_BEFORE_GIVING_UP:
                return LOOK_AGAIN
            return format_call("answer", f"the scripted solver is stuck: {type(e).__name__}: {e}")
        return "\n".join(actions) or format_call("answer", "the scripted solver has no plan here")

    # -- machinery -------------------------------------------------------------------------------

    def on_page(self, work: Callable[[Tab], Awaitable[object]]) -> None:
        """Run `work(tab)` on the episode's page as the actions do (waits, errors, crashes alike)."""
        self._episode.on_page(work)

    def _perform(self, calls: list[ToolCall]) -> list[Message]:
        """Run the calls in order; stop at the first error or when the episode is over."""
        episode, results = self._episode, list[Message]()
        for number, call in enumerate(calls):
            message = self.run_tools(Action("", (call,))).messages[0]  # type: ignore[index]
            results.append(message)
            failed = message.text.startswith("Error:") or episode.error is not None
            if number + 1 < len(calls) and (failed or episode.answer is not None or episode.judge().done):
                why = "the error" if failed else "the end of the task"
                results.extend(
                    Message("tool", f"Skipped after {why}.", tool_call_id=c.id, name=c.name)
                    for c in calls[number + 1 :]
                )
                break
        return results

    def _show(self, view: View) -> tuple[str, tuple[Image, ...]]:
        """The text and the images an observation shows of `view`, which `extra_info` reads next."""
        self._view = view
        if self.observation == "text":
            return view.text, ()
        if view.image is None:
            return f"{view.text}\n({view.error})", ()
        return view.text, (view.image,)

    def _outcome(
        self,
        calls: list[ToolCall],
        results: list[Message],
        judgement: SiteJudgement,
        view: View,
        native: bool,
        state: dict[str, Any] | None,
    ) -> Outcome:
        page, images = self._show(view)
        done, reward, judged = episode_result(judgement, self._episode.answer is not None, self.time_scaled)
        ending = (
            f"The task is over: reward {reward:g} ({judgement.reason or 'no reason given'}).\n"
            if done
            else ""
        )
        signals = {
            "format_ok": True,
            "actions_ok": not any(m.text.startswith(("Error:", "Skipped after the error")) for m in results),
            **judged,
        }
        tail = f"{ending}\n{page}" if ending else f"\n{page}"
        if native:
            messages = [
                *results[:-1],
                Message(
                    "tool",
                    [f"{results[-1].text}\n{tail}", *images],
                    tool_call_id=results[-1].tool_call_id,
                    name=results[-1].name,
                ),
            ]
            observation = "\n".join(m.text for m in messages)
            return Outcome(observation, reward, done, signals=signals, messages=tuple(messages), state=state)
        lines = [
            f"{format_call(c.name, *c.arguments.values())}: {m.text}"
            for c, m in zip(calls, results, strict=True)
        ]
        observation = "\n".join(lines) + "\n" + tail
        return Outcome(observation, reward, done, signals=signals, state=state, images=images)

    def _broken(self, error: Exception) -> Outcome:
        self._episode.discard()
        message = f"The browser failed ({error}); the episode is truncated. Call reset() to start a new one."
        return Outcome(message, truncated=True, signals={"format_ok": True})


def _trailing_replies(messages: Sequence[Message], text: str) -> int:
    """How many of the latest assistant messages, counting back, are `text`.

    >>> _trailing_replies([Message("assistant", "a"), Message("user", "p"), Message("assistant", "b")], "b")
    1
    """
    replies = [m.text for m in messages if m.role == "assistant"]
    return next((n for n, reply in enumerate(reversed(replies)) if reply != text), len(replies))
