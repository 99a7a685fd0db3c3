"""Judge a patch by the project's own tests, in a fresh sandbox: `evaluate` and its `Resolution`.

The verdict never runs in the agent's session. The host reads the agent's diff with
`gfcr.envs.swe.diffs` (the one parser for what is checked and what is applied), leaves out its
changes that `gfcr.envs.swe.policy` refuses (tests, pytest configuration, packaging metadata,
import hooks, new top-level modules), applies the rest to the repository as the task began, then
the task's hidden test patch; a fresh sandbox unpacks that repository and runs the fail-to-pass
and pass-to-pass tests with pytest (`kit.run_tests`: started so that nothing the repository adds
can reach pytest before collection, each test timed from outside its process). Task generation
runs the same code on the bug itself.

>>> from gfcr.sandboxes import make_sandbox
>>> repo = Snapshot.from_files("demo", [("m.py", b"def f():\\n    return 1\\n"),
...     ("test_m.py", b"from m import f\\ndef test_f():\\n    assert f() == 2\\n")])
>>> cheat = "--- a/test_m.py\\n+++ b/test_m.py\\n@@ -3 +3 @@\\n-    assert f() == 2\\n+    assert True\\n"
>>> resolution = evaluate(make_sandbox("local"), repo, cheat, ["test_m.py::test_f"], [])
>>> resolution.resolved, resolution.dropped
(False, {'test_m.py': 'a test file'})
"""

from __future__ import annotations

import base64
import functools
import json
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gfcr.envs.swe import diffs
from gfcr.envs.swe.policy import refusal
from gfcr.envs.swe.projects import Snapshot
from gfcr.errors import SandboxError
from gfcr.sandboxes import Limits, Sandbox

HERE = Path(__file__).resolve().parent
VERDICT_LIMITS = Limits(
    wall_s=300.0, cpu_s=300.0, memory_mb=2048, max_processes=64, max_output_bytes=20_000_000, disk_mb=512
)
_MAIN = """
import sys

request = json.loads(sys.stdin.read())
state = unpack(request["archive"], request["plugin"])
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
    that did not run (missing, its file broken) counts as not passed. `tampered`: a canary test
    that must fail, run beside them, passed — nothing is resolved then.
    """

    applied: bool
    fail_to_pass: dict[str, str]
    pass_to_pass: dict[str, str]
    messages: dict[str, str] = field(default_factory=dict)
    error: str = ""
    dropped: dict[str, str] = field(default_factory=dict)  # path -> why its change was left out
    tampered: bool = False  # a test that must fail passed: pytest's process was tampered with

    @classmethod
    def refused(
        cls,
        fail_to_pass: Sequence[str],
        pass_to_pass: Sequence[str],
        error: str,
        dropped: dict[str, str] | None = None,
    ) -> Resolution:
        """The verdict on a patch that was not applied, or whose tests could not run: `error` says why."""
        not_run = dict.fromkeys(fail_to_pass, "not run"), dict.fromkeys(pass_to_pass, "not run")
        return cls(False, *not_run, error=error, dropped=dropped or {})

    @property
    def resolved(self) -> bool:
        """Every fail-to-pass test passes and every pass-to-pass test still does."""
        tests = {**self.fail_to_pass, **self.pass_to_pass}
        passed = all(o == "passed" for o in tests.values())
        return self.applied and bool(self.fail_to_pass) and passed and not self.tampered

    def signals(self) -> dict[str, float | bool]:
        """The Filter signals of this resolution."""
        return {
            "resolved": self.resolved,
            "patch_applied": self.applied,
            "fail_to_pass": _share(self.fail_to_pass),
            "pass_to_pass": _share(self.pass_to_pass),
            "touched_tests": bool(self.dropped),
            "tampered": self.tampered,
        }


def _share(outcomes: dict[str, str]) -> float:
    return sum(o == "passed" for o in outcomes.values()) / len(outcomes) if outcomes else 1.0


def test_file(test_id: str) -> str:
    """The file part of a pytest node id."""
    return test_id.split("::", 1)[0]


