"""Build SWE tasks from a bundled project: inject a bug, keep it if the project's own tests catch it.

For each project (SWE-smith's recipe, with mutations as the bug source): run the suite on the
pristine sdist; try mutations of its source modules in a seeded order that alternates between
operators; keep a mutant when 1 to `max_fail_to_pass` tests that passed now fail (the
fail-to-pass tests; every other passing test is pass-to-pass); validate the gold patch (the
mutation reversed) by `evaluate`, as a submission would be judged; write the issue from the
failing tests' names and messages only, never from the patch. At most one task per function.

Tasks are cached as JSONL under `cache_dir("swe")`, keyed by project, version, generator version,
seed and count: generated once per machine, then read in milliseconds.

Difficulty (a heuristic, recorded with each task): "easy" when the broken function's name appears
in the issue, "medium" when only its module's name does, "hard" otherwise; read as
`metadata["level"]` 1, 2, 3 (a difficulty curriculum's).
"""

from __future__ import annotations

import json
import logging
import os
import random
from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path

from gfcr.core import Task
from gfcr.envs.cache import cache_dir, file_lock
from gfcr.envs.swe.diffs import unified_diff
from gfcr.envs.swe.evaluation import evaluate, run_tests
from gfcr.envs.swe.mutation import Mutation, mutations
from gfcr.envs.swe.projects import PROJECTS, Project, project_snapshot
from gfcr.envs.tasks import with_level
from gfcr.errors import GfcrError
from gfcr.sandboxes import Sandbox
from gfcr.sandboxes.factory import shared_sandbox

logger = logging.getLogger(__name__)
GENERATOR_VERSION = 1
MAX_FAIL_TO_PASS = 20
MIN_GENERATED = 10  # tasks generated per project at least (small requests share them)
SHOWN_FAILURES = 5
Progress = Callable[[str], None]


def tasks_path(project: Project, num_tasks: int, seed: int) -> Path:
    """Where `num_tasks` tasks of `project` for `seed` are cached."""
    return (
        cache_dir("swe") / f"{project.name}-{project.version}-g{GENERATOR_VERSION}-s{seed}-n{num_tasks}.jsonl"
    )


def project_tasks(
    name: str,
    sandbox: Sandbox | str = "auto",
    num_tasks: int = 10,
    seed: int = 0,
    progress: Progress | None = None,
) -> list[Task]:
    """The first `num_tasks` tasks of bundled project `name`: from the cache, else generated (and cached).

    Generation is deterministic and in order, so the first k tasks of a larger set are the tasks
    of a smaller one: any cached set at least as large serves; at least `MIN_GENERATED` are made.
    """
    project = PROJECTS[name]
    path = _cached(project, num_tasks, seed)
    if path is None:
        target = max(num_tasks, MIN_GENERATED)
        path = tasks_path(project, target, seed)
        path.parent.mkdir(parents=True, exist_ok=True)
        with file_lock(path.with_name(f".{path.name}.lock")):
            if not path.exists():  # another process may have built it while we waited
                logger.info("generating %d SWE tasks from %s (once; cached in %s)", target, project.ref, path)
                runner = shared_sandbox(sandbox) if isinstance(sandbox, str) else sandbox
                tasks = generate(project, runner, target, seed, progress)
                temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
                temporary.write_text("".join(json.dumps(asdict(task)) + "\n" for task in tasks))
                os.replace(temporary, path)
    lines = path.read_text().splitlines()[:num_tasks]
    records = [json.loads(line) for line in lines]  # cached sets hold no level: read from the difficulty
    return [Task(**{**record, "metadata": with_level(record["metadata"])}) for record in records]


def _cached(project: Project, num_tasks: int, seed: int) -> Path | None:
    """The smallest cached task set of `project` and `seed` with at least `num_tasks` tasks."""
    prefix = f"{project.name}-{project.version}-g{GENERATOR_VERSION}-s{seed}-n"
    sizes = sorted(int(p.stem.removeprefix(prefix)) for p in cache_dir("swe").glob(f"{prefix}*.jsonl"))
    return next((tasks_path(project, n, seed) for n in sizes if n >= num_tasks), None)


def generate(
    project: Project, sandbox: Sandbox, num_tasks: int, seed: int = 0, progress: Progress | None = None
) -> list[Task]:
    """Generate up to `num_tasks` validated tasks from `project` (fewer if its mutants run out)."""
    snapshot = project_snapshot(project.name)
    files = {path: data.decode("utf-8") for path, data in snapshot.files().items() if path in project.sources}
    if missing := set(project.sources) - set(files):
        raise GfcrError(f"{project.ref}: source files {sorted(missing)} are not in its sdist")
    baseline = run_tests(sandbox, snapshot, project.tests)
    passing = {test for test, outcome in baseline.get("outcomes", {}).items() if outcome == "passed"}
    if not passing:
        raise GfcrError(f"{project.ref}: no test of its suite passes here ({baseline.get('summary', '')})")
    tasks: list[Task] = []
    used: set[tuple[str, str]] = set()
    candidates = _ordered(files, seed)
    workers = max(2, min(4, os.cpu_count() or 1))
    with ThreadPoolExecutor(workers) as pool:
        for start in range(0, len(candidates), workers):
            batch = [(p, m) for p, m in candidates[start : start + workers] if (p, m.function) not in used]
            found = pool.map(lambda c: _try(project, sandbox, files, passing, *c), batch)
            for (path, mutation), task_data in zip(batch, found, strict=True):
                if task_data is None or (path, mutation.function) in used or len(tasks) >= num_tasks:
                    continue
                used.add((path, mutation.function))
                tasks.append(Task(id=f"swe/{project.name}-{len(tasks)}", **task_data))
                if progress:
                    progress(
                        f"{project.ref}: {len(tasks)}/{num_tasks} tasks ({start + len(batch)} mutants tried)"
                    )
            if len(tasks) >= num_tasks:
                break
    return tasks


