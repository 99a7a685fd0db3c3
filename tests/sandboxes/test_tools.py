"""The `python` tool: the math env's code interpreter, run in the sandbox."""

from __future__ import annotations

import json

import gymnasium as gym

import gfcr  # noqa: F401  (registers the envs)
from gfcr.sandboxes import ExecResult, Limits
from gfcr.sandboxes.tools import format_result, python_tool


def call(code: str) -> str:
    return f"<tool_call>{json.dumps({'name': 'python', 'arguments': {'code': code}})}</tool_call>"


def test_math_env_offers_python_and_runs_it_in_the_sandbox(sandbox):
    env = gym.make("gfcr/Math-v0", split="AIME2024", tools=["python"])
    obs, info = env.reset(options={"task_id": "mmath/AIME2024/0"})
    assert [t["function"]["name"] for t in info["tools"]] == ["python"] and "python" in obs
    obs, reward, terminated, truncated, info = env.step(call("print(9 / (1/2 + 2) * 60)"))
    assert (obs, reward, terminated, truncated) == ("216.0", 0.0, False, False)
    assert info["messages"][0].role == "tool"
    obs = env.step(call("import os\nprint(os.listdir('/root'))"))[0]
    assert "[status: error" in obs and "FileNotFoundError" in obs  # the host is out of reach
    _, reward, terminated, *_ = env.step("\\boxed{204}")
    assert (reward, terminated) == (1.0, True)


def test_the_tool_reports_failures_to_the_agent(sandbox):
    tool = python_tool(sandbox, Limits(wall_s=1))
    assert tool(code="print(sum(range(5)))") == "10"
    assert tool(code="import time; time.sleep(5)").endswith("[status: timeout — the run was stopped]")
    assert format_result(ExecResult("ok", 0, "", "", 0.1, 0.1, 1.0)) == "(no output)"
    assert format_result(ExecResult("killed", -9, "", "", 0.1, 0.1, 1.0)) == (
        "[status: killed — the run was killed (signal 9)]"
    )
