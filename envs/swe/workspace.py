"""`Workspace`: the agent's copy of the repository, in a sandboxed Python session of its own.

The session holds the repository and the kit (kit.py); every tool call is one cell calling a kit
function with JSON arguments on stdin. The repository as the task began stays on the host, out of
the agent's reach: after each call that may change files the workspace compares the session's
files with it (by digest, fetching only what changed) and writes the agent's diff itself, with
`gfcr.envs.swe.diffs`. What a diff cannot carry is left out and the agent is told: binary files,
files over `MAX_FILE_BYTES`, symbolic links, names with control characters or quotes. If the
session dies (a command hit a limit) the next call finds a fresh session with the repository as it
was after the last call that finished — nothing is lost but the work of the call that was stopped
(and what was left out), and the agent is told.

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
import hashlib
import json
from typing import Any, Self

from gfcr.envs.swe import diffs
from gfcr.envs.swe.evaluation import kit_source, plugin_source
from gfcr.envs.swe.projects import Snapshot
from gfcr.errors import SandboxError, ToolError
from gfcr.sandboxes import ExecResult, Limits, Sandbox, Session
from gfcr.sandboxes.tools import call_limits, format_result

SESSION_LIMITS = Limits(
    wall_s=180.0, cpu_s=180.0, memory_mb=2048, max_processes=64, max_output_bytes=4_000_000, disk_mb=512
)
CHANGES_FILES = {"edit_file", "write_file", "apply_patch", "bash", "run_tests"}
MAX_FILE_BYTES = 1_000_000  # a changed file larger than this is left out of the diff
FETCH_BYTES = 2_000_000  # file contents per kit call (base64 must fit the session's output cap)
MAX_ERROR_CHARS = 2_000
_CALL = "import json as _json, sys as _sys\nprint(_json.dumps({name}(**_json.loads(_sys.stdin.read()))))"


class Workspace:
    """One episode's repository: `snapshot` with `setup_patch` applied, in its own session."""

    def __init__(
        self, sandbox: Sandbox, snapshot: Snapshot, setup_patch: str = "", limits: Limits = SESSION_LIMITS
    ) -> None:
        self.sandbox, self.limits = sandbox, limits
        self.start = snapshot.patched(setup_patch)  # the repository the agent was given
        self._start_files = self.start.files()
        self._start_digests = {path: _sha256(data) for path, data in self._start_files.items()}
        self.changes: dict[str, bytes | None] = {}  # changed files' content (None: deleted), as in the diff
        self.left_out: dict[str, str] = {}  # changed files the diff cannot carry -> why
        self.patch = ""  # the agent's changes so far, as a diff against the repository it was given
        self._session: Session | None = None

    def call(self, function: str, **arguments: Any) -> Any:
        """Call kit function `function` in the session; what it returned (text or a dict)."""
        note = ""
        if self._session is None or not self._session.alive:
            note = self._open()
        result = self._cell(function, arguments, call_limits(self.limits))  # by the step budget's deadline
        if not result.ok:
            self._close_session()
            lost = (
                "; the changes of this call are lost, those before it were kept"
                if function in CHANGES_FILES
                else ""
            )
            stopped = _short(format_result(result))
            raise ToolError(f"{function} was stopped: {stopped}\n[the sandbox session restarts{lost}]")
        value = _answer(result, function)
        if function in CHANGES_FILES:
            after = self._refresh()
            value = value + after if isinstance(value, str) else value
        return note + value if note and isinstance(value, str) else value

    def _refresh(self) -> str:
        """Read the session's changes into `changes`, `left_out` and `patch`; a note for the agent
        on what the diff leaves out (when that changed) and on a diff over the size cap."""
        listing: dict[str, list] = self._run("digests")
        changed = {
            path: entry for path, entry in listing.items() if self._start_digests.get(path) != entry[1]
        }
        left_out = {path: "over 1 MB" for path, (size, _) in changed.items() if size > MAX_FILE_BYTES}
        known = {path: data for path, data in self.changes.items() if data is not None}
        wanted = [p for p in changed if p not in left_out and _sha256(known.get(p)) != changed[p][1]]
        contents = {p: known[p] for p in changed if p not in left_out and p not in wanted}
        contents.update(self._fetch(wanted, listing))
        changes: dict[str, bytes | None] = {p: None for p in self._start_files if p not in listing}
        changes.update(contents)
        for path, data in list(changes.items()):
            if why := _not_carried(path, data, self._start_files.get(path)):
                left_out[path] = why
                del changes[path]
        before = {p: self._start_files[p].decode("utf-8") for p in changes if p in self._start_files}
        texts = {p: None if data is None else data.decode("utf-8") for p, data in changes.items()}
        previous, self.changes, self.left_out = self.left_out, changes, left_out
        self.patch = diffs.diff(before, texts)
        notes = ""
        if left_out and left_out != previous:
            shown = ", ".join(f"{path!r} ({why})" for path, why in sorted(left_out.items())[:10])
            notes += f"\n[not part of your changes, a diff cannot carry them: {shown}]"
        if len(self.patch) > diffs.MAX_PATCH_CHARS:
            notes += (
                f"\n[your changes now make {diffs.summary(self.patch)}, over the {diffs.MAX_PATCH_CHARS:,} "
                "a submission may have: as they stand they would be refused; undo large or generated changes]"
            )
        return notes

    def _fetch(self, paths: list[str], listing: dict[str, list]) -> dict[str, bytes]:
        """The session's content of `paths`, a few MB per call."""
        contents: dict[str, bytes] = {}
        batch: list[str] = []
        for index, path in enumerate(paths):
            batch.append(path)
            size = sum(listing[p][0] for p in batch)
            if size >= FETCH_BYTES or index == len(paths) - 1:
                answer: dict[str, str] = self._run("read_bytes", paths=batch)
                contents.update({p: base64.b64decode(data) for p, data in answer.items()})
                batch = []
        return contents

    def _open(self) -> str:
        """Start a session holding the repository (and the agent's changes so far, after a crash)."""
        restoring = self._session is not None or bool(self.changes)
        self._close_session()
        try:
            self._session = self.sandbox.session("python", limits=self.limits)
            setup = self._session.run(kit_source())
            if not setup.ok:
                raise SandboxError(f"the SWE kit did not load: {_short(format_result(setup))}")
            repository = self.start.changed(self.changes)
            state = self._run(
                "unpack",
                archive_b64=base64.b64encode(repository.archive).decode("ascii"),
                plugin_source=plugin_source(),
            )
            if not state["ok"]:
                raise SandboxError(f"the repository could not be prepared: {state['error']}")
        except SandboxError:
            self._close_session()
            raise
        return (
            "[a new sandbox session: your changes up to the last finished call were restored]\n"
            if restoring
            else ""
        )

    def _cell(self, function: str, arguments: dict[str, Any], limits: Limits | None = None) -> ExecResult:
        """One session cell calling kit function `function` with `arguments` (JSON on stdin)."""
        assert self._session is not None
        return self._session.run(_CALL.format(name=function), stdin=json.dumps(arguments), limits=limits)

    def _run(self, function: str, **arguments: Any) -> Any:
        result = self._cell(function, arguments)
        if not result.ok:
            raise SandboxError(f"the SWE kit's {function} failed: {_short(format_result(result))}")
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


def _sha256(data: bytes | None) -> str:
    return hashlib.sha256(data).hexdigest() if data is not None else ""


def _short(text: str) -> str:
    """An error's text at most `MAX_ERROR_CHARS` long (its end, where the reason usually is)."""
    return text if len(text) <= MAX_ERROR_CHARS else "[…] " + text[-MAX_ERROR_CHARS:]


def _not_carried(path: str, data: bytes | None, before: bytes | None) -> str:
    """Why a diff cannot carry the change of `path` from `before` to `data` ("" when it can)."""
    if problem := diffs.path_problem(path):
        return problem
    for content in (data, before):
        try:
            if content is not None:
                content.decode("utf-8")
        except UnicodeDecodeError:
            return "not a text file"
    return ""
