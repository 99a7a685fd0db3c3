"""Unified diffs as the SWE verdict reads and writes them: one strict parser, one writer.

Everything that decides what a patch changes reads it here, and everything that applies it
applies what was read here: the verdict never hands an agent's diff to another tool (GNU patch
reads file names its own way: it strips what looks like a timestamp and unquotes C-style
names, so a name it reads differently from us could reach a protected file). The grammar is
narrow on purpose, which is why no lenient diff library is used:

- each file's section is `--- a/PATH` (or `--- /dev/null`) then `+++ b/PATH` (or `+++ /dev/null`),
  the same PATH on both sides (no renames, copies or binary patches), each file at most once;
- hunks `@@ -start,count +start,count @@` with exactly the lines they count, applied at the line
  they name (no fuzz, no offset);
- `diff --git`, `index`, `new file mode`, `deleted file mode`, `old mode` and `new mode` lines
  may precede a section (they change nothing);
- PATH passes `path_problem`: relative, normalised, no control characters, quotes or backslashes.

>>> patch = unified_diff("m.py", "x = 1\\n", "x = 2\\n")
>>> print(patch, end="")
--- a/m.py
+++ b/m.py
@@ -1 +1 @@
-x = 1
+x = 2
>>> apply({"m.py": b"x = 1\\n"}, patch)
{'m.py': b'x = 2\\n'}
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass

from gfcr.errors import GfcrError

MAX_PATCH_CHARS = 262_144  # a submission's diff: a bug fix is a few KB; this keeps trajectories small
_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_INERT = ("diff --git ", "index ", "new file mode ", "deleted file mode ", "old mode ", "new mode ")
_UNSUPPORTED = (
    "rename ",
    "copy ",
    "similarity index",
    "dissimilarity index",
    "GIT binary patch",
    "Binary files",
)
_NO_NEWLINE = "\\ No newline at end of file"


class PatchError(GfcrError, ValueError):
    """A diff that cannot be read or does not apply: the verdict refuses it whole."""


@dataclass(frozen=True)
class Hunk:
    """One `@@` block: the lines it replaces (from line `old_start`) and the lines it puts there."""

    old_start: int
    old: tuple[str, ...]
    new: tuple[str, ...]


@dataclass(frozen=True)
class FilePatch:
    """One file's section of a diff: `created` (from /dev/null), `deleted` (to /dev/null), hunks."""

    path: str
    created: bool
    deleted: bool
    hunks: tuple[Hunk, ...]


def path_problem(path: str) -> str:
    """Why `path` cannot name a file in a verdict's diff ("" when it can).

    >>> path_problem("pkg/mod.py"), path_problem("../x.py") != "", path_problem('"b/t.py"') != ""
    ('', True, True)
    """
    parts = path.split("/")
    if not path or path.startswith("/") or any(part in ("", ".", "..") for part in parts):
        return f"{path!r} must be a relative path without empty, '.' or '..' parts"
    for char in path:
        category = unicodedata.category(char)
        if category[0] == "C" or (category[0] == "Z" and char != " ") or char in "\"'\\":
            return (
                f"{path!r} holds {char!r}: file names may not hold control characters, quotes or backslashes"
            )
    if any(part != part.strip() for part in parts):
        return f"{path!r} has a name that begins or ends with a space"
    return ""


def lines_of(text: str) -> list[str]:
    """`text` split after each "\\n" only (str.splitlines also splits at \\r, \\f, U+2028 …).

    >>> lines_of("a\\r\\nb")
    ['a\\r\\n', 'b']
    """
    lines = [line + "\n" for line in text.split("\n")]
    lines[-1] = lines[-1][:-1]
    return lines if lines[-1] else lines[:-1]


