"""Judge a patch by the project's own tests, in a fresh sandbox: `evaluate` and its `Resolution`.

The verdict never runs in the agent's session: a fresh sandbox unpacks the repository as the task
began, applies the agent's diff (without its changes to test files, see `protected`), applies the
task's hidden test patch if it has one, and runs the fail-to-pass and pass-to-pass tests with
pytest. Task generation runs the same function on the bug itself.

>>> split_patch("--- a/x.py\\n+++ b/x.py\\n@@ -1 +1 @@\\n-1\\n+2\\n")[0][0]
'x.py'
"""

from __future__ import annotations

import base64
import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gfcr.envs.swe.projects import Snapshot
from gfcr.errors import SandboxError
from gfcr.sandboxes import Limits, Sandbox

HERE = Path(__file__).resolve().parent
VERDICT_LIMITS = Limits(
    wall_s=300.0, cpu_s=300.0, memory_mb=2048, max_processes=64, max_output_bytes=20_000_000, disk_mb=512
)
CONFIG_FILES = ("conftest.py", "pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml")
_MAIN = """
import sys

request = json.loads(sys.stdin.read())
state = unpack(request["archive"], request["patches"], request["plugin"], keep_original=False)
result = run_tests(request["paths"], request["pythonpath"], request["timeout_s"]) if state["ok"] else {}
print(json.dumps({**state, **result}))
"""


@functools.cache
def kit_source() -> str:
    """The in-sandbox kit (kit.py) as source text."""
    return (HERE / "kit.py").read_text(encoding="utf-8")


@functools.cache
def plugin_source() -> str:
    """The pytest plugin (pytest_report.py) as source text."""
    return (HERE / "pytest_report.py").read_text(encoding="utf-8")


@dataclass(frozen=True)
class Resolution:
    """What the tests said of a patch: each fail-to-pass and pass-to-pass test's outcome.

    `applied` is False when a patch did not apply (then no test ran: `error` says why). A test
    that did not run (missing, its file broken) counts as not passed.
    """

    applied: bool
    fail_to_pass: dict[str, str]
    pass_to_pass: dict[str, str]
    messages: dict[str, str] = field(default_factory=dict)
    error: str = ""
    dropped: tuple[str, ...] = ()  # test and config files whose changes were left out

    @property
    def resolved(self) -> bool:
        """Every fail-to-pass test passes and every pass-to-pass test still does."""
        tests = {**self.fail_to_pass, **self.pass_to_pass}
        return self.applied and bool(self.fail_to_pass) and all(o == "passed" for o in tests.values())

    def signals(self) -> dict[str, float | bool]:
        """The Filter signals of this resolution."""
        return {
            "resolved": self.resolved,
            "patch_applied": self.applied,
            "fail_to_pass": _share(self.fail_to_pass),
            "pass_to_pass": _share(self.pass_to_pass),
            "touched_tests": bool(self.dropped),
        }


def _share(outcomes: dict[str, str]) -> float:
    return sum(o == "passed" for o in outcomes.values()) / len(outcomes) if outcomes else 1.0


def protected(path: str, test_ids: Sequence[str]) -> bool:
    """Whether a verdict ignores an agent's change to `path`: a file holding a judged test, or
    pytest configuration (conftest.py, pytest.ini, tox.ini, setup.cfg, pyproject.toml).

    >>> protected("tests/test_a.py", ["tests/test_a.py::test_x"]), protected("a.py", [])
    (True, False)
    """
    return Path(path).name in CONFIG_FILES or path in {test_file(t) for t in test_ids}


def test_file(test_id: str) -> str:
    """The file part of a pytest node id."""
    return test_id.split("::", 1)[0]


