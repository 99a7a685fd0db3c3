"""The SWE env's tool kit: the code that runs *inside* the sandbox, next to the repository.

Standard library only (it runs on the sandbox's own interpreter, not gfcr's). The host sends this
file's source into a sandboxed Python session once per episode (`gfcr.envs.swe.workspace`), or
into a fresh sandbox run for a verdict (`gfcr.envs.swe.evaluation`), then calls its functions.
Each function returns text for the agent, or a JSON-able dict for the host; none raises on bad
input from the agent: a bad path, an edit that does not match or a patch that does not apply is
answered with a message saying what to do instead.

The repository lives in `ROOT`. The kit keeps no copy of how it began: the host keeps that, out
of the agent's reach, and builds the diff from `digests()` and `read_bytes()`. The project's tests
run in a separate pytest process (so edits are always re-imported; see `run_tests` for how it is
started and timed), reporting through the `gfcr_pytest_report` plugin.
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import importlib.util
import io
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path("/work/repo")
STATE = Path("/work/.gfcr")
PLUGIN = "gfcr_pytest_report"
SKIP_DIRS = {"__pycache__", ".pytest_cache", ".git", ".mypy_cache", ".tox"}
MAX_READ_LINES = 400
MAX_MATCHES = 100
MAX_LISTED = 400
MAX_OUTPUT = 20_000
TEST_TIMEOUT_S = 10.0  # per test: a hanging test fails, the run goes on
COLLECT_TIMEOUT_S = 60.0  # pytest's start-up (conftests), and the import of each test file
POLL_S = 0.05
# The test process: `-I` keeps the repository off sys.path[0] (and ignores PYTHON* variables) while
# pytest starts; the repository's folders then go after the standard library, before the installed
# packages (so the project's own package wins over an installed copy, yet shadows nothing pytest
# or the standard library needs); the report plugin is loaded by path and no other is autoloaded.
LAUNCHER = """
import importlib.util, json, site, sys
import pytest
folders, plugin, arguments = json.loads(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
sites = set(site.getsitepackages())
at = next((i for i, entry in enumerate(sys.path) if entry in sites), len(sys.path))
sys.path[at:at] = folders
spec = importlib.util.spec_from_file_location("gfcr_pytest_report", plugin)
report = importlib.util.module_from_spec(spec)
spec.loader.exec_module(report)
sys.exit(pytest.main(arguments, plugins=[report]))
"""


# -- set-up ---------------------------------------------------------------------------------------


def unpack(archive_b64: str, plugin_source: str) -> dict[str, Any]:
    """Extract the repository (a base64 tar.gz, already patched by the host) into ROOT; install the plugin.

    Returns {"ok": bool, "error": str}.
    """
    if missing := [name for name, found in _tools().items() if not found]:
        return {
            "ok": False,
            "error": f"the sandbox lacks {', '.join(missing)}: install them in its image "
            "(Debian: apt-get install patch python3-pytest; `make setup` does it for the local sandbox)",
        }
    shutil.rmtree(ROOT, ignore_errors=True)
    ROOT.mkdir(parents=True)
    STATE.mkdir(parents=True, exist_ok=True)
    (STATE / f"{PLUGIN}.py").write_text(plugin_source)
    # gfcr built this archive (regular files only); the sandbox confines it anyway
    with tarfile.open(fileobj=io.BytesIO(base64.b64decode(archive_b64)), mode="r:gz") as archive:
        archive.extractall(ROOT)
    return {"ok": True, "error": ""}


def _tools() -> dict[str, bool]:
    return {
        "patch": shutil.which("patch") is not None,
        "pytest": importlib.util.find_spec("pytest") is not None,
    }


def _patch(patch: str) -> str:
    """Apply a unified diff (paths a/… b/…) to ROOT with GNU patch (the agent's own tool: verdicts
    never use it); "" when it applied, else patch's complaint."""
    command = ["patch", "-p1", "--batch", "--forward", "--no-backup-if-mismatch", "-E", "-r", "-"]
    check = subprocess.run([*command, "--dry-run"], input=patch, cwd=ROOT, capture_output=True, text=True)
    if check.returncode != 0:
        return (check.stdout + check.stderr).strip()[-2000:] or f"patch exited with status {check.returncode}"
    done = subprocess.run(command, input=patch, cwd=ROOT, capture_output=True, text=True)
    return "" if done.returncode == 0 else (done.stdout + done.stderr).strip()[-2000:]


# -- the agent's tools ----------------------------------------------------------------------------


def _inside(path: str) -> Path:
    """`path` (relative to the repository root) as an absolute path, refusing anything outside it."""
    target = (ROOT / path).resolve()
    if target != ROOT and ROOT not in target.parents:
        raise ValueError(
            f"{path!r} is outside the repository; use a path relative to its root, e.g. 'setup.py'"
        )
    return target


def _relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix() or "."


def _walk(start: Path, *, metadata: bool = False) -> list[Path]:
    """The files under `start`, without caches (and without `*.egg-info` unless `metadata`)."""
    files = []
    for folder, dirs, names in os.walk(start):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and (metadata or not d.endswith(".egg-info")))
        files += [Path(folder) / name for name in sorted(names) if not name.endswith(".pyc")]
    return files


