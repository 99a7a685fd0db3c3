"""`gfcr/CodeInteractive-v0`: write, run and test code over several turns, then submit.

Tools: `run_python(code)` runs code in the episode's Python session (state persists between
calls, like notebook cells); `run_tests(code="")` runs the task's *visible* tests (by default
on the code run so far); `submit(code)` ends the episode, graded on the *hidden* tests. A reply
without a tool call that holds a ```python block counts as its submission. Reward 1.0 when every
hidden test passes; 0.0 otherwise, and when the turn limit or a step past its tool budget
(`max_tool_calls`, `step_time_s`; a call still running at the deadline is stopped) ends the episode first.

Signals: those of `gfcr/Code-v0`, plus `submitted`, and on a step that ran the visible tests
`tests_run` and `visible_pass_fraction` (the best share passing among the step's `run_tests`
calls), which the family's process rule reads (`process_rules`: progress in that share).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, ClassVar

from gfcr.core import Action, Message, Task, ToolSpec
from gfcr.core.trajectory import Signals
from gfcr.envs.base import Outcome
from gfcr.envs.code.env import CodeEnv, _reference
from gfcr.envs.code.extract import extract_code
from gfcr.envs.code.grading import grade
from gfcr.envs.code.verifier import summary
from gfcr.errors import SandboxError, ToolError
from gfcr.filter.process import ProcessScorer, ProgressScorer
from gfcr.sandboxes import Session
from gfcr.sandboxes.tools import call_limits, format_result

TOOL_HINT = (
    "\n\nYou may call run_python(code) to run code in a persistent Python session, run_tests(code) to run "
    "the visible tests, and must finish with submit(code): the complete solution, graded on hidden tests."
)


def visible_tests_level(signals: Signals) -> float | None:
    """The level a step reached: the share of visible tests passing, on a step that ran them."""
    return float(signals["visible_pass_fraction"]) if signals.get("tests_run") else None


class CodeInteractiveEnv(CodeEnv):
    """Multi-turn code tasks with a Python session, visible tests and a final submission.

    >>> env = CodeInteractiveEnv()
    >>> obs, info = env.reset(options={"task_id": "humaneval/53"})
    >>> call = '<tool_call>{"name": "run_python", "arguments": {"code": "print(2 + 3)"}}</tool_call>'
    >>> env.step(call)[0]
    '5'
    >>> env.step(CodeInteractiveEnv.oracle(info["task"], []))[1:3]
    (1.0, True)
    """

    signal_defaults: ClassVar[dict[str, float | bool]] = {
        **CodeEnv.signal_defaults,
        "submitted": False,
        "tests_run": False,
        "visible_pass_fraction": 0.0,
    }
    # The family's process rule (`[judge.process] scorer = "rules"`): a step scores its progress in
    # the share of visible tests passing, so re-running the tests without a better program pays nothing.
    process_rules: ClassVar[ProcessScorer | None] = ProgressScorer(visible_tests_level)

    def __init__(self, dataset: str = "humaneval", *, max_turns: int = 10, **kwargs: Any) -> None:
        super().__init__(dataset, max_turns=max_turns, **kwargs)
        tools = [ToolSpec.from_function(f) for f in (self.run_python, self.run_tests, self.submit)]
        self.tools = {tool.name: tool for tool in tools}
        self._session: Session | None = None
        self._cells: list[str] = []
        self._visible: float | None = None  # the best visible share of this step's run_tests calls

    # -- the tools ----------------------------------------------------------------------------

    def run_python(self, code: str) -> str:
        """Run Python code in your session; variables, functions and imports persist between calls.

        Args:
            code: Python statements to run, like a notebook cell; print() what you want to see.
        """
        try:
            if self._session is None:
                self._session = self.sandbox.session("python", limits=self.limits)
            result = self._session.run(code, limits=call_limits(self.limits))
        except SandboxError as e:
            raise ToolError(f"run_python: the sandbox failed: {e}") from e
        if result.ok:
            self._cells.append(code)
        if self._session.alive:
            return format_result(result)
        self._cells = []
        return (
            format_result(result) + "\n[the session ended; its state is lost and the next call starts afresh]"
        )

    def run_tests(self, code: str = "") -> str:
        """Run the task's visible tests on a program and report which pass.

        Args:
            code: The complete program to test; by default, every cell you ran successfully with
                run_python (function tasks) or the last one (stdin/stdout tasks).
        """
        assert self.task is not None
        tests = self.task.gold
        if code:
            program = code
        elif tests.kind == "function":
            program = "\n\n".join(self._cells)
        else:
            program = self._cells[-1] if self._cells else ""
        if not program:
            raise ToolError(
                "run_tests: no code to test yet; pass code=... or define it with run_python first"
            )
        try:
            report = grade(self.sandbox, tests, program, visible=True, limits=call_limits(self.limits))
        except SandboxError as e:
            raise ToolError(f"run_tests: the sandbox failed: {e}") from e
        if report.total == 0:
            return "This task has no visible tests."
        self._visible = max(self._visible or 0.0, report.fraction)
        lines = [summary(report, "visible"), *report.failures[:10]]
        if report.stderr and not report.all_passed:
            lines.append("[stderr]\n" + report.stderr[-1500:])
        return "\n".join(lines)

    def submit(self, code: str) -> str:
        """Submit your final solution; it is graded on hidden tests and the episode ends.

        Args:
            code: The complete solution program (for function tasks: the function with its imports).
        """
        return "submitted"  # handled by respond(), which ends the episode

    # -- the episode --------------------------------------------------------------------------

    def render_prompt(self, task: Task) -> str:
        return super().render_prompt(task) + TOOL_HINT

    def respond(self, action: Action) -> Outcome:
        submission = next((c for c in action.tool_calls if c.name == "submit"), None)
        if submission is not None:
            code = submission.arguments.get("code")
            if not isinstance(code, str):
                return Outcome("submit() needs the argument code (a string).", signals={"format_ok": False})
            return self._final(f"```python\n{code}\n```")
        if action.tool_calls:
            self._visible = None
            outcome = self.run_tools(action)
            if self._visible is None:
                return outcome
            tested = {"tests_run": True, "visible_pass_fraction": self._visible}
            return replace(outcome, signals={**outcome.signals, **tested})
        if extract_code(action.text) is not None:
            return self._final(action.text)
        return Outcome("Call run_python, run_tests or submit(code) — submit ends the episode.")

    def _final(self, text: str) -> Outcome:
        outcome = self.judge(text)
        return Outcome(
            outcome.observation,
            outcome.reward,
            outcome.terminated,
            outcome.truncated,
            {**outcome.signals, "submitted": True},
        )

    def end_episode(self) -> None:
        """End the episode's Python session (started by its first `run_python`) and forget its cells."""
        if self._session is not None:
            self._session.close()
            self._session = None
        self._cells = []

    @classmethod
    def oracle(cls, task: Task, messages: Sequence[Message]) -> str:
        call = {"name": "submit", "arguments": {"code": _reference(task)}}
        return f"<tool_call>{json.dumps(call)}</tool_call>"
