"""Code proposals: a function stub, a reference solution and tests, verified in the sandbox.

The reference solution must pass its own tests, and a stub that returns None must fail them
(tests that pass on it check nothing: the proposal is trivial). The task is graded like a
HumanEval one: the stub is the starter the solver sees, the tests stay hidden. The reference
solution is graded twice: `Verified.rerun_agrees` says whether it passed the same tests both times
(tests that time out near the limit, or depend on randomness or the clock, may not).
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Sequence

from gfcr.core import Task
from gfcr.envs.code.data import CodeTests, IOCase
from gfcr.envs.code.env import CodeEnv
from gfcr.envs.code.grading import grade
from gfcr.envs.proposals.base import Verified
from gfcr.errors import DataError
from gfcr.proposals import Rejected, blind_task, parse_sections

FORMAT = """Write it in three tagged sections:
<prompt>a Python function stub: its signature and a docstring saying what it must do</prompt>
<solution>the complete function, a correct reference solution</solution>
<tests>assert statements that call the function, e.g. assert f(2) == 4</tests>"""


class CodeProposals:
    """The code family's proposals (`gfcr.envs.proposals.ProposalFamily`)."""

    format = FORMAT

    def describe(self, task: Task, env: CodeEnv) -> str:
        return task.gold.starter or task.prompt

    def verify(self, text: str, env: CodeEnv, task_id: str, parents: Sequence[Task]) -> Verified:
        sections = parse_sections(text, ["prompt", "solution", "tests"])
        entry_point = stub_name(sections["prompt"])
        for name in ("solution", "tests"):
            try:
                ast.parse(sections[name])
            except SyntaxError as e:
                raise Rejected("invalid", f"the {name} is not valid Python: {e}") from e
        tests = CodeTests(
            kind="function",
            entry_point=entry_point,
            test=sections["tests"],
            solution=sections["solution"],
            starter=sections["prompt"],
        )
        report = grade(env.sandbox, tests, sections["solution"])
        if not report.all_passed:
            failures = "; ".join(report.failures[:3]) or report.status
            raise Rejected(
                "invalid",
                f"the reference solution fails its own tests ({report.passed}/{report.total}): {failures}",
            )
        empty = f"def {entry_point}(*args, **kwargs):\n    return None\n"
        if grade(env.sandbox, tests, empty).all_passed:
            raise Rejected(
                "trivial", f"the tests pass on a {entry_point} that returns None: they check nothing"
            )
        again = grade(env.sandbox, tests, sections["solution"])
        task = Task(task_id, sections["prompt"], tests, "generated", {"entry_point": entry_point})
        return Verified(task, rerun_agrees=(again.passed, again.total) == (report.passed, report.total))

    def withheld(self, task: Task) -> Task:
        """Everything withheld: the stub is the question (its name, signature and docstring), so the
        blind attempt sees none of it and the env asks for a program to no specification; the
        hidden tests call a function it was never told of, and it fails, as it should."""
        return blind_task(task, gold=dataclasses.replace(task.gold, starter=""))

    def gold_from(self, data: object) -> CodeTests:
        """A code task's gold, `CodeTests`, from its fields (cases as {"input", "output"} objects).

        >>> CODE.gold_from({"kind": "function", "entry_point": "f", "test": "assert f() == 1"}).entry_point
        'f'
        """
        if not isinstance(data, dict):
            raise DataError(f"a code task's gold is an object of CodeTests fields, got {data!r}")
        try:
            cases = {
                name: tuple(IOCase(**case) for case in data.get(name, ()))
                for name in ("cases", "visible_cases")
            }
            return CodeTests(**(data | cases))
        except TypeError as e:
            fields = [f.name for f in dataclasses.fields(CodeTests)]
            raise DataError(f"a code task's gold has the fields {fields}, got {sorted(data)}: {e}") from e


def stub_name(prompt: str) -> str:
    """The name of the function the stub `prompt` defines (its last top-level function).

    >>> stub_name('def double(x: int) -> int:\\n    \"\"\"Twice x.\"\"\"')
    'double'
    """
    try:
        module = ast.parse(prompt)
    except SyntaxError as e:
        raise Rejected("invalid", f"the prompt is not a Python function stub: {e}") from e
    functions = [node.name for node in module.body if isinstance(node, ast.FunctionDef)]
    if not functions:
        raise Rejected("invalid", "the prompt defines no function: write its signature and a docstring")
    return functions[-1]


CODE = CodeProposals()