def list_files(path: str = ".", depth: int = 2) -> str:
    """The files and folders under `path`, `depth` levels deep."""
    try:
        start = _inside(path)
    except ValueError as e:
        return f"Error: {e}"
    if not start.is_dir():
        return f"Error: {path!r} is not a folder" + (
            " (it is a file: use read_file)" if start.is_file() else ""
        )
    lines = []
    for folder, dirs, names in os.walk(start):
        level = len(Path(folder).relative_to(start).parts)
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info"))
        if level >= max(depth, 1):
            dirs[:] = []
        lines += [_relative(Path(folder) / d) + "/" for d in dirs]
        lines += [_relative(Path(folder) / n) for n in sorted(names) if not n.endswith(".pyc")]
    lines.sort()
    if len(lines) > MAX_LISTED:
        return "\n".join(lines[:MAX_LISTED]) + f"\n… {len(lines) - MAX_LISTED} more; list a sub-folder"
    return "\n".join(lines) or "(empty folder)"


def read_file(path: str, start_line: int = 1, end_line: int = 0) -> str:
    """Lines `start_line`..`end_line` of a file (1-based, inclusive; 0 = to the end), numbered."""
    try:
        target = _inside(path)
        text = target.read_text(encoding="utf-8")
    except ValueError as e:
        return f"Error: {e}"
    except IsADirectoryError:
        return f"Error: {path!r} is a folder; use list_files"
    except FileNotFoundError:
        return f"Error: no file {path!r}; use list_files or search to find it"
    except UnicodeDecodeError:
        return f"Error: {path!r} is not a text file"
    lines = text.splitlines()
    first = max(int(start_line), 1)
    last = len(lines) if int(end_line) <= 0 else min(int(end_line), len(lines))
    last = min(last, first + MAX_READ_LINES - 1)
    shown = [f"{number:>5} {lines[number - 1]}" for number in range(first, last + 1)]
    more = f"\n… lines {last + 1}-{len(lines)} not shown" if last < len(lines) else ""
    return ("\n".join(shown) or f"(file has {len(lines)} lines)") + more


def search(pattern: str, path: str = ".", glob: str = "*.py") -> str:
    """Lines matching the regular expression `pattern` in files named like `glob` under `path`."""
    try:
        regex = re.compile(pattern)
        start = _inside(path)
    except re.error as e:
        return f"Error: {pattern!r} is not a valid regular expression ({e})"
    except ValueError as e:
        return f"Error: {e}"
    files = [start] if start.is_file() else _walk(start)
    matches = []
    for file in files:
        if not fnmatch.fnmatch(file.name, glob or "*"):
            continue
        try:
            lines = file.read_text(encoding="utf-8").splitlines()
        except (UnicodeDecodeError, OSError):
            continue
        matches += [
            f"{_relative(file)}:{n}: {line.strip()}" for n, line in enumerate(lines, 1) if regex.search(line)
        ]
        if len(matches) > MAX_MATCHES:
            return "\n".join(matches[:MAX_MATCHES]) + "\n… more matches; narrow the pattern or the path"
    return "\n".join(matches) or f"no line matches {pattern!r} in {glob} files under {path}"