def parse(patch: str) -> list[FilePatch]:
    """The file sections of `patch` (see the module docstring); `PatchError` says where it breaks.

    >>> [(p.path, p.created) for p in parse("--- /dev/null\\n+++ b/new.py\\n@@ -0,0 +1 @@\\n+x = 1\\n")]
    [('new.py', True)]
    """
    lines = lines_of(patch if patch.endswith("\n") else patch + "\n")
    files: list[FilePatch] = []
    i = 0
    while i < len(lines):
        line = lines[i].rstrip("\n")
        if line.startswith(_INERT) or not line.strip():
            i += 1
        elif line.startswith(_UNSUPPORTED):
            raise PatchError(
                f"line {i + 1}: {line[:60]!r}: renames, copies and binary patches are not supported; "
                "write a rename as a deletion and a creation"
            )
        elif line.startswith("--- "):
            file_patch, i = _section(lines, i)
            if any(f.path == file_patch.path for f in files):
                raise PatchError(f"the diff changes {file_patch.path!r} twice; give each file one section")
            files.append(file_patch)
        else:
            raise PatchError(f"line {i + 1}: {line[:60]!r} is not part of a unified diff")
    return files


def _section(lines: list[str], i: int) -> tuple[FilePatch, int]:
    """The file section starting at `lines[i]` (its `---` line), and the index after it."""
    old = _header(lines[i], "--- ", "a/", i)
    new = _header(lines[i + 1] if i + 1 < len(lines) else "", "+++ ", "b/", i + 1)
    if old and new and old != new:
        raise PatchError(f"line {i + 1}: {old!r} and {new!r} differ; renames are not supported")
    if not (old or new):
        raise PatchError(f"line {i + 1}: both sides are /dev/null; name the file on one of them")
    path, hunks, i = old or new or "", [], i + 2
    while i < len(lines) and (found := _HUNK.match(lines[i])):
        old_count, new_count = int(found[2] or 1), int(found[4] or 1)
        before: list[str] = []
        after: list[str] = []
        last: list[list[str]] = []
        i += 1
        while len(before) < old_count or len(after) < new_count or _marks_no_newline(lines, i):
            if i >= len(lines):
                raise PatchError(f"{path}: a hunk ends early (it counts {old_count} and {new_count} lines)")
            line, i = lines[i], i + 1
            if line.rstrip("\n") == _NO_NEWLINE:
                for side in last:
                    side[-1] = side[-1].removesuffix("\n")
                continue
            mark, text = line[:1], line[1:]
            if mark not in (" ", "-", "+", "\n", ""):
                raise PatchError(f"{path}: hunk line {line[:60]!r} starts with neither ' ', '-' nor '+'")
            if mark in ("\n", ""):
                mark, text = " ", line  # a blank context line whose space an editor dropped
            last = [side for side, marks in ((before, " -"), (after, " +")) if mark in marks]
            for side in last:
                side.append(text)
        if len(before) != old_count or len(after) != new_count:
            raise PatchError(
                f"{path}: a hunk holds other than the {old_count} and {new_count} lines it counts"
            )
        hunks.append(Hunk(int(found[1]), tuple(before), tuple(after)))
    return FilePatch(path, not old, not new, tuple(hunks)), i


def _marks_no_newline(lines: list[str], i: int) -> bool:
    return i < len(lines) and lines[i].rstrip("\n") == _NO_NEWLINE


def _header(line: str, marker: str, prefix: str, number: int) -> str:
    """The path of a `---`/`+++` line ("" for /dev/null)."""
    if not line.startswith(marker):
        raise PatchError(f"line {number + 1}: expected a {marker.strip()!r} line, got {line[:60]!r}")
    name = line[len(marker) :].removesuffix("\n")
    if name == "/dev/null":
        return ""
    if not name.startswith(prefix):
        raise PatchError(
            f"line {number + 1}: the path {name[:60]!r} must start with {prefix!r} (or be /dev/null)"
        )
    path = name[len(prefix) :]
    if problem := path_problem(path):
        raise PatchError(f"line {number + 1}: {problem}")
    return path