def prepare(
    snapshot: Snapshot,
    patch: str,
    tests: Sequence[str],
    *,
    setup_patch: str = "",
    test_patch: str = "",
) -> tuple[Snapshot, dict[str, str]]:
    """The repository a verdict tests, and the agent's changes it left out (path -> why).

    `snapshot` with `setup_patch` is what the agent got; of `patch`, the changes `policy.refusal`
    allows are made; `test_patch` comes last. `diffs.PatchError` when `patch` cannot be read or
    does not apply (then nothing of it counts), or is over `diffs.MAX_PATCH_CHARS`.
    """
    if len(patch) > diffs.MAX_PATCH_CHARS:
        raise diffs.PatchError(
            f"the changes are {diffs.summary(patch)}, over the limit of {diffs.MAX_PATCH_CHARS:,}; "
            "leave generated or large files out"
        )
    repo = diffs.patched(snapshot.files(), setup_patch)
    hidden = diffs.parse(test_patch)
    test_files = {test_file(t) for t in tests} | {f.path for f in hidden}
    kept, dropped = [], {}
    for change in diffs.parse(patch):
        why = refusal(change.path, repo, test_files, snapshot.pythonpath, deleted=change.deleted)
        if why:
            dropped[change.path] = why
        else:
            kept.append(change)
    return snapshot.with_files(diffs.patched(diffs.patched(repo, kept), hidden)), dropped


def run_tests(
    sandbox: Sandbox, snapshot: Snapshot, paths: Sequence[str], limits: Limits = VERDICT_LIMITS
) -> dict[str, Any]:
    """Unpack `snapshot` in a fresh sandbox run and run pytest on `paths` (files or node ids);
    the kit's answer: {"ok", "error", "outcomes", "messages", "summary"}.

    Raises `SandboxError` only when the sandbox itself fails (or its answer cannot be read).
    """
    request = {
        "archive": base64.b64encode(snapshot.archive).decode("ascii"),
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
    repository the agent saw; the agent's changes that `policy.refusal` refuses are left out (see
    `prepare`); `test_patch` (hidden tests, SWE-bench style) comes last. A diff that cannot be read
    or applied is refused whole (`applied` False, `error` says why).

    >>> from gfcr.sandboxes import make_sandbox
    >>> repo = Snapshot.from_files("demo", [("m.py", b"def f():\\n    return 1\\n"),
    ...     ("test_m.py", b"from m import f\\ndef test_f():\\n    assert f() == 2\\n")])
    >>> fix = "--- a/m.py\\n+++ b/m.py\\n@@ -1,2 +1,2 @@\\n def f():\\n-    return 1\\n+    return 2\\n"
    >>> evaluate(make_sandbox("local"), repo, fix, ["test_m.py::test_f"], []).resolved
    True
    """
    tests = [*fail_to_pass, *pass_to_pass]
    try:
        repository, dropped = prepare(snapshot, patch, tests, setup_patch=setup_patch, test_patch=test_patch)
    except diffs.PatchError as e:
        return Resolution.refused(fail_to_pass, pass_to_pass, f"the diff was refused: {e}")
    # A test that must fail, under names no one can guess: if it passes, something in the
    # process (the library code, the only part the agent could change) made every test pass.
    canary, function = f"test_{secrets.token_hex(8)}.py", f"test_{secrets.token_hex(8)}"
    repository = repository.changed({canary: f"def {function}():\n    assert 1 == 2\n".encode()})
    answer = run_tests(sandbox, repository, [*(test_file(t) for t in tests), canary], limits)
    if not answer.get("ok"):
        return Resolution.refused(fail_to_pass, pass_to_pass, answer.get("error", ""), dropped)
    outcomes: dict[str, str] = answer.get("outcomes", {})
    return Resolution(
        True,
        {t: outcomes.get(t, "not run") for t in fail_to_pass},
        {t: outcomes.get(t, "not run") for t in pass_to_pass},
        {t: m for t, m in answer.get("messages", {}).items() if t in fail_to_pass or t in pass_to_pass},
        dropped=dropped,
        tampered=outcomes.get(f"{canary}::{function}") == "passed",
    )