def edit_file(path: str, old: str, new: str) -> str:
    """Replace the one occurrence of `old` in a file with `new`."""
    try:
        target = _inside(path)
        text = target.read_text(encoding="utf-8")
    except ValueError as e:
        return f"Error: {e}"
    except (FileNotFoundError, IsADirectoryError):
        return f"Error: no file {path!r}; to create one use write_file"
    except UnicodeDecodeError:
        return f"Error: {path!r} is not a text file"
    count = text.count(old) if old else 0
    if count != 1:
        problem = "old is empty" if not old else f"old occurs {count} times in {path}"
        return f"Error: {problem}; give an exact piece of the file (whitespace included) that occurs once"
    target.write_text(text.replace(old, new, 1), encoding="utf-8")
    line = text[: text.index(old)].count("\n") + 1
    return f"Edited {path} at line {line}."


def write_file(path: str, content: str) -> str:
    """Write `content` to a file (created, or replaced whole)."""
    try:
        target = _inside(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
    except ValueError as e:
        return f"Error: {e}"
    except (IsADirectoryError, NotADirectoryError, FileExistsError):
        return f"Error: {path!r} is a folder, or a file stands where a folder of its path should be"
    return f"Wrote {path} ({content.count(chr(10)) + 1} lines)."


def apply_patch(patch: str) -> str:
    """Apply a unified diff whose paths start a/ and b/ (as `git diff` writes them)."""
    error = _patch(patch if patch.endswith("\n") else patch + "\n")
    return f"Error: the patch does not apply; nothing was changed.\n{error}" if error else "Patch applied."


def bash(command: str, timeout_s: float = 60.0) -> str:
    """Run a shell command in the repository; its output and exit status."""
    try:
        done = subprocess.run(
            ["/bin/bash", "-c", command],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            errors="replace",
        )
    except subprocess.TimeoutExpired:
        return f"[the command ran past {timeout_s:.0f} s and was stopped]"
    output = (done.stdout + (f"\n[stderr]\n{done.stderr}" if done.stderr else "")).strip()
    if len(output) > MAX_OUTPUT:
        output = (
            f"[… the first {len(output) - MAX_OUTPUT} characters of the output are cut]\n"
            + output[-MAX_OUTPUT:]
        )
    status = "" if done.returncode == 0 else f"\n[exit status {done.returncode}]"
    return (output or "(no output)") + status


def run_tests(
    paths: list[str],
    pythonpath: list[str],
    timeout_s: float = 120.0,
    test_timeout_s: float = TEST_TIMEOUT_S,
    collect_timeout_s: float = COLLECT_TIMEOUT_S,
) -> dict[str, Any]:
    """Run pytest on `paths` (files or node ids); {"outcomes": {id: outcome}, "messages": {id: text},
    "summary": str}. An outcome is "passed", "failed", "skipped" or "error".

    A test that runs past `test_timeout_s` is stopped from here, outside its process: the process
    is killed, the test fails with a message saying so, and pytest starts again on the tests not
    yet run. So is a test file whose import runs past `collect_timeout_s` (an "error" under the
    file's path; the others run) and pytest's start-up (every path an "error"). The whole run
    stops after `timeout_s`.
    """
    missing = [p for p in paths if not (ROOT / p.split("::", 1)[0]).exists()]
    paths = [p for p in paths if p not in missing]
    run = _Run(test_timeout_s, collect_timeout_s, dict.fromkeys(missing, "error"))
    run.messages.update(dict.fromkeys(missing, "no such test file"))
    if not paths:
        return {"outcomes": run.outcomes, "messages": run.messages, "summary": "no test file to run"}
    deadline = time.monotonic() + timeout_s
    while paths:
        stopped, summary = _pytest(paths, pythonpath, deadline, run)
        if stopped is None:
            break
        if not stopped:  # pytest's start-up: loading a conftest, or what it imports, hangs
            run.outcomes.update(dict.fromkeys(paths, "error"))
            run.messages.update(dict.fromkeys(paths, f"pytest's start-up ran past {collect_timeout_s:g} s"))
            break
        if "::" in stopped:
            run.outcomes[stopped] = "failed"
            run.messages[stopped] = f"the test ran past {test_timeout_s:g} s and was stopped"
            run.done.append(stopped)
        else:  # a test file (or package) whose import hangs
            run.outcomes[stopped] = "error"
            run.messages[stopped] = f"importing it ran past {collect_timeout_s:g} s and was stopped"
            run.ignored.append(stopped)
            paths = [p for p in paths if not (p.split("::", 1)[0] + "/").startswith(stopped + "/")]
    return {"outcomes": run.outcomes, "messages": run.messages, "summary": summary}


@dataclass
class _Run:
    """One `run_tests`: its time limits, and what its pytest processes reported."""

    test_timeout_s: float
    collect_timeout_s: float
    outcomes: dict[str, str] = field(default_factory=dict)
    messages: dict[str, str] = field(default_factory=dict)
    done: list[str] = field(default_factory=list)  # tests torn down or stopped: a restart deselects them
    ignored: list[str] = field(default_factory=list)  # test files whose import was stopped: left out

    def read(self, event: dict[str, str]) -> None:
        if "finish" in event:
            self.done.append(event["finish"])
        elif "id" in event:
            self.outcomes[event["id"]] = event["outcome"]
            if event["message"]:
                self.messages[event["id"]] = event["message"]


def _pytest(paths: list[str], pythonpath: list[str], deadline: float, run: _Run) -> tuple[str | None, str]:
    """One pytest process on `paths` less the tests done, its events read into `run` as they come;
    (what it was stopped in for running too long: a test's id, a test file's path, "" for its
    start-up; or None; its output's last lines). At `deadline` it is stopped for good."""
    report, output = STATE / "report.jsonl", STATE / "pytest.out"
    report.write_text("")
    arguments = ["-p", "no:cacheprovider", "-o", "addopts=", "-q", "--no-header", "-rN", "--tb=short"]
    arguments += [f"--deselect={test}" for test in run.done] + [f"--ignore={file}" for file in run.ignored]
    arguments += paths
    folders = [str(ROOT), *(str(ROOT / p) for p in pythonpath)]
    plugin = str(STATE / f"{PLUGIN}.py")
    command = ["python3", "-I", "-B", "-c", LAUNCHER, json.dumps(folders), plugin, json.dumps(arguments)]
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(STATE),
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "GFCR_PYTEST_REPORT": str(report),
    }
    running: str | None = ""  # the start-up, until the first test file is collected
    limit, since, overdue, late = run.collect_timeout_s, time.monotonic(), False, False
    with open(output, "w+", encoding="utf-8", errors="replace") as out, open(report, "rb") as events:
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: a kill reaches what the tests started
        )
        while True:
            exited = _wait(process, POLL_S)
            for event in _events(events):
                if "start" in event:
                    running, limit, since = event["start"], run.test_timeout_s, time.monotonic()
                elif "collecting" in event:
                    running, limit, since = event["collecting"], run.collect_timeout_s, time.monotonic()
                elif "finish" in event or "collected" in event:
                    running = None
                run.read(event)
            if exited:
                break
            late = time.monotonic() >= deadline
            overdue = not late and running is not None and time.monotonic() - since > limit
            if overdue or late:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                break
        out.seek(0)
        tail = out.read().strip().splitlines()[-3:]
    if late:
        tail = ["the test run ran past its time and was stopped"]
    return (running if overdue else None), "\n".join(tail)


