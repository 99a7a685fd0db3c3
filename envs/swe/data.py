"""SWE task sources: the bundled projects' generated tasks, or your own repository and task file.

`dataset` is "all" (every bundled project), one project's name, several joined by "+"
("inflection+parse"), or a `.jsonl` path of your own tasks (SWE-bench style) over the repository
at `repo`. Each line of such a file:

    {"id": "fix-1", "issue": "…", "fail_to_pass": ["tests/test_a.py::test_x"],
     "pass_to_pass": ["tests/test_a.py::test_y"], "gold_patch": "--- a/…",
     "test_patch": "",            # optional: hidden tests, applied only when judging
     "repo": "path/to/checkout",  # optional: this task's repository (default: `repo`)
     "pythonpath": ["src"]}       # optional: folders the tests import from

Task metadata (what the env, oracle and verifier read): `repo` ("name@version" of a bundled
project, or an absolute path), `setup_patch` (the injected bug; "" for your own tasks),
`test_patch`, `fail_to_pass`, `pass_to_pass`, `pythonpath`, `difficulty`; `Task.gold` is the gold
patch.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from gfcr.core import Task
from gfcr.envs.swe.generate import project_tasks
from gfcr.envs.swe.projects import PROJECTS, Snapshot, project_snapshot
from gfcr.envs.tasks import TaskSource, with_level
from gfcr.errors import ConfigError, UnknownNameError
from gfcr.sandboxes import Sandbox

REQUIRED = ("issue", "fail_to_pass", "gold_patch")


def load_tasks(
    dataset: str,
    sandbox: Sandbox | str = "auto",
    *,
    repo: str | None = None,
    tasks_per_project: int = 10,
    seed: int = 0,
) -> TaskSource:
    """The tasks of `dataset` (see the module docstring); bundled ones are generated on first use,
    in `sandbox` (a `Sandbox`, or a backend name for the shared one, made only if needed).

    >>> tasks = load_tasks("inflection", tasks_per_project=2)
    >>> tasks[0].id, tasks[0].metadata["repo"]
    ('swe/inflection-0', 'inflection@0.5.1')
    """
    if dataset.endswith(".jsonl"):
        return TaskSource.from_tasks(Path(dataset).stem, read_task_file(dataset, repo))
    if repo is not None:
        raise ConfigError(
            f"repo= is for your own task files (dataset='tasks.jsonl'); dataset {dataset!r} is bundled"
        )
    names = list(PROJECTS) if dataset == "all" else dataset.split("+")
    for name in names:
        if name not in PROJECTS:
            raise UnknownNameError(
                "SWE dataset", name, ["all", *PROJECTS], hint="or a .jsonl file of your own tasks"
            )
    tasks = [task for name in names for task in project_tasks(name, sandbox, tasks_per_project, seed)]
    return TaskSource.from_tasks(f"swe-{dataset}", tasks)


def read_task_file(path: str | Path, repo: str | None) -> list[Task]:
    """Your own tasks (one JSON object per line), each checked for the fields it needs."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"SWE task file {str(path)!r} does not exist")
    tasks = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            record: dict[str, Any] = json.loads(line)
        except json.JSONDecodeError as e:
            raise ConfigError(f"{where}: not valid JSON ({e})") from e
        if missing := [key for key in REQUIRED if not record.get(key)]:
            raise ConfigError(f"{where}: missing {', '.join(missing)}; each task needs {', '.join(REQUIRED)}")
        checkout = record.get("repo") or repo
        if not checkout:
            raise ConfigError(
                f"{where}: no repository: pass repo='path/to/checkout' or give the task a 'repo'"
            )
        root = (path.parent / checkout).resolve() if not Path(checkout).is_absolute() else Path(checkout)
        if not root.is_dir():
            raise ConfigError(f"{where}: repository {str(root)!r} is not a folder")
        tasks.append(
            Task(
                id=str(record.get("id") or f"{path.stem}/{number - 1}"),
                prompt=record["issue"],
                gold=record["gold_patch"],
                source=path.stem,
                metadata=with_level(
                    {
                        "repo": str(root),
                        "setup_patch": "",
                        "test_patch": record.get("test_patch", ""),
                        "fail_to_pass": list(record["fail_to_pass"]),
                        "pass_to_pass": list(record.get("pass_to_pass", [])),
                        "pythonpath": list(record.get("pythonpath", [])),
                        "difficulty": record.get("difficulty", "unknown"),
                    }
                ),
            )
        )
    return tasks


def snapshot_of(task: Task) -> Snapshot:
    """The repository `task` starts from (before its setup patch)."""
    repo = task.metadata["repo"]
    name = repo.partition("@")[0]
    if name in PROJECTS and PROJECTS[name].ref == repo:
        return project_snapshot(name)
    return _directory_snapshot(repo, tuple(task.metadata.get("pythonpath", ())))


@functools.cache
def _directory_snapshot(root: str, pythonpath: tuple[str, ...]) -> Snapshot:
    return Snapshot.from_directory(root, pythonpath)