def split_patch(patch: str) -> list[tuple[str, str]]:
    """A unified diff as (path, that file's part of the diff) pairs."""
    sections: list[tuple[str, list[str]]] = []
    lines = patch.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            new, old = lines[i + 1][4:].strip(), line[4:].strip()
            name = (old if new == "/dev/null" else new).split("\t")[0]
            sections.append((name[2:] if name[:2] in ("a/", "b/") else name, []))
        if sections:
            sections[-1][1].append(line)
    return [(path, "".join(text)) for path, text in sections]


def without_protected(patch: str, test_ids: Sequence[str]) -> tuple[str, tuple[str, ...]]:
    """`patch` without its changes to protected files, and the paths left out."""
    kept, dropped = [], []
    for path, text in split_patch(patch):
        if protected(path, test_ids):
            dropped.append(path)
        else:
            kept.append(text)
    return "".join(kept), tuple(dropped)


def run_tests(
    sandbox: Sandbox,
    snapshot: Snapshot,
    patches: Sequence[str],
    paths: Sequence[str],
    limits: Limits = VERDICT_LIMITS,
) -> dict[str, Any]:
    """Unpack `snapshot` in a fresh sandbox run, apply `patches`, run pytest on `paths` (files or
    node ids); the kit's answer: {"ok", "error", "outcomes", "messages", "summary"}.

    Raises `SandboxError` only when the sandbox itself fails (or its answer cannot be read).
    """
    request = {
        "archive": base64.b64encode(snapshot.archive).decode("ascii"),
        "patches": list(patches),
        "plugin": plugin_source(),
        "paths": sorted(set(paths)),
        "pythonpath": list(snapshot.pythonpath),
        "timeout_s": max(limits.wall_s - 10.0, 1.0),
    }
    result = sandbox.run(kit_source() + _MAIN, stdin=json.dumps(request), limits=limits)
    try:
        return json.loads(result.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError) as e:
        detail = (result.stderr or result.stdout)[-1500:]
        raise SandboxError(f"the test run ended with status {result.status} and no report: {detail}") from e


def evaluate(
    sandbox: Sandbox,
    snapshot: Snapshot,
    patch: str,
    fail_to_pass: Sequence[str],
    pass_to_pass: Sequence[str],
    *,
    setup_patch: str = "",
    test_patch: str = "",
    limits: Limits = VERDICT_LIMITS,
) -> Resolution:
    """The verdict on `patch` for a task: `snapshot` with its `setup_patch` (the injected bug) is the
    repository the agent saw; the agent's changes to protected files are dropped; `test_patch`
    (hidden tests, SWE-bench style) comes last.

    >>> from gfcr.sandboxes import make_sandbox
    >>> repo = Snapshot.from_files("demo", [("m.py", b"def f():\\n    return 1\\n"),
    ...     ("test_m.py", b"from m import f\\ndef test_f():\\n    assert f() == 2\\n")])
    >>> fix = "--- a/m.py\\n+++ b/m.py\\n@@ -1,2 +1,2 @@\\n def f():\\n-    return 1\\n+    return 2\\n"
    >>> evaluate(make_sandbox("local"), repo, fix, ["test_m.py::test_f"], []).resolved
    True
    """
    tests = [*fail_to_pass, *pass_to_pass]
    kept, dropped = without_protected(patch, tests)
    answer = run_tests(
        sandbox, snapshot, [setup_patch, kept, test_patch], [test_file(t) for t in tests], limits
    )
    if not answer.get("ok"):
        return Resolution(
            False,
            dict.fromkeys(fail_to_pass, "not run"),
            dict.fromkeys(pass_to_pass, "not run"),
            error=answer.get("error", ""),
            dropped=dropped,
        )
    outcomes: dict[str, str] = answer.get("outcomes", {})
    return Resolution(
        True,
        {t: outcomes.get(t, "not run") for t in fail_to_pass},
        {t: outcomes.get(t, "not run") for t in pass_to_pass},
        {t: m for t, m in answer.get("messages", {}).items() if t in fail_to_pass or t in pass_to_pass},
        dropped=dropped,
    )
