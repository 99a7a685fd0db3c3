"""`gfcr/Code-v0`: write a program; hidden tests decide.

Single turn: the first action is the solution — the last ```python block of the reply (or the
reply itself if it is plain Python code). Reward 1.0 when every hidden test passes, else 0.0.

Signals: `format_ok` (a program was found and it compiles), `passed` (all hidden tests),
`pass_fraction` (the fraction of hidden tests passed), and one `status_<s>` flag per sandbox
status ("ok", "error", "timeout", "memory", "output_limit", "killed") of the grading run.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, ClassVar

from gfcr.core import Action, Message, Task
from gfcr.envs.base import DEFAULT_MAX_ACTION_CHARS, DEFAULT_MAX_OBSERVATION_CHARS, Outcome, TextEnv
from gfcr.envs.budget import DEFAULT_MAX_TOOL_CALLS, DEFAULT_STEP_TIME_S
from gfcr.envs.code.data import load_source
from gfcr.envs.code.grading import DEFAULT_LIMITS
from gfcr.envs.code.verifier import CodeVerifier, code_signals
from gfcr.envs.tasks import TaskSource
from gfcr.errors import GfcrError, SandboxError
from gfcr.sandboxes import Limits, Sandbox

logger = logging.getLogger(__name__)
FUNCTION_INSTRUCTIONS = (
    "Complete the Python function below. Reply with the complete function (its signature, body and "
    "any imports it needs) in a ```python code block.\n\n```python\n{starter}```"
)
IO_INSTRUCTIONS = (
    "{prompt}\n\nWrite a complete Python program that reads standard input and writes standard output. "
    "Reply with the program in a ```python code block."
)


class CodeEnv(TextEnv):
    """Programs graded by hidden tests in a sandbox.

    `dataset`: "humaneval" or a .jsonl path (see `gfcr.envs.code.data`); `sandbox`: a
    `Sandbox`, or a backend name for the process's shared one ("auto" by default);
    `timeout_s` and `memory_mb` bound each grading run.

    >>> env = CodeEnv()
    >>> obs, info = env.reset(options={"task_id": "humaneval/53"})
    >>> env.step("```python\\ndef add(x: int, y: int):\\n    return x + y\\n```")[1:3]
    (1.0, True)
    """

    signal_defaults: ClassVar[dict[str, float | bool]] = code_signals(None, format_ok=False)

    def __init__(
        self,
        dataset: str = "humaneval",
        *,
        sandbox: Sandbox | str = "auto",
        timeout_s: float = DEFAULT_LIMITS.wall_s,
        memory_mb: int = DEFAULT_LIMITS.memory_mb,
        max_turns: int = 1,
        system_prompt: str | None = None,
        max_action_chars: int = DEFAULT_MAX_ACTION_CHARS,
        max_observation_chars: int = DEFAULT_MAX_OBSERVATION_CHARS,
        max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS,
        step_time_s: float = DEFAULT_STEP_TIME_S,
        render_mode: str | None = None,
        tasks: TaskSource | None = None,
        **options: Any,
    ) -> None:
        super().__init__(
            tasks or load_source(dataset, **options),
            tools=(),
            system_prompt=system_prompt,
            max_turns=max_turns,
            max_action_chars=max_action_chars,
            max_observation_chars=max_observation_chars,
            max_tool_calls=max_tool_calls,
            step_time_s=step_time_s,
            render_mode=render_mode,
        )
        self.limits: Limits = replace(DEFAULT_LIMITS, wall_s=timeout_s, cpu_s=timeout_s, memory_mb=memory_mb)
        self.verifier = CodeVerifier(sandbox, self.limits)

    @property
    def sandbox(self) -> Sandbox:
        """The sandbox that grades (the shared one is made on first use, not when the env is)."""
        return self.verifier.grader()

    def render_prompt(self, task: Task) -> str:
        if task.gold.kind == "function" and task.gold.starter:
            return FUNCTION_INSTRUCTIONS.format(starter=task.gold.starter)
        return IO_INSTRUCTIONS.format(prompt=task.prompt)

    def respond(self, action: Action) -> Outcome:
        return self.judge(action.text)

    def judge(self, text: str) -> Outcome:
        """Grade the program in `text` on the hidden tests; the episode's final outcome."""
        assert self.task is not None  # step() checks reset() was called
        try:
            verdict, feedback = self.verifier.review(self.task, text)
        except SandboxError as e:  # the sandbox, not the agent, failed: no verdict
            logger.warning("grading %s failed: %s", self.task.id, e)
            return Outcome(f"The sandbox failed ({e}); this episode has no verdict.", truncated=True)
        return Outcome(feedback, reward=verdict.reward, terminated=True, signals=verdict.signals)

    @classmethod
    def oracle(cls, task: Task, messages: Sequence[Message]) -> str:
        return f"```python\n{_reference(task)}```"


def _reference(task: Task) -> str:
    solution = task.gold.solution
    if not solution:
        raise GfcrError(
            f"task {task.id!r} has no reference solution; add a 'solution' field to use the oracle"
        )
    return solution if solution.endswith("\n") else solution + "\n"
