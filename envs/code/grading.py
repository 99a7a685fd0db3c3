"""Grading a program against a task's tests in a sandbox: the code env's verifier.

Function tests run in `judge_program.py` inside the sandbox (two processes; the solution
never sees the tests). Stdin/stdout cases run the program once per case; the expected
output never enters the sandbox and is compared here, line by line with trailing whitespace
ignored. Either way the solution can only pass a test by computing what the test expects.
"""

from __future__ import annotations

import contextvars
import json
import secrets
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path

from gfcr.envs.code.data import CodeTests, IOCase
from gfcr.envs.code.judge_program import MODULE_NAME, PROGRAM, SOLUTION_FILE, STARTER_FILE, count_tests
from gfcr.sandboxes import ExecResult, Limits, Sandbox, Status, shared_sandbox

DEFAULT_LIMITS = Limits(wall_s=10.0, cpu_s=10.0, memory_mb=512, max_processes=32, max_output_bytes=200_000)
MAX_PARALLEL_CASES = 4


@dataclass(frozen=True)
class GradingReport:
    """How a program did on a set of tests: counts, the sandbox status, and feedback for the agent."""

    passed: int
    total: int
    status: Status
    failures: tuple[str, ...] = field(default=())  # one line per failed test (visible tests only)
    stderr: str = ""

    @property
    def all_passed(self) -> bool:
        return self.total > 0 and self.passed == self.total

    @property
    def fraction(self) -> float:
        return self.passed / self.total if self.total else 0.0


def grade(
    sandbox: Sandbox, tests: CodeTests, code: str, *, visible: bool = False, limits: Limits = DEFAULT_LIMITS
) -> GradingReport:
    """Run `code` against the hidden tests of `tests` (or its visible ones) and report how it did."""
    if tests.kind == "function":
        test_code = tests.visible_test if visible else tests.test
        return grade_function(
            sandbox, code, tests.entry_point, tests.setup, test_code, limits, starter=tests.starter
        )
    cases = tests.visible_cases if visible else tests.cases
    return grade_io(sandbox, code, cases, limits)


@cache
def judge_source() -> str:
    return judge_path().read_text(encoding="utf-8")


def judge_path() -> Path:
    """The judge's file, which warm local sandboxes preload as module `gfcr_code_judge`."""
    return Path(str(resources.files("gfcr.envs.code").joinpath("judge_program.py")))


def code_sandbox(backend: str = "auto") -> Sandbox:
    """The process's shared sandbox for code envs: its warm workers have the judge preloaded."""
    return shared_sandbox(backend, modules={MODULE_NAME: judge_path()})


def grade_function(
    sandbox: Sandbox,
    code: str,
    entry_point: str,
    setup: str,
    test: str,
    limits: Limits = DEFAULT_LIMITS,
    *,
    starter: str = "",
) -> GradingReport:
    """Run the function tests `test` (after `setup`) against `entry_point` as defined by `code`.

    `starter`: the code the agent was shown; its definitions (all but the stub of `entry_point`)
    run in the solution's process before `code`, so the solution may call the prompt's helpers.
    It must hold nothing secret: only `setup` and `test` stay on the judge's side.
    """
    total = count_tests(test, entry_point)
    nonce = secrets.token_hex(16)
    spec = {
        "nonce": nonce,
        "prompt": setup,
        "test": test,
        "timeout_s": max(limits.wall_s - 1.0, limits.wall_s * 0.8),
    }
    program = PROGRAM.format(entry_point=entry_point)
    files = {SOLUTION_FILE: code, f"{MODULE_NAME}.py": judge_source()}
    if starter:
        files[STARTER_FILE] = starter
    result = sandbox.run(program, stdin=json.dumps(spec), files=files, limits=limits)
    events = _events(result.stdout, nonce)
    outcomes = [e for e in events if e.get("event") == "test"]
    passed = sum(1 for e in outcomes if e.get("passed") is True)
    failures = [f"test {e['index'] + 1}: {e['message']}" for e in outcomes if e.get("passed") is not True]
    for event in events:
        if event.get("event") in ("load_error", "aborted"):
            failures.insert(0, f"{event['event'].replace('_', ' ')}: {event.get('message', '')}")
    done = next((e for e in events if e.get("event") == "done"), None)
    status: Status = result.status
    if done is not None and done.get("timed_out"):
        status = "timeout"  # the judge stopped waiting for the solution
    elif result.status == "ok" and (done is None or any(e.get("event") == "load_error" for e in events)):
        status = "error"  # the solution did not load, or the judge could not finish (the solution killed it)
    return GradingReport(min(passed, total), total, status, tuple(failures), result.stderr[-2000:])


def _events(stdout: str, nonce: str) -> list[dict]:
    events = []
    prefix = nonce + " "
    for line in stdout.splitlines():
        if line.startswith(prefix):
            try:
                events.append(json.loads(line[len(prefix) :]))
            except json.JSONDecodeError:
                continue
    return events


def grade_io(
    sandbox: Sandbox, code: str, cases: tuple[IOCase, ...], limits: Limits = DEFAULT_LIMITS
) -> GradingReport:
    """Run `code` once per case; a case passes when it exits 0 and prints the expected output."""
    if not cases:
        return GradingReport(0, 0, "ok", ("this task has no tests of this kind",))
    with ThreadPoolExecutor(min(len(cases), MAX_PARALLEL_CASES)) as pool:
        # each case in a copy of this context, so its sandbox queueing counts in the env step's waits
        runs = [
            pool.submit(contextvars.copy_context().run, sandbox.run, code, stdin=case.input, limits=limits)
            for case in cases
        ]
        results = [run.result() for run in runs]
    failures, passed = [], 0
    for number, (case, result) in enumerate(zip(cases, results, strict=True), 1):
        if result.ok and same_output(result.stdout, case.output):
            passed += 1
        else:
            failures.append(_io_failure(number, case, result))
    statuses = [r.status for r in results if r.status != "ok"]
    stderr = next((r.stderr for r in results if r.stderr), "")
    status = statuses[0] if statuses else "ok"
    return GradingReport(passed, len(cases), status, tuple(failures), stderr[-2000:])


def same_output(got: str, expected: str) -> bool:
    """Outputs agree up to trailing whitespace on each line and trailing blank lines.

    >>> same_output("1 2  \\n3\\n\\n", "1 2\\n3")
    True
    """
    return _normal(got) == _normal(expected)


def _normal(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _io_failure(number: int, case: IOCase, result: ExecResult) -> str:
    if not result.ok:
        return f"case {number}: the program ended with status {result.status} (exit code {result.exit_code})"
    expected, got = case.output[:200], result.stdout[:200]
    return f"case {number}: input {case.input[:200]!r}: expected {expected!r}, got {got!r}"
