"""`gfcr/SWE-v0`: fix a real repository, judged by the project's own tests.

Each task is a real project (an sdist from PyPI, or your own checkout) with a bug, and an issue
that describes the symptom: which tests fail and how. The agent works in a sandbox of its own
holding the repository, with tools to look around (`list_files`, `read_file`, `search`), change
files (`edit_file`, `write_file`, `apply_patch`), run things (`bash`, `run_tests`) and finish
(`submit`). The verdict comes from a fresh sandbox, never the agent's: the repository as the task
began plus the agent's diff, without its changes to test files, with the fail-to-pass and
pass-to-pass tests run by pytest. On the last turn the changes so far are submitted.

Reward 1.0 when every fail-to-pass test passes and every pass-to-pass test still passes, else 0.0
— and 0.0, unjudged, when a step's tool calls go past its budget (`max_tool_calls`, `step_time_s`).
Signals: `format_ok`, `submitted`, `resolved`, `patch_applied`, `fail_to_pass` and `pass_to_pass`
(shares of those tests passing), `touched_tests` (the diff changed files the verdict does not
take: tests, pytest configuration, packaging metadata, new top-level modules; see
`gfcr.envs.swe.policy`), `tampered` (a canary test that must fail passed beside them: the
library code tampered with pytest; not resolved); on a step that ran `run_tests`, `tests_run` and
`fail_to_pass_run`: the share of the task's fail-to-pass tests that passed in the agent's own run
(0.0 while its changes touch what a verdict leaves out: then its run proves nothing), which the
family's process rule reads (`process_rules`: progress in that share). The final step's
`info["state"]` holds the diff
as `{"patch": …}` for `SWEVerifier` (a diff over the size cap is summarised instead, and refused).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, ClassVar

from gfcr.core import Action, Message, Task, ToolSpec
from gfcr.core.trajectory import Signals
from gfcr.envs.base import DEFAULT_MAX_ACTION_CHARS, Outcome, TextEnv
from gfcr.envs.budget import DEFAULT_MAX_TOOL_CALLS, DEFAULT_STEP_TIME_S
from gfcr.envs.swe import diffs
from gfcr.envs.swe.data import load_tasks, snapshot_of
from gfcr.envs.swe.evaluation import Resolution, prepare, test_file
from gfcr.envs.swe.verifier import SWEVerifier, final_state
from gfcr.envs.swe.workspace import Workspace
from gfcr.errors import SandboxError, ToolError
from gfcr.filter.process import ProcessScorer, ProgressScorer
from gfcr.sandboxes import Sandbox

INSTRUCTIONS = (
    "\n\nThe repository is checked out in your working directory. Use the tools to explore it, change it "
    "and run its tests (run_tests), then call submit() to hand in your changes; they are judged by the "
    "project's own tests. You have {turns} turns; on the last one your changes are submitted as they are."
)
MAX_SHOWN_FAILURES = 10


def fail_to_pass_level(signals: Signals) -> float | None:
    """The level a step reached: the share of fail-to-pass tests passing, on a step that ran tests."""
    return float(signals["fail_to_pass_run"]) if signals.get("tests_run") else None


class SWEEnv(TextEnv):
    """Software-engineering tasks on real repositories (see the module docstring).

    `dataset`: "all", a bundled project ("inflection", "parse", "cachetools", "toolz", or several
    joined by "+"), or your own `.jsonl` of tasks with `repo=` (see `gfcr.envs.swe.data`);
    `tasks_per_project` and `seed` choose the generated tasks; `sandbox` a `Sandbox` or a backend
    name for the process's shared one.

    >>> env = SWEEnv("inflection", tasks_per_project=2)
    >>> obs, info = env.reset(options={"task_id": "swe/inflection-0"})
    >>> _ = env.step(SWEEnv.oracle(info["task"], env.messages))
    >>> env.step(SWEEnv.oracle(info["task"], env.messages))[1:3]
    (1.0, True)
    >>> env.close()
    """

    signal_defaults: ClassVar[dict[str, float | bool]] = {
        "format_ok": False,
        "submitted": False,
        "resolved": False,
        "patch_applied": False,
        "fail_to_pass": 0.0,
        "pass_to_pass": 0.0,
        "touched_tests": False,
        "tampered": False,
        "tests_run": False,
        "fail_to_pass_run": 0.0,
    }
    # The family's process rule (`[judge.process] scorer = "rules"`): a step scores its progress in
    # the fail-to-pass tests its own run saw pass; re-running them, or changing the tests, pays nothing.
    process_rules: ClassVar[ProcessScorer | None] = ProgressScorer(fail_to_pass_level)

    def __init__(
        self,
        dataset: str = "all",
        *,
        repo: str | None = None,
        tasks_per_project: int = 10,
        seed: int = 0,
        sandbox: Sandbox | str = "auto",
        max_turns: int = 30,
        system_prompt: str | None = None,
        max_action_chars: int = DEFAULT_MAX_ACTION_CHARS,
        max_observation_chars: int = 20_000,
        max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS,
        step_time_s: float = DEFAULT_STEP_TIME_S,
        render_mode: str | None = None,
    ) -> None:
        self.verifier = SWEVerifier(sandbox)
        functions = (
            self.list_files,
            self.read_file,
            self.search,
            self.edit_file,
            self.write_file,
            self.apply_patch,
            self.bash,
            self.run_tests,
            self.submit,
        )
        super().__init__(
            load_tasks(dataset, sandbox, repo=repo, tasks_per_project=tasks_per_project, seed=seed),
            tools=[ToolSpec.from_function(f) for f in functions],
            system_prompt=system_prompt,
            max_turns=max_turns,
            max_action_chars=max_action_chars,
            max_observation_chars=max_observation_chars,
            max_tool_calls=max_tool_calls,
            step_time_s=step_time_s,
            render_mode=render_mode,
        )
        self.workspace: Workspace | None = None
        self._fixed: float | None = None  # the best fail-to-pass share of this step's run_tests calls

    @property
    def sandbox(self) -> Sandbox:
        """The sandbox of the agent's sessions and the verdicts (made on first use, not with the env)."""
        return self.verifier.grader()

    # -- the tools (their docstrings are what the agent reads) --------------------------------

    def list_files(self, path: str = ".", depth: int = 2) -> str:
        """List the files and folders of the repository.

        Args:
            path: A folder, relative to the repository's root.
            depth: How many levels of sub-folders to show.
        """
        return self._call("list_files", path=path, depth=depth)

    def read_file(self, path: str, start_line: int = 1, end_line: int = 0) -> str:
        """Show a file's lines with their numbers (at most 400 at a time).

        Args:
            path: The file, relative to the repository's root.
            start_line: The first line to show (1-based).
            end_line: The last line to show; 0 for the end of the file.
        """
        return self._call("read_file", path=path, start_line=start_line, end_line=end_line)

    def search(self, pattern: str, path: str = ".", glob: str = "*.py") -> str:
        """Find the lines matching a regular expression, as file:line: text.

        Args:
            pattern: A Python regular expression.
            path: A folder or file to search, relative to the repository's root.
            glob: Which file names to search, e.g. "*.py" or "*".
        """
        return self._call("search", pattern=pattern, path=path, glob=glob)

    def edit_file(self, path: str, old: str, new: str) -> str:
        """Replace an exact piece of a file, which must occur exactly once, with new text.

        Args:
            path: The file, relative to the repository's root.
            old: The text to replace, exactly as in the file (whitespace included).
            new: The text to put in its place.
        """
        return self._call("edit_file", path=path, old=old, new=new)

    def write_file(self, path: str, content: str) -> str:
        """Create a file, or replace a file's whole content.

        Args:
            path: The file, relative to the repository's root.
            content: The file's complete new content.
        """
        return self._call("write_file", path=path, content=content)

    def apply_patch(self, patch: str) -> str:
        """Apply a unified diff (paths a/... and b/..., as git diff writes them) to the repository.

        Args:
            patch: The diff.
        """
        return self._call("apply_patch", patch=patch)

    def bash(self, command: str) -> str:
        """Run a shell command in the repository's root (no network; stopped after 60 s).

        Args:
            command: The command line, e.g. "python3 -c 'import inflection'" or "grep -rn foo .".
        """
        return self._call("bash", command=command)

    def run_tests(self, tests: str = "") -> str:
        """Run the project's tests with pytest and report which fail and why.

        Args:
            tests: Test files or node ids separated by spaces, e.g. "tests/test_a.py::test_x"
                (quote an id that holds spaces, as in a shell); by default, the task's test files.
        """
        assert self.task is not None
        try:
            paths = shlex.split(tests) or sorted({test_file(t) for t in self._tests(self.task)})
        except ValueError as e:
            raise ToolError(f"run_tests: cannot read tests={tests!r} ({e}); quote ids as in a shell") from e
        result = self._call("run_tests", paths=paths, pythonpath=list(snapshot_of(self.task).pythonpath))
        outcomes: dict[str, str] = result.get("outcomes", {})
        self._fixed = max(self._fixed or 0.0, self._fail_to_pass_share(outcomes))
        failed = [test for test, outcome in outcomes.items() if outcome in ("failed", "error")]
        counts = {o: sum(v == o for v in outcomes.values()) for o in ("passed", "failed", "error", "skipped")}
        lines = [
            ", ".join(f"{n} {o}" for o, n in counts.items() if n)
            or f"no test ran: {result.get('summary', '')}"
        ]
        for test in failed[:MAX_SHOWN_FAILURES]:
            lines.append(f"FAILED {test}")
            lines += [f"    {line}" for line in result.get("messages", {}).get(test, "").splitlines()[:8]]
        if len(failed) > MAX_SHOWN_FAILURES:
            lines.append(f"… and {len(failed) - MAX_SHOWN_FAILURES} more failures")
        return "\n".join(lines)

    def _fail_to_pass_share(self, outcomes: dict[str, str]) -> float:
        """The share of the task's fail-to-pass tests passing in `outcomes` (those not run fail);
        0.0 while the changes touch what a verdict leaves out (tests, pytest's configuration …)."""
        assert self.task is not None and self.workspace is not None
        task, tests = self.task, self.task.metadata["fail_to_pass"]
        patches = {key: task.metadata.get(key, "") for key in ("setup_patch", "test_patch")}
        try:
            _, dropped = prepare(snapshot_of(task), self.workspace.patch, self._tests(task), **patches)
        except diffs.PatchError:  # changes no verdict would take
            return 0.0
        if dropped or not tests:
            return 0.0
        return sum(outcomes.get(test) == "passed" for test in tests) / len(tests)

    def submit(self) -> str:
        """Hand in your changes to the repository; they are judged and the episode ends."""
        return "submitted"  # respond() handles it

    # -- the episode ----------------------------------------------------------------------------

    def render_prompt(self, task: Task) -> str:
        return task.prompt + INSTRUCTIONS.format(turns=self.max_turns)

    def begin_episode(self, task: Task) -> None:
        """The episode's workspace: the task's repository, its session opened by the first tool call."""
        self.workspace = Workspace(self.sandbox, snapshot_of(task), task.metadata.get("setup_patch", ""))

    def end_episode(self) -> None:
        """End the workspace's session; the workspace stays, to read its patch after the episode."""
        if self.workspace is not None:
            self.workspace.close()

    def respond(self, action: Action) -> Outcome:
        calls = tuple(call for call in action.tool_calls if call.name != "submit")
        submitted = len(calls) < len(action.tool_calls)
        self._fixed = None
        if calls:  # the other calls of a message run first, a submit among them last
            outcome = self.run_tools(replace(action, tool_calls=calls))
            if self._fixed is not None:
                tested = {"tests_run": True, "fail_to_pass_run": self._fixed}
                outcome = replace(outcome, signals={**outcome.signals, **tested})
        elif not submitted:
            outcome = Outcome("Use the tools to work on the repository, then call submit().")
        else:
            return self._final()
        if self.budget.exceeded or (not submitted and self.turn < self.max_turns):
            return outcome  # past the step's budget, the base truncates the episode: no verdict
        final = self._final()
        note = "\n\n" if submitted else "\n\n[turn limit] "
        return Outcome(
            outcome.observation + note + final.observation,
            final.reward,
            terminated=final.terminated,
            truncated=final.truncated,
            signals={**final.signals, "format_ok": outcome.signals.get("format_ok", False)},
            messages=(
                *(outcome.messages or (Message("user", outcome.observation),)),
                Message("user", final.observation),
            ),
            state=final.state,
        )

    def _final(self) -> Outcome:
        """Judge the changes so far in a fresh sandbox; the episode ends."""
        assert self.task is not None and self.workspace is not None
        patch = self.workspace.patch
        self.workspace.close()  # the session's worker is free for the verdict's fresh sandbox
        try:
            resolution = self.verifier.judge(self.task, patch)
        except SandboxError as e:
            message = f"The sandbox failed ({e}); this episode has no verdict."
            return Outcome(
                message,
                truncated=True,
                signals={"format_ok": True, "submitted": True},
                state=final_state(patch),
            )
        return Outcome(
            report(resolution),
            1.0 if resolution.resolved else 0.0,
            terminated=True,
            signals={"format_ok": True, "submitted": True, **resolution.signals()},
            state=final_state(patch),
        )

    def _call(self, function: str, **arguments: Any) -> Any:
        if self.workspace is None:
            raise ToolError("the episode is over; call reset() first")
        try:
            return self.workspace.call(function, **arguments)
        except SandboxError as e:
            raise ToolError(f"{function}: the sandbox failed: {e}") from e

    @staticmethod
    def _tests(task: Task) -> list[str]:
        return [*task.metadata["fail_to_pass"], *task.metadata["pass_to_pass"]]

    @classmethod
    def oracle(cls, task: Task, messages: Sequence[Message]) -> str:
        """Apply the gold patch with `apply_patch` on the first turn, then `submit()`."""
        first_turn = not any(m.role == "assistant" for m in messages)
        call = (
            {"name": "apply_patch", "arguments": {"patch": task.gold}}
            if first_turn
            else {"name": "submit", "arguments": {}}
        )
        return f"<tool_call>{json.dumps(call)}</tool_call>"


def report(resolution: Resolution) -> str:
    """The verdict in words."""
    if not resolution.applied:
        return f"Your changes could not be applied to a fresh copy of the repository: {resolution.error}"
    if resolution.tampered:
        return "A test that must fail passed beside the project's tests: your changes tamper with pytest."
    fixed = sum(o == "passed" for o in resolution.fail_to_pass.values())
    kept = sum(o == "passed" for o in resolution.pass_to_pass.values())
    text = (
        f"Judged by the project's tests: {fixed}/{len(resolution.fail_to_pass)} failing tests now pass, "
        f"{kept}/{len(resolution.pass_to_pass)} other tests still pass. "
        + ("Resolved." if resolution.resolved else "Not resolved.")
    )
    if resolution.dropped:
        shown = "; ".join(f"{path} ({why})" for path, why in list(resolution.dropped.items())[:10])
        text += " Your changes to these files were ignored (only the library's code is yours to change): "
        text += shown + "."
    return text