def _events(file: Any) -> list[dict[str, str]]:
    """The JSON lines written to `file` (opened "rb") since the last call; a line not yet
    complete is left for the next call."""
    events = []
    while line := file.readline():
        if not line.endswith(b"\n"):
            file.seek(-len(line), os.SEEK_CUR)
            break
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a line cut short by an earlier kill
    return events


def _wait(process: subprocess.Popen, seconds: float) -> bool:
    try:
        process.wait(seconds)
    except subprocess.TimeoutExpired:
        return False
    return True


# -- what the agent changed -----------------------------------------------------------------------


def digests() -> dict[str, list]:
    """Every regular file of the repository but caches: path -> [size, sha256] (what the host
    compares with the repository as the task began; packaging metadata included, so that the
    verdict sees it). Symbolic links, special files and files it cannot read are left out."""
    listing = {}
    for path in _walk(ROOT, metadata=True):
        try:
            info = path.lstat()
            if stat.S_ISREG(info.st_mode):
                listing[path.relative_to(ROOT).as_posix()] = [info.st_size, _sha256(path)]
        except OSError:
            continue  # unreadable (the agent's chmod): like a file that is not there
    return listing


def read_bytes(paths: list[str]) -> dict[str, str]:
    """The named files' contents, base64 (those that vanished or are not regular files left out)."""
    contents = {}
    for name in paths:
        path = ROOT / name
        if path.is_file() and not path.is_symlink():
            contents[name] = base64.b64encode(path.read_bytes()).decode("ascii")
    return contents


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
