"""Named suites: fixed, reproducible sets of (env, task) pairs to benchmark agents on.

A suite is a list of entries; each entry names an env id, its `gymnasium.make` keyword
arguments, which of its tasks to use (all, the ids listed in `tasks`, or `num_tasks` spread
evenly over the source, so that every split and generator is represented) and, optionally, how
many samples of each (`k`, or explicit `seeds`). This module holds the suite types, the registry
of named suites and the suite-file loader; the suites themselves come from
`register_suite(name, factory)` and installed packages' `gfcr.suites` entry points, gfcr's own
included: its built-in suites live with its envs (`gfcr.envs.suites`) and are declared in its
pyproject.toml like any plugin's. A suite file (TOML, see `load_suite` and docs/suites.md) is
benched by its path. `list_suites()` shows the named ones whose envs are installed.

A suite is versioned (`version`, bumped by its author when its work changes) and hashed:
`Suite.fingerprint()` is a sha256 over what the suite runs — each entry's env id and effective
keywords, its samples, its chosen task ids and their content, and the versions of the env and
verifier code behind it — so two reports with the same fingerprint provably ran the same work.

>>> "smoke" in list_suites()  # gfcr's own, from its envs layer through the entry points
True
"""

from __future__ import annotations

import difflib
import hashlib
import json
import logging
import tomllib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache, cached_property
from importlib.metadata import PackageNotFoundError, entry_points, packages_distributions
from importlib.metadata import version as distribution_version
from pathlib import Path
from typing import Any

import gymnasium as gym

