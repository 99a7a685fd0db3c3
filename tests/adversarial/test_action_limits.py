"""Limits apply to an action however it is encoded: text, or native tool calls from a server."""

from __future__ import annotations

import time

import gymnasium as gym
import pytest

import gfcr  # noqa: F401  (registers the envs)
from gfcr.core import Action, ToolCall


@pytest.mark.parametrize("env_id", ["gfcr/ToolUse-v0", "gfcr/Math-v0", "gfcr/SQL-v0"])
def test_native_tool_call_arguments_count_toward_max_action_chars(env_id):
    env = gym.make(env_id, max_action_chars=1000)
    env.reset(seed=0)
    huge = Action("", (ToolCall("lookup", {"x": "a" * 5000}),))
    obs, reward, terminated, truncated, info = env.step(huge)
    assert obs.startswith("Invalid action: 50") and "over the limit of 1000" in obs
    assert (reward, truncated, info["signals"]["format_ok"]) == (0.0, True, False)
    env.close()


@pytest.fixture(scope="module")
def browser():
    env = gym.make("gfcr/Browser-v0", dataset=["click-test"], num_seeds=2)
    yield env
    env.close()


def test_native_browser_calls_are_capped_per_step_like_text_ones(browser):
    browser.reset(seed=0)
    calls = tuple(ToolCall("noop", {"ms": 0}, f"c{i}") for i in range(80))
    *_, info = browser.step(Action("", calls))
    assert len([m for m in info["messages"] if m.role == "tool"]) == 50


def test_a_steps_waits_together_last_at_most_ten_seconds(browser, monkeypatch):
    monkeypatch.setattr("gfcr.envs.browser.env.MAX_WAIT_MS", 500)  # a short budget keeps the test quick
    browser.reset(seed=0)
    calls = tuple(ToolCall("noop", {"ms": 10_000}, f"c{i}") for i in range(8))
    started = time.monotonic()
    *_, info = browser.step(Action("", calls))
    assert time.monotonic() - started < 3.0
    waits = [m.content for m in info["messages"] if m.role == "tool"]
    assert waits[0] == "Waited 500 ms." and all(w.startswith("Did nothing.") for w in waits[1:])
