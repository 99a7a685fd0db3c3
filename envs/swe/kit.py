"""The SWE env's tool kit: the code that runs *inside* the sandbox, next to the repository.

Standard library only (it runs on the sandbox's own interpreter, not gfcr's). The host sends this
file's source into a sandboxed Python session once per episode (`gfcr.envs.swe.workspace`), or
into a fresh sandbox run for a verdict (`gfcr.envs.swe.evaluation`), then calls its functions.
Each function returns text for the agent, or a JSON-able dict for the host; none raises on bad
input from the agent: a bad path, an edit that does not match or a patch that does not apply is
answered with a message saying what to do instead.

The repository lives in `ROOT`; `ORIGINAL` is its state when the episode began, which `diff()`
compares against. The project's tests run in a separate `python3 -m pytest` process (so edits are
always re-imported), reporting through the `gfcr_pytest_report` plugin.
"""

from __future__ import annotations

import base64
import difflib
import fnmatch
import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any

ROOT = Path("/work/repo")
STATE = Path("/work/.gfcr")
ORIGINAL = STATE / "original"
PLUGIN = "gfcr_pytest_report"
SKIP_DIRS = {"__pycache__", ".pytest_cache", ".git", ".mypy_cache", ".tox"}
MAX_READ_LINES = 400
MAX_MATCHES = 100
MAX_LISTED = 400
MAX_OUTPUT = 20_000
TEST_TIMEOUT_S = 10.0  # per test: a hanging test fails, the run goes on


# -- set-up ---------------------------------------------------------------------------------------


def unpack(
    archive_b64: str, patches: list[str], plugin_source: str, keep_original: bool = True
) -> dict[str, Any]:
    """Extract the repository (a base64 tar.gz) into ROOT, apply `patches` in order, install the plugin.

    Returns {"ok": bool, "error": str}: a patch that does not apply stops there and says why.
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
    with tarfile.open(fileobj=io.BytesIO(base64.b64decode(archive_b64)), mode="r:gz") as archive:
        archive.extractall(
            ROOT
        )  # gfcr built this archive (regular files only); the sandbox confines it anyway
    for number, patch in enumerate(patches, 1):
        if patch.strip():
            error = _patch(patch)
            if error:
                return {"ok": False, "error": f"patch {number} does not apply: {error}"}
    if keep_original:
        shutil.rmtree(ORIGINAL, ignore_errors=True)
        shutil.copytree(ROOT, ORIGINAL, symlinks=True)
    return {"ok": True, "error": ""}


def _tools() -> dict[str, bool]:
    return {
        "patch": shutil.which("patch") is not None,
        "pytest": importlib.util.find_spec("pytest") is not None,
    }


def _patch(patch: str) -> str:
    """Apply a unified diff (paths a/… b/…) to ROOT; "" when it applied, else patch's complaint."""
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


def _walk(start: Path) -> list[Path]:
    files = []
    for folder, dirs, names in os.walk(start):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info"))
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


def run_tests(paths: list[str], pythonpath: list[str], timeout_s: float = 120.0) -> dict[str, Any]:
    """Run pytest on `paths` (files or node ids); {"outcomes": {id: outcome}, "messages": {id: text},
    "summary": str}. An outcome is "passed", "failed", "skipped" or "error"."""
    missing = [p for p in paths if not (ROOT / p.split("::", 1)[0]).exists()]
    paths = [p for p in paths if p not in missing]
    absent = {
        "outcomes": dict.fromkeys(missing, "error"),
        "messages": dict.fromkeys(missing, "no such test file"),
    }
    if not paths:
        return {**absent, "summary": "no test file to run"}
    report = STATE / "report.json"
    report.unlink(missing_ok=True)
    paths_env = [str(STATE), *(str(ROOT / p) for p in pythonpath)]
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(STATE),
        "PYTHONPATH": os.pathsep.join(paths_env),
        "PYTHONDONTWRITEBYTECODE": "1",
        "GFCR_PYTEST_REPORT": str(report),
        "GFCR_TEST_TIMEOUT_S": str(TEST_TIMEOUT_S),
    }
    command = ["python3", "-m", "pytest", "-p", PLUGIN, "-p", "no:cacheprovider", "-o", "addopts="]
    command += ["-q", "--no-header", "-rN", "--tb=short", *paths]
    try:
        done = subprocess.run(
            command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout_s, errors="replace"
        )
        tail = (done.stdout + done.stderr).strip().splitlines()[-3:]
    except subprocess.TimeoutExpired:
        tail = [f"the test run ran past {timeout_s:.0f} s and was stopped"]
    result: dict[str, Any] = (
        json.loads(report.read_text()) if report.exists() else {"outcomes": {}, "messages": {}}
    )
    for key in ("outcomes", "messages"):
        result[key].update(absent[key])
    result["summary"] = "\n".join(tail)
    return result


# -- what the agent changed -----------------------------------------------------------------------


def diff() -> str:
    """The agent's changes so far: a unified diff from ORIGINAL to ROOT (text files; a/ and b/ paths)."""
    before = {_key(p, ORIGINAL): p for p in _walk(ORIGINAL)}
    after = {_key(p, ROOT): p for p in _walk(ROOT)}
    chunks: list[str] = []
    for name in sorted(before.keys() | after.keys()):
        old, new = _text(before.get(name)), _text(after.get(name))
        if old is None or new is None or old == new:
            continue  # binary (left out), or unchanged
        chunks += difflib.unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            "a/" + name if name in before else "/dev/null",
            "b/" + name if name in after else "/dev/null",
        )
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in chunks
    )


def _key(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def _text(path: Path | None) -> str | None:
    if path is None:
        return ""
    try:
        return path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return None