from gfcr.core.config import from_dict, setting
from gfcr.core.task import Task
from gfcr.errors import ConfigError, UnknownNameError
from gfcr.registry import import_modules, list_envs
from gfcr.version import __version__

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SuiteEntry:
    """One env of a suite: `gymnasium.make(env_id, **kwargs)`, which tasks of it, how many samples.

    >>> entry = SuiteEntry("gfcr/Math-v0", {"split": "AIME2024"}, num_tasks=3)
    >>> entry.task_ids()
    ['mmath/AIME2024/0', 'mmath/AIME2024/10', 'mmath/AIME2024/20']
    """

    env_id: str = setting(help="Registered env id, e.g. gfcr/Math-v0 (see `gfcr list`).")
    kwargs: dict[str, Any] = setting(default_factory=dict, help="Keyword arguments of gymnasium.make.")
    num_tasks: int | None = setting(None, "At most this many tasks, evenly spaced (default: every task).")
    tasks: tuple[str, ...] | None = setting(None, "These task ids, in this order (instead of num_tasks).")
    k: int | None = setting(None, "Samples per task, seeds seed + 0 … k - 1 (default: the bench's -k).")
    seeds: tuple[int, ...] | None = setting(None, "One sample per seed listed (instead of k).")

    def __post_init__(self) -> None:
        if not isinstance(self.env_id, str) or not self.env_id:
            raise ConfigError(f"env_id must be an env id such as 'gfcr/Math-v0', got {self.env_id!r}")
        if not isinstance(self.kwargs, dict):
            raise ConfigError(f"kwargs of {self.env_id} must be a table, got {self.kwargs!r}")
        for name in ("num_tasks", "k"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise ConfigError(f"{name} of {self.env_id} must be an integer >= 1, got {value!r}")
        if self.tasks is not None and self.num_tasks is not None:
            raise ConfigError(f"{self.env_id}: give tasks (ids) or num_tasks (a count), not both")
        if self.seeds is not None and self.k is not None:
            raise ConfigError(f"{self.env_id}: give k (a count) or seeds (a list), not both")
        for name in ("tasks", "seeds"):
            value = getattr(self, name)
            kind = str if name == "tasks" else int
            if value is not None and (
                isinstance(value, str) or not value or not all(isinstance(v, kind) for v in value)
            ):
                what = "task ids (strings)" if name == "tasks" else "integer seeds"
                raise ConfigError(
                    f"{name} of {self.env_id} must be a non-empty list of {what}, got {value!r}"
                )
        if self.tasks is not None:
            object.__setattr__(self, "tasks", tuple(self.tasks))
        if self.seeds is not None:
            object.__setattr__(self, "seeds", tuple(self.seeds))

    def make_env(self) -> gym.Env:
        return gym.make(self.env_id, **self.kwargs)

    def count(self) -> int:
        """How many tasks this entry runs (builds the env, not the tasks)."""
        if self.tasks is not None:
            return len(self.tasks)
        total = len(self.make_env().unwrapped.tasks)  # type: ignore[attr-defined]  # a gfcr TextEnv
        return total if self.num_tasks is None else min(self.num_tasks, total)

    def task_ids(self) -> list[str]:
        """The chosen task ids: those listed, every task, or `num_tasks` evenly spaced over the source."""
        return [task.id for task in self._chosen]

    @cached_property  # a frozen dataclass: built once (a procedural source builds each task), kept
    def _chosen(self) -> tuple[Task, ...]:
        env = self.make_env()
        try:
            tasks = env.unwrapped.tasks  # type: ignore[attr-defined]  # a gfcr TextEnv
            if self.tasks is not None:
                for task_id in self.tasks:
                    if tasks.index_of(task_id) is None:
                        raise UnknownNameError(
                            "task id",
                            task_id,
                            tasks.ids(limit=10_000),
                            hint=f"in the suite entry for {self.env_id}",
                        )
                return tuple(tasks.get(task_id) for task_id in self.tasks)
            if self.num_tasks is None or self.num_tasks >= len(tasks):
                return tuple(tasks[i] for i in range(len(tasks)))
            step = len(tasks) / self.num_tasks
            return tuple(tasks[int(i * step)] for i in range(self.num_tasks))
        finally:
            env.close()

    def sample_seeds(self, k: int = 1, seed: int = 0) -> list[int]:
        """The seed of each sample of a task: `seeds`, or `seed + j` for j < `k` (this entry's k first).

        >>> SuiteEntry("gfcr/Math-v0", k=2).sample_seeds(k=4, seed=10)
        [10, 11]
        >>> SuiteEntry("gfcr/Math-v0").sample_seeds(3), SuiteEntry("gfcr/Math-v0", seeds=[7]).sample_seeds(3)
        ([0, 1, 2], [7])
        """
        if self.seeds is not None:
            return list(self.seeds)
        return [seed + j for j in range(self.k or k)]

    def manifest(self) -> dict[str, Any]:
        """What this entry runs, as JSON data: the env with its effective keywords and code versions,
        the samples, and each chosen task's id with a digest of its prompt and gold data."""
        spec = gym.spec(self.env_id)
        env = self.make_env()
        try:
            verifier = getattr(env.unwrapped, "verifier", None)
            code = {"env": _code_version(type(env.unwrapped))}
            if verifier is not None:
                code["verifier"] = _code_version(type(verifier)) | _declared_version(verifier)
        finally:
            env.close()
        return {
            "env_id": self.env_id,
            "env_version": spec.version,
            "kwargs": {**spec.kwargs, **self.kwargs},
            "max_episode_steps": spec.max_episode_steps,
            "code": code,
            "samples": {"k": self.k, "seeds": list(self.seeds) if self.seeds is not None else None},
            "tasks": [[task.id, _digest([task.id, task.prompt, task.gold])] for task in self._chosen],
        }


@dataclass(frozen=True)
class Suite:
    """A named, versioned, ordered collection of suite entries.

    >>> a = Suite("a", "", (SuiteEntry("gfcr/Math-v0", {"split": "AIME2024"}, num_tasks=2),))
    >>> b = Suite("b", "renamed, same work", a.entries, version="2")
    >>> c = Suite("c", "", (SuiteEntry("gfcr/Math-v0", {"split": "AIME2024"}, num_tasks=3),))
    >>> a.fingerprint() == b.fingerprint(), a.fingerprint() == c.fingerprint(), len(a.fingerprint())
    (True, False, 64)
    """

    name: str
    description: str
    entries: tuple[SuiteEntry, ...]
    version: str = "1"

    def tasks(self) -> Iterator[tuple[SuiteEntry, str]]:
        """Every (entry, task id) pair of the suite, in a fixed order."""
        for entry in self.entries:
            for task_id in entry.task_ids():
                yield entry, task_id

    def __len__(self) -> int:
        return sum(entry.count() for entry in self.entries)

    def manifest(self) -> list[dict[str, Any]]:
        """What the suite runs, entry by entry (see `SuiteEntry.manifest`); the fingerprint's input."""
        return self._manifest

    def fingerprint(self) -> str:
        """A sha256 hex digest of the suite's work: entries' env ids, effective keywords, samples,
        chosen task ids and task contents, env and verifier code versions (not name or description).

        Builds each entry's env and its chosen tasks once (cached on the suite).
        """
        return _digest(self._manifest, length=64)

    @cached_property  # a frozen dataclass: computed once, stored in the instance's __dict__
    def _manifest(self) -> list[dict[str, Any]]:
        return [entry.manifest() for entry in self.entries]


def _digest(data: Any, length: int = 16) -> str:
    """sha256 of canonical JSON (keys sorted; objects JSON cannot hold by their repr)."""
    text = json.dumps(data, sort_keys=True, default=repr, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def _code_version(cls: type) -> dict[str, Any]:
    """Which code a class is: its import path and the version of the distribution that ships it."""
    top = cls.__module__.split(".")[0]
    return {"class": f"{cls.__module__}:{cls.__qualname__}", "package_version": _package_version(top)}


def _declared_version(obj: Any) -> dict[str, Any]:
    """A `version` the object declares itself (a plugin verifier may), if it is a string."""
    declared = getattr(obj, "version", None)
    return {"version": declared} if isinstance(declared, str) else {}


@cache
def _package_version(top_module: str) -> str | None:
    if top_module == "gfcr":
        return __version__
    for distribution in packages_distributions().get(top_module, []):
        try:
            return distribution_version(distribution)
        except PackageNotFoundError:
            continue
    return None  # a module outside any installed distribution (a script, a test's plugin)


_SUITES: dict[str, Callable[[], Suite]] = {}


def register_suite(name: str, factory: Callable[[], Suite]) -> None:
    """Add a suite (built lazily by `factory`) under `name`.

    >>> register_suite("doc-aime", lambda: Suite("doc-aime", "Three AIME 2024 problems.",
    ...                (SuiteEntry("gfcr/Math-v0", {"split": "AIME2024"}, num_tasks=3),)))
    >>> len(make_suite("doc-aime"))
    3
    """
    _SUITES[name] = factory


def list_suites() -> list[str]:
    """Names of the suites whose envs are all registered (built-in, registered and plugins')."""
    _load_plugin_suites()
    names = []
    for name, factory in sorted(_SUITES.items()):
        try:
            if _available(factory()):
                names.append(name)
        except Exception as e:  # one broken plugin suite must not hide the others
            logger.warning("skipping suite %s: %s", name, e)
    return names


def make_suite(name: str) -> Suite:
    """The suite called `name` (see `list_suites()`)."""
    _load_plugin_suites()
    if name not in _SUITES:
        known = list_suites()
        hint = "or give the path of a suite file (.toml)"
        if not known:  # even gfcr's own are missing: its installed metadata predates them
            hint += "; no named suite is installed (gfcr's own are entry points: reinstall gfcr)"
        raise UnknownNameError("suite", name, known, hint=hint)
    return _SUITES[name]()


def _available(suite: Suite) -> bool:
    return all(entry.env_id in gym.registry for entry in suite.entries)


_plugins_loaded = False


def _load_plugin_suites() -> None:
    """Register the suites of installed plugins' `gfcr.suites` entry points (once, lazily).

    An entry point's name is the suite name; its value names a `Suite`, or a function returning one
    (such as `lambda: load_suite(path)`); it is loaded when the suite is first made.
    """
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for plugin in entry_points(group="gfcr.suites"):
        if plugin.name not in _SUITES:  # a suite registered in code wins over a plugin of the same name
            _SUITES[plugin.name] = _plugin_factory(plugin)


def _plugin_factory(plugin: Any) -> Callable[[], Suite]:
    def factory() -> Suite:
        target = plugin.load()
        suite = target() if callable(target) and not isinstance(target, Suite) else target
        if not isinstance(suite, Suite):
            raise ConfigError(
                f"suite plugin {plugin.name} = {plugin.value} gave {type(suite).__name__}; "
                "it must name a gfcr.Suite or a function that returns one"
            )
        return suite

    return factory


SUITE_KEYS = {
    "name": "The suite's name (default: the file's stem).",
    "description": "One line on what it measures.",
    "version": "The suite's version: bump it when its work changes.",
    "entries": "The envs: an [[entries]] table each (env_id, kwargs, num_tasks or tasks, k or seeds).",
    "imports": 'Modules to import first, those that register the envs, e.g. ["my_envs"].',
}


def load_suite(path: str | Path) -> Suite:
    """The suite a TOML file describes (format in docs/suites.md); errors name the file and the key.

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "aime.toml"
    >>> _ = path.write_text('''
    ... name = "aime-3"
    ... version = "1"
    ... [[entries]]
    ... env_id = "gfcr/Math-v0"
    ... kwargs = { split = "AIME2024" }
    ... num_tasks = 3
    ... k = 2
    ... ''')
    >>> suite = load_suite(path)
    >>> suite.name, len(suite), suite.entries[0].k
    ('aime-3', 3, 2)
    """
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as e:
        raise ConfigError(f"suite file {path} does not exist") from e
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"suite file {path} is not valid TOML: {e}") from e
    return suite_from_dict(data, default_name=path.stem, where=str(path))


def suite_from_dict(data: Mapping[str, Any], *, default_name: str = "suite", where: str = "suite") -> Suite:
    """A suite from a parsed suite file (`load_suite`); every env id must be registered.

    >>> suite_from_dict({"entries": [{"env_id": "gfcr/Math-v0", "num_task": 3}]})
    Traceback (most recent call last):
    ...
    gfcr.errors.ConfigError: suite: [entries #1]: unknown key 'num_task'; did you mean 'num_tasks'? Known: ...
    """
    for key in data:
        if key not in SUITE_KEYS:
            raise ConfigError(f"{where}: {_unknown(key, SUITE_KEYS)}")
    imports = data.get("imports", [])
    if not isinstance(imports, list) or not all(isinstance(m, str) for m in imports):
        raise ConfigError(f'{where}: imports must be a list of module names (["my_envs"]), got {imports!r}')
    import_modules(imports)
    tables = data.get("entries")
    if not isinstance(tables, list) or not tables or not all(isinstance(t, Mapping) for t in tables):
        raise ConfigError(
            f"{where}: a suite needs one [[entries]] table per env, e.g.\n"
            '[[entries]]\nenv_id = "gfcr/Math-v0"\nkwargs = { split = "AIME2024" }\nnum_tasks = 10'
        )
    entries = []
    for number, table in enumerate(tables, 1):
        try:
            entry = from_dict(SuiteEntry, table, f"entries #{number}")
        except ConfigError as e:
            raise ConfigError(f"{where}: {e}") from e
        if entry.env_id not in gym.registry:
            raise UnknownNameError(
                "env id", entry.env_id, list_envs(), hint=f"in {where} [entries #{number}]; see `gfcr list`"
            )
        entries.append(entry)
    name, description = data.get("name", default_name), data.get("description", "")
    suite_version = data.get("version", "1")
    fields = (name, description, suite_version)
    if not all(isinstance(v, str | int) and not isinstance(v, bool) for v in fields):
        raise ConfigError(f"{where}: name, description and version must be strings, got {fields!r}")
    return Suite(str(name), str(description), tuple(entries), version=str(suite_version))


def _unknown(key: str, known: Mapping[str, Any]) -> str:
    close = difflib.get_close_matches(key, known, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown key {key!r}{hint} Known: {', '.join(sorted(known))}"
