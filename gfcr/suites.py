"""Named suites: fixed, reproducible sets of (env, task) pairs to benchmark agents on.

A suite is a list of entries; each entry names an env id, its `gymnasium.make` keyword
arguments and which of its tasks to use (all, or `num_tasks` spread evenly over the source,
so that every split and generator is represented). Families register their suites here as
they land; `list_suites()` shows the ones whose envs are installed.

>>> suite = make_suite("smoke")
>>> suite.name, len(suite) > 0
('smoke', True)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from gfcr.errors import UnknownNameError


@dataclass(frozen=True)
class SuiteEntry:
    """One env of a suite: `gymnasium.make(env_id, **kwargs)`, and which tasks of it to run."""

    env_id: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    num_tasks: int | None = None  # None: every task

    def make_env(self) -> gym.Env:
        return gym.make(self.env_id, **self.kwargs)

    def count(self) -> int:
        """How many tasks this entry runs (builds the env, not the tasks)."""
        total = len(self.make_env().unwrapped.tasks)  # type: ignore[attr-defined]  # a gfcr TextEnv
        return total if self.num_tasks is None else min(self.num_tasks, total)

    def task_ids(self) -> list[str]:
        """The chosen task ids: every task, or `num_tasks` evenly spaced over the source."""
        tasks = self.make_env().unwrapped.tasks  # type: ignore[attr-defined]
        if self.num_tasks is None or self.num_tasks >= len(tasks):
            return tasks.ids()
        step = len(tasks) / self.num_tasks
        return [tasks[int(i * step)].id for i in range(self.num_tasks)]


@dataclass(frozen=True)
class Suite:
    """A named, ordered collection of suite entries."""

    name: str
    description: str
    entries: tuple[SuiteEntry, ...]

    def tasks(self) -> Iterator[tuple[SuiteEntry, str]]:
        """Every (entry, task id) pair of the suite, in a fixed order."""
        for entry in self.entries:
            for task_id in entry.task_ids():
                yield entry, task_id

    def __len__(self) -> int:
        return sum(entry.count() for entry in self.entries)


_SUITES: dict[str, Callable[[], Suite]] = {}


def register_suite(name: str, factory: Callable[[], Suite]) -> None:
    """Add a suite (built lazily by `factory`) under `name`."""
    _SUITES[name] = factory


def list_suites() -> list[str]:
    """Names of the suites whose envs are all registered."""
    return sorted(name for name, factory in _SUITES.items() if _available(factory()))


def make_suite(name: str) -> Suite:
    """The suite called `name` (see `list_suites()`)."""
    if name not in _SUITES:
        raise UnknownNameError("suite", name, list_suites())
    return _SUITES[name]()


def _available(suite: Suite) -> bool:
    return all(entry.env_id in gym.registry for entry in suite.entries)


def _math() -> Suite:
    return Suite(
        "math",
        "Every MMATH (MATH-500 subset, AIME 2024/2025, CNMO) and CHAMP problem, and 5 samples "
        "of each reasoning-gym generator.",
        (
            SuiteEntry("gfcr/Math-v0", {"dataset": "mmath"}),
            SuiteEntry("gfcr/Math-v0", {"dataset": "champ"}),
            SuiteEntry("gfcr/Math-v0", {"dataset": "reasoning_gym"}, num_tasks=500),
        ),
    )


def _smoke() -> Suite:
    families = [
        SuiteEntry("gfcr/Math-v0", {"dataset": "mmath"}, num_tasks=4),
        SuiteEntry("gfcr/Math-v0", {"dataset": "champ"}, num_tasks=2),
        SuiteEntry("gfcr/Math-v0", {"dataset": "reasoning_gym", "size": 10}, num_tasks=4),
        SuiteEntry("gfcr/Math-v0", {"dataset": "mmath", "tools": ["calculator"]}, num_tasks=2),
        SuiteEntry("gfcr/Code-v0", {"dataset": "humaneval"}, num_tasks=3),
        SuiteEntry("gfcr/CodeInteractive-v0", {"dataset": "humaneval"}, num_tasks=2),
        SuiteEntry("gfcr/SQL-v0", {"dataset": "all"}, num_tasks=3),
        SuiteEntry("gfcr/SQL-v0", {"dataset": "chinook", "mode": "single_turn"}, num_tasks=1),
        SuiteEntry("gfcr/Dialogue-v0", {"domain": "airline"}, num_tasks=2),
        SuiteEntry("gfcr/Dialogue-v0", {"domain": "retail"}, num_tasks=2),
        SuiteEntry(
            "gfcr/Browser-v0", {"dataset": ["click-test", "enter-text", "login-user"], "num_seeds": 1}
        ),
        SuiteEntry("gfcr/Browser-v0", {"dataset": "apps"}, num_tasks=3),
    ]
    return Suite("smoke", "A few tasks of each env family that exists, for a quick check.", tuple(families))


def _sql() -> Suite:
    return Suite(
        "sql",
        "Every bundled SQL question (Chinook, tau2 retail and airline) on SQLite, multi-turn with tools, "
        "and once more single-turn.",
        (
            SuiteEntry("gfcr/SQL-v0", {"dataset": "all"}),
            SuiteEntry("gfcr/SQL-v0", {"dataset": "all", "mode": "single_turn"}),
        ),
    )


def _dialogue() -> Suite:
    return Suite(
        "dialogue",
        "Every tau2-bench airline (50) and retail (114) task, with the scripted user.",
        (
            SuiteEntry("gfcr/Dialogue-v0", {"domain": "airline"}),
            SuiteEntry("gfcr/Dialogue-v0", {"domain": "retail"}),
        ),
    )


def _code() -> Suite:
    return Suite(
        "code",
        "Every HumanEval problem, single-turn (Code-v0) and with a Python session and visible tests "
        "(CodeInteractive-v0).",
        (
            SuiteEntry("gfcr/Code-v0", {"dataset": "humaneval"}),
            SuiteEntry("gfcr/CodeInteractive-v0", {"dataset": "humaneval"}),
        ),
    )


def _browser() -> Suite:
    return Suite(
        "browser",
        "Every task of gfcr's web apps (shop, booking, mail) and 5 seeds of each of MiniWoB's 130 pages, "
        "in headless Chromium.",
        (
            SuiteEntry("gfcr/Browser-v0", {"dataset": "apps"}),
            SuiteEntry("gfcr/Browser-v0", {"dataset": "miniwob", "num_seeds": 5}),
        ),
    )


register_suite("math", _math)
register_suite("browser", _browser)
register_suite("code", _code)
register_suite("dialogue", _dialogue)
register_suite("sql", _sql)
register_suite("smoke", _smoke)