def apply(files: Mapping[str, bytes], patch: str | list[FilePatch]) -> dict[str, bytes | None]:
    """What `patch` makes of `files` (path -> content): the changed files' new content, None for
    a deleted one. `PatchError` when a hunk does not match, all or nothing."""
    changes: dict[str, bytes | None] = {}
    for file_patch in parse(patch) if isinstance(patch, str) else patch:
        path, exists = file_patch.path, file_patch.path in files
        if file_patch.created == exists:
            raise PatchError(f"{path}: " + ("it exists already" if exists else "there is no such file"))
        try:
            text = files[path].decode("utf-8") if exists else ""
        except UnicodeDecodeError as e:
            raise PatchError(f"{path}: not a UTF-8 text file, a diff cannot change it") from e
        result = _patched(lines_of(text), file_patch)
        if file_patch.deleted and result:
            raise PatchError(f"{path}: the diff deletes it but leaves {len(result)} lines")
        changes[path] = None if file_patch.deleted else "".join(result).encode("utf-8")
    return changes


def patched(files: Mapping[str, bytes], patch: str | list[FilePatch]) -> dict[str, bytes]:
    """`files` as `patch` leaves them (see `apply`), a deleted file gone.

    >>> patched({"m.py": b"x = 1\\n"}, unified_diff("m.py", "x = 1\\n", None))
    {}
    """
    merged = {**files, **apply(files, patch)}
    return {path: data for path, data in merged.items() if data is not None}


def _patched(lines: list[str], file_patch: FilePatch) -> list[str]:
    out: list[str] = []
    position = 0
    for hunk in file_patch.hunks:
        start = hunk.old_start - 1 if hunk.old else hunk.old_start  # a pure insertion goes after old_start
        if start < position or lines[start : start + len(hunk.old)] != list(hunk.old):
            raise PatchError(f"{file_patch.path}: the hunk at line {hunk.old_start} does not match the file")
        out += lines[position:start] + list(hunk.new)
        position = start + len(hunk.old)
    return out + lines[position:]


def unified_diff(path: str, before: str | None, after: str | None) -> str:
    """The diff of one file from `before` to `after` (None: the file does not exist), a/ and b/ paths.

    >>> print(unified_diff("gone.py", "x\\n", None), end="")
    --- a/gone.py
    +++ /dev/null
    @@ -1 +0,0 @@
    -x
    """
    old, new = lines_of(before or ""), lines_of(after or "")
    names = (
        "a/" + path if before is not None else "/dev/null",
        "b/" + path if after is not None else "/dev/null",
    )
    chunks = list(difflib.unified_diff(old, new, *names))
    if not chunks and before != after:  # an empty file created or deleted: headers alone
        chunks = [f"--- {names[0]}\n", f"+++ {names[1]}\n"]
    return "".join(line if line.endswith("\n") else line + "\n" + _NO_NEWLINE + "\n" for line in chunks)


def diff(before: Mapping[str, str], changes: Mapping[str, str | None]) -> str:
    """The diff of `changes` (path -> new text, None: deleted) against `before`, files in path order."""
    return "".join(unified_diff(path, before.get(path), changes[path]) for path in sorted(changes))


def summary(patch: str) -> str:
    """A few words on a diff too large to keep: its size and the files it changes.

    >>> summary(unified_diff("a.py", "", "x\\n" * 3))
    'a diff of 47 characters changing 1 file (a.py)'
    """
    headers = (line[6:].rstrip("\n") for line in lines_of(patch) if line.startswith(("--- a/", "+++ b/")))
    paths = list(dict.fromkeys(headers))
    shown = ", ".join(paths[:5]) + (f", … {len(paths) - 5} more" if len(paths) > 5 else "")
    return (
        f"a diff of {len(patch):,} characters changing {len(paths)} file{'s' * (len(paths) != 1)} ({shown})"
    )
