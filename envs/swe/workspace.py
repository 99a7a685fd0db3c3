"""`Workspace`: the agent's copy of the repository, in a sandboxed Python session of its own.

The session holds the repository and the kit (kit.py); every tool call is one cell calling a kit
function with JSON arguments on stdin. After each call that may change files the workspace keeps
the agent's diff on the host, so if the session dies (a command hit a limit) the next call finds a
fresh session with the repository as it was after the last call that finished — nothing is lost
but the work of the call that was stopped, and the agent is told.

>>> from gfcr.envs.swe.projects import Snapshot
>>> from gfcr.sandboxes import make_sandbox
>>> snapshot = Snapshot.from_files("demo", [("m.py", b"x = 1\\n")])
>>> with Workspace(make_sandbox("local"), snapshot) as workspace:
...     print(workspace.call("edit_file", path="m.py", old="1", new="2"))
...     print(workspace.patch, end="")
Edited m.py at line 1.
--- a/m.py
+++ b/m.py
@@ -1 +1 @@
-x = 1
+x = 2
"""

from __future__ import annotations

import base64
import json
from typing import Any, Self

from gfcr.envs.swe.evaluation import kit_source, plugin_source
from gfcr.envs.swe.projects import Snapshot
from gfcr.errors import SandboxError, ToolError
from gfcr.sandboxes import ExecResult, Limits, Sandbox, Session
from gfcr.sandboxes.tools import format_result

SESSION_LIMITS = Limits(
    wall_s=180.0, cpu_s=180.0, memory_mb=2048, max_processes=64, max_output_bytes=4_000_000, disk_mb=512
)
CHANGES_FILES = {"edit_file", "write_file", "apply_patch", "bash", "run_tests"}
_CALL = "import json as _json, sys as _sys\nprint(_json.dumps({name}(**_json.loads(_sys.stdin.read()))))"


class Workspace:
    """One episode's repository: `snapshot` with `setup_patch` applied, in its own session."""

    def __init__(
        self, sandbox: Sandbox, snapshot: Snapshot, setup_patch: str = "", limits: Limits = SESSION_LIMITS
    ) -> None:
        self.sandbox, self.snapshot, self.setup_patch, self.limits = sandbox, snapshot, setup_patch, limits
        self.patch = ""  # the agent's changes so far, as a diff against the repository it was given
        self._session: Session | None = None

    def call(self, function: str, **arguments: Any) -> Any:
        """Call kit function `function` in the session; what it returned (text or a dict)."""
        note = ""
        if self._session is None or not self._session.alive:
            note = self._open()
        result = self._cell(function, arguments)
        if not result.ok:
            self._close_session()
            lost = (
                "; the changes of this call are lost, those before it were kept"
                if function in CHANGES_FILES
                else ""
            )
            raise ToolError(
                f"{function} was stopped: {format_result(result)}\n[the sandbox session restarts{lost}]"
            )
        value = _answer(result, function)
        if function in CHANGES_FILES:
            self.patch = self._run("diff")
        return note + value if note and isinstance(value, str) else value

    def _open(self) -> str:
        """Start a session holding the repository (and the agent's changes so far, after a crash)."""
        restoring = self._session is not None or bool(self.patch)
        self._close_session()
        try:
            self._session = self.sandbox.session("python", limits=self.limits)
            setup = self._session.run(kit_source())
            if not setup.ok:
                raise SandboxError(f"the SWE kit did not load: {format_result(setup)}")
            state = self._run(
                "unpack",
                archive_b64=base64.b64encode(self.snapshot.archive).decode("ascii"),
                patches=[self.setup_patch],
                plugin_source=plugin_source(),
            )
            if not state["ok"]:
                raise SandboxError(f"the repository could not be prepared: {state['error']}")
            if self.patch and self._run("apply_patch", patch=self.patch) != "Patch applied.":
                raise SandboxError("the agent's earlier changes could not be restored in a new session")
        except SandboxError:
            self._close_session()
            raise
        return (
            "[a new sandbox session: your changes up to the last finished call were restored]\n"
            if restoring
            else ""
        )

    def _cell(self, function: str, arguments: dict[str, Any]) -> ExecResult:
        """One session cell calling kit function `function` with `arguments` (JSON on stdin)."""
        assert self._session is not None
        return self._session.run(_CALL.format(name=function), stdin=json.dumps(arguments))

    def _run(self, function: str, **arguments: Any) -> Any:
        result = self._cell(function, arguments)
        if not result.ok:
            raise SandboxError(f"the SWE kit's {function} failed: {format_result(result)}")
        return _answer(result, function)

    def _close_session(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None

    def close(self) -> None:
        """End the session (the repository goes with it); the workspace may be reused later."""
        self._close_session()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _answer(result: ExecResult, function: str) -> Any:
    try:
        return json.loads(result.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError) as e:
        raise SandboxError(
            f"the SWE kit's {function} gave no answer: {result.stdout[-500:]}{result.stderr[-500:]}"
        ) from e
