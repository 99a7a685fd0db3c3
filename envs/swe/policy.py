"""Which of an agent's changes a SWE verdict takes: the library's code, and nothing that Python's
import system, pytest's collection or its configuration would pick up on its own.

A verdict must depend only on what the task is about, so a change is left out (recorded, never
applied) when it touches

- a test: a judged test's file, a file the hidden test patch writes, any file under a `test` or
  `tests` folder, any `test_*.py` or `*_test.py`;
- configuration pytest or packaging reads: `conftest.py`, `pytest.ini`, `.pytest.ini`,
  `pytest.toml`, `.pytest.toml`, `tox.ini`, `setup.cfg`, `pyproject.toml`, `setup.py`;
- what the import system runs or finds by itself: `sitecustomize.py`, `usercustomize.py`,
  `*.pth`, packaging metadata (`*.dist-info`, `*.egg-info`, `*.egg-link`, `*.egg`), compiled
  modules (`*.pyc`, `*.pyo`, `*.so`, `*.pyd`) and `__pycache__`;
- the shape of the packages: a new or deleted `__init__.py`, and any new file outside a package
  the repository already has (a new top-level module could shadow a test module, the standard
  library, pytest or a dependency; a new folder could become a namespace package).

Whatever the spelling, these are judged by the path a file really gets (`gfcr.envs.swe.diffs`
reads every name the verdict applies).

>>> repo = {"calc/__init__.py", "calc/ops.py", "tests/test_ops.py"}
>>> refusal("calc/ops.py", repo, {"tests/test_ops.py"})
''
>>> refusal("pytest.py", repo, set())
'a new file outside the packages the repository has (it could shadow a module)'
"""

from __future__ import annotations

import fnmatch
from collections.abc import Collection
from pathlib import PurePosixPath

TEST_FOLDERS = frozenset({"test", "tests"})
TEST_NAMES = ("test_*.py", "*_test.py")
CONFIG_NAMES = frozenset(
    {"conftest.py", "pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml", "tox.ini", "setup.cfg"}
    | {"pyproject.toml", "setup.py"}
)
IMPORT_HOOK_NAMES = frozenset({"sitecustomize.py", "usercustomize.py", "__pycache__"})
IMPORT_SUFFIXES = (".pth", ".pyc", ".pyo", ".so", ".pyd", ".dist-info", ".egg-info", ".egg-link", ".egg")


def refusal(
    path: str,
    repo_files: Collection[str],
    test_files: Collection[str],
    pythonpath: Collection[str] = (),
    *,
    deleted: bool = False,
) -> str:
    """Why a verdict leaves out an agent's change to `path` ("" when it applies it).

    `repo_files` are the repository's files as the agent got them (which tells a new file from
    a changed one, and where the packages are), `test_files` the judged and hidden tests' files,
    `pythonpath` the folders the tests import from (like the root, no new file goes there);
    `deleted`: the change deletes the file.

    >>> refusal("tests/helpers.py", set(), set())
    'a test file'
    >>> refusal("calc/__init__.py", {"calc/__init__.py"}, set(), deleted=True)
    'it makes or unmakes a package (that changes how the tests are found and imported)'
    """
    parts = PurePosixPath(path).parts
    name, folder = parts[-1], "/".join(parts[:-1])
    if (
        path in test_files
        or TEST_FOLDERS & set(parts[:-1])
        or any(fnmatch.fnmatch(name, p) for p in TEST_NAMES)
    ):
        return "a test file"
    if name in CONFIG_NAMES:
        return "pytest or packaging configuration"
    if any(part in IMPORT_HOOK_NAMES or part.endswith(IMPORT_SUFFIXES) for part in parts):
        return "read by the import system on its own (packaging metadata, a .pth or compiled file, a hook)"
    exists = path in repo_files
    if name == "__init__.py" and (deleted or not exists):
        return "it makes or unmakes a package (that changes how the tests are found and imported)"
    if not exists and (folder in pythonpath or f"{folder}/__init__.py" not in repo_files):
        return "a new file outside the packages the repository has (it could shadow a module)"
    return ""
