"""The BrowserGym side of benchmarks/browser.py: run under benchmarks/.venv-browsergym/bin/python.

Plays the same MiniWoB tasks as gfcr with BrowserGym's `browsergym/miniwob.<task>` envs (as
installed: `browsergym-miniwob` 0.14.3, Playwright 1.44) and prints one JSON object: the seconds of
every `reset()` and `step()`, and each episode's reward. Actions are BrowserGym's own
(`click(bid)`, `fill(bid, text)`), aimed at the element a task needs; the element's `bid` is read
from the page between steps, outside the timed calls.

    MINIWOB_URL=file:///…/miniwob/html/miniwob/ PLAYWRIGHT_BROWSERS_PATH=… \\
        benchmarks/.venv-browsergym/bin/python benchmarks/_browsergym_peer.py \\
        '{"tasks": ["click-test"], "seeds": [0, 1], "pre_observation_delay": 0.5}'
"""

from __future__ import annotations

import json
import re
import sys
import time

import browsergym.miniwob  # noqa: F401  (registers browsergym/miniwob.*)
import gymnasium as gym

BID = "selector => document.querySelector(selector).getAttribute('bid')"
BID_BY_TEXT = """([selector, text]) => [...document.querySelectorAll(selector)]
  .find(element => element.textContent.trim() === text).getAttribute('bid')"""


def plan(task: str, goal: str) -> list[tuple[str, object, str | None]]:
    """(action, element locator, text) steps that solve `task` for `goal`."""
    quoted = re.findall(r'"([^"]*)"', goal)
    if task in ("click-test", "focus-text"):
        return [("click", "#subbtn" if task == "click-test" else "#tt", None)]
    if task == "click-button":
        return [("click", ("#area button", quoted[0]), None)]
    if task == "enter-text":
        return [("fill", "#tt", quoted[0]), ("click", "#subbtn", None)]
    if task == "login-user":
        return [
            ("fill", "#username", quoted[0]),
            ("fill", "#password", quoted[1]),
            ("click", "#subbtn", None),
        ]
    raise ValueError(f"no plan for {task}")


def main(config: dict) -> dict:
    resets: list[float] = []
    steps: list[float] = []
    rewards: list[float] = []
    for task in config["tasks"]:
        env = gym.make(f"browsergym/miniwob.{task}", pre_observation_delay=config["pre_observation_delay"])
        for seed in config["seeds"]:
            started = time.perf_counter()
            obs, _ = env.reset(seed=seed)
            resets.append(time.perf_counter() - started)
            page = env.unwrapped.page
            reward = 0.0
            for action, where, text in plan(task, obs["goal"]):
                bid = (
                    page.evaluate(BID_BY_TEXT, list(where))
                    if isinstance(where, tuple)
                    else page.evaluate(BID, where)
                )
                call = (
                    f'{action}("{bid}")'
                    if text is None
                    else f"{action}({json.dumps(bid)}, {json.dumps(text)})"
                )
                time.sleep(config["think_s"])  # the policy choosing its action: not timed
                started = time.perf_counter()
                obs, reward, terminated, truncated, _ = env.step(call)
                steps.append(time.perf_counter() - started)
                if obs["last_action_error"]:
                    print(f"{task}/{seed}: {call}: {obs['last_action_error']}", file=sys.stderr)
                if terminated or truncated:
                    break
            rewards.append(float(reward))
        env.close()
    return {"resets": resets, "steps": steps, "rewards": rewards}


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))))