def _ordered(files: dict[str, str], seed: int) -> list[tuple[str, Mutation]]:
    """Every mutation of `files`, shuffled, then interleaved by operator (each kind gets its turn)."""
    by_operator: dict[str, list[tuple[str, Mutation]]] = defaultdict(list)
    for path, source in sorted(files.items()):
        for mutation in mutations(source):
            by_operator[mutation.operator].append((path, mutation))
    rng = random.Random(seed)
    queues = [by_operator[name] for name in sorted(by_operator)]
    for queue in queues:
        rng.shuffle(queue)
    ordered = []
    while any(queues):
        ordered += [queue.pop() for queue in queues if queue]
    return ordered


def _try(
    project: Project,
    sandbox: Sandbox,
    files: dict[str, str],
    passing: set[str],
    path: str,
    mutation: Mutation,
) -> dict | None:
    """The task fields of one mutant, or None if the suite does not catch it the right way."""
    original = files[path]
    buggy = mutation.apply(original)
    setup_patch, gold = unified_diff(path, original, buggy), unified_diff(path, buggy, original)
    snapshot = project_snapshot(project.name)
    answer = run_tests(sandbox, snapshot.patched(setup_patch), project.tests)
    outcomes = answer.get("outcomes", {})
    failing = sorted(test for test in passing if outcomes.get(test) != "passed")
    if not answer.get("ok") or not 1 <= len(failing) <= MAX_FAIL_TO_PASS:
        return None
    pass_to_pass = sorted(passing - set(failing))
    check = evaluate(sandbox, snapshot, gold, failing, pass_to_pass, setup_patch=setup_patch)
    if not check.resolved:
        logger.warning(
            "%s: the gold patch of a mutant at %s:%d does not validate; skipped",
            project.ref,
            path,
            mutation.line,
        )
        return None
    messages = {test: answer.get("messages", {}).get(test, "") for test in failing}
    issue = issue_text(project, failing, messages)
    return {
        "prompt": issue,
        "gold": gold,
        "source": f"swe/{project.name}",
        "metadata": {
            "repo": project.ref,
            "setup_patch": setup_patch,
            "fail_to_pass": failing,
            "pass_to_pass": pass_to_pass,
            "difficulty": difficulty(mutation, path, issue),
            "bug": {
                "file": path,
                "line": mutation.line,
                "operator": mutation.operator,
                "function": mutation.function,
            },
        },
    }


def issue_text(project: Project, failing: Sequence[str], messages: dict[str, str]) -> str:
    """What a user would report: which tests fail and how — the symptom, not its cause.

    >>> test = "test_inflection.py::test_a"
    >>> print(issue_text(PROJECTS["inflection"], [test], {test: "assert 1 == 2"}))
    inflection 0.5.1: 1 test of its own suite fails
    <BLANKLINE>
    After a recent change, this test fails (it passed before):
    <BLANKLINE>
    - test_inflection.py::test_a
        assert 1 == 2
    <BLANKLINE>
    The tests are right: find the cause in the library's code and fix it there, without changing any test.
    Every other test of the suite must keep passing.
    """
    plural = len(failing) > 1
    lines = [
        f"{project.name} {project.version}: {len(failing)} test{'s' if plural else ''} of its own suite "
        + ("fail" if plural else "fails"),
        "",
        "After a recent change, "
        + ("these tests fail (they passed before):" if plural else "this test fails (it passed before):"),
        "",
    ]
    for test in failing[:SHOWN_FAILURES]:
        lines.append(f"- {test}")
        lines += [f"    {line}" for line in messages.get(test, "").splitlines()[:6] if line.strip()]
    if len(failing) > SHOWN_FAILURES:
        lines.append(f"- … and {len(failing) - SHOWN_FAILURES} more")
    lines += [
        "",
        "The tests are right: find the cause in the library's code and fix it there, without changing any "
        "test.",
        "Every other test of the suite must keep passing.",
    ]
    return "\n".join(lines)


def difficulty(mutation: Mutation, path: str, issue: str) -> str:
    """ "easy" / "medium" / "hard": how directly the issue points at the broken code (see module doc)."""
    function = mutation.function.rsplit(".", 1)[-1]
    module = Path(path).stem if Path(path).stem != "__init__" else Path(path).parent.name
    if function and function in issue:
        return "easy"
    return "medium" if module in issue else "hard"
