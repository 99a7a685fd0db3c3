"""The code family's checker as a Filter `Verifier`: the code envs and any GFCR module share it.

`CodeVerifier.review(task, text)` grades the program in a reply on the task's hidden tests and
says what happened in words; `check` gives the verdict alone, and `verify(task, trajectory)`
grades a trajectory's submission (see `submission`). The signals are the code envs' own:
`format_ok`, `passed`, `pass_fraction` and one `status_<s>` flag per sandbox status.

>>> from gfcr.envs.code.data import load_source
>>> task = load_source("humaneval").get("humaneval/53")
>>> CodeVerifier().check(task, "```python\\ndef add(x, y):\\n    return x + y\\n```").passed
True
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gfcr.core import Task, Trajectory, Verdict, parse_action
from gfcr.core.trajectory import Signals
from gfcr.envs.code.extract import compiles, extract_code
from gfcr.envs.code.grading import DEFAULT_LIMITS, GradingReport, code_sandbox, grade
from gfcr.sandboxes import STATUSES, Limits, Sandbox

NO_PROGRAM = "No program found. Reply with your solution in a ```python code block."
SYNTAX_ERROR = "Your program has a syntax error; no test ran."


def status_signals(status: str | None) -> dict[str, bool]:
    """One flag per sandbox status, set for `status` (none set for None).

    >>> [name for name, on in status_signals("timeout").items() if on]
    ['status_timeout']
    """
    return {f"status_{name}": name == status for name in STATUSES}


def code_signals(report: GradingReport | None, format_ok: bool, status: str | None = None) -> Signals:
    """The code signals of a grading `report` (None: no test ran; `status` then names why)."""
    return {
        "format_ok": format_ok,
        "passed": report is not None and report.all_passed,
        "pass_fraction": report.fraction if report is not None else 0.0,
        **status_signals(report.status if report is not None else status),
    }


def summary(report: GradingReport, kind: str) -> str:
    """A grading report in words, for the agent ("hidden" or "visible" tests)."""
    text = f"{report.passed}/{report.total} {kind} tests passed."
    if report.status != "ok":
        text += f" The grading run ended with status {report.status}."
    return text


def submission(trajectory: Trajectory) -> str:
    """What the code envs grade at the end of `trajectory`: the code of a `submit` call in the
    last reply, else that reply's text ("" when it only calls other tools: nothing submitted).

    >>> from gfcr.core import Step
    >>> call = '<tool_call>{"name": "submit", "arguments": {"code": "x = 1"}}</tool_call>'
    >>> submission(Trajectory("e", "t", "?", [Step(call, "", 1.0, True, False)]))
    '```python\\nx = 1\\n```'
    """
    replies = [m for m in trajectory.messages if m.role == "assistant"]
    if replies:
        text, calls = replies[-1].text, replies[-1].tool_calls
    elif trajectory.steps:
        text, calls = trajectory.steps[-1].action, ()
    else:
        return ""
    if not calls:  # calls a server parsed natively are in the message; others are still text
        calls = parse_action(text)[0].tool_calls
    submit = next((c for c in calls if c.name == "submit"), None)
    if submit is not None:
        code = submit.arguments.get("code")
        return f"```python\n{code}\n```" if isinstance(code, str) else ""
    return "" if calls else text


@dataclass
class CodeVerifier:
    """Reward 1.0 when the program passes every hidden test, else 0.0 (a `gfcr.filter.Verifier`).

    `sandbox`: a `Sandbox`, or a backend name for the process's shared code sandbox (made on
    first use). Grading errors of the sandbox itself raise `gfcr.errors.SandboxError`; anything
    the program does is a verdict.
    """

    sandbox: Sandbox | str = "auto"
    limits: Limits = field(default=DEFAULT_LIMITS)

    def verify(self, task: Task, trajectory: Trajectory) -> Verdict:
        return self.check(task, submission(trajectory))

    def check(self, task: Task, text: str) -> Verdict:
        """The verdict on the program in one reply."""
        return self.review(task, text)[0]

    def review(self, task: Task, text: str) -> tuple[Verdict, str]:
        """The verdict on the program in `text`, and what happened in words (for the agent)."""
        code = extract_code(text)
        if code is None:
            return Verdict(0.0, False, code_signals(None, False)), NO_PROGRAM
        if not compiles(code):
            return Verdict(0.0, False, code_signals(None, False, "error")), SYNTAX_ERROR
        report = grade(self.grader(), task.gold, code, limits=self.limits)
        reward = 1.0 if report.all_passed else 0.0
        return Verdict(reward, report.all_passed, code_signals(report, True)), summary(report, "hidden")

    def grader(self) -> Sandbox:
        """The sandbox that grades (the shared one is made on first use, not with the verifier)."""
        if isinstance(self.sandbox, str):
            self.sandbox = code_sandbox(self.sandbox)
        return self.sandbox
