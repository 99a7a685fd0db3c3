"""Task sources: an indexed, lazily built collection of tasks that an env draws from."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from functools import cached_property
from typing import Any

import numpy as np

from gfcr.core import Task
from gfcr.errors import UnknownNameError

# A difficulty named in words (SQL questions, SWE tasks) as the level a curriculum reads from
# `Task.metadata["level"]` (1 = easiest; `gfcr.control.curriculum.task_difficulty`).
LEVELS = {"easy": 1, "medium": 2, "hard": 3}


def with_level(metadata: dict[str, Any]) -> dict[str, Any]:
    """`metadata` with `"level"` added from its `"difficulty"` word (unchanged for another word).

    >>> with_level({"difficulty": "hard"})
    {'difficulty': 'hard', 'level': 3}
    >>> with_level({"difficulty": "unknown"})
    {'difficulty': 'unknown'}
    """
    level = LEVELS.get(str(metadata.get("difficulty")))
    return metadata if level is None else {**metadata, "level": level}


class TaskSource:
    """Tasks addressed by index (for seeds) or by id (for `options={"task_id": ...}`).

    Procedural sources pass a `build(index) -> Task` function and a size, so a million
    generated tasks cost nothing until drawn; fixed datasets pass the tasks themselves.
    `index_of(task_id)` returns the task's position, or None for an id the source does not
    hold (never raises): `get` then raises `UnknownNameError` with the nearest ids, which is
    what `reset(options={"task_id": ...})` must do. Without it, ids are found by building
    every task once.

    >>> source = TaskSource.from_tasks("demo", [Task("demo/0", "1+1?", "2")])
    >>> len(source), source.get("demo/0").gold, source.ids()
    (1, '2', ['demo/0'])
    """

    def __init__(
        self,
        name: str,
        size: int,
        build: Callable[[int], Task],
        index_of: Callable[[str], int | None] | None = None,
    ) -> None:
        self.name = name
        self._size = size
        self._build = build
        self._index_of = index_of

    @classmethod
    def from_tasks(cls, name: str, tasks: Sequence[Task]) -> TaskSource:
        """A source over a fixed list of tasks."""
        positions = {task.id: i for i, task in enumerate(tasks)}
        return cls(name, len(tasks), tasks.__getitem__, positions.get)

    @classmethod
    def concat(cls, name: str, sources: Sequence[TaskSource]) -> TaskSource:
        """Several sources one after another (ids must not collide)."""
        offsets = [0]
        for source in sources:
            offsets.append(offsets[-1] + len(source))

        # partials of module-level functions, not closures: an env holding the source must pickle
        build = functools.partial(_concat_build, tuple(sources), tuple(offsets))
        index_of = functools.partial(_concat_index_of, tuple(sources), tuple(offsets))
        return cls(name, offsets[-1], build, index_of)

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, index: int) -> Task:
        if not 0 <= index < self._size:
            raise IndexError(f"task index {index} out of range for {self.name!r} ({self._size} tasks)")
        return self._build(index)

    def index_of(self, task_id: str) -> int | None:
        """Position of `task_id`, or None if this source does not hold it."""
        if self._index_of is not None:
            return self._index_of(task_id)
        return self._id_positions.get(task_id)

    def get(self, task_id: str) -> Task:
        """The task with this id; `UnknownNameError` with the nearest ids if none."""
        index = self.index_of(task_id)
        if index is None:
            raise UnknownNameError("task id", task_id, self.ids(limit=10_000), hint=f"source: {self.name}")
        return self[index]

    def epochs(self, seed: int = 0) -> Iterator[str]:
        """Task ids without replacement: each epoch is every task once, in a fresh seeded order.

        `reset(seed=...)` draws a task uniformly, with replacement (two seeds may give one task);
        a benchmark that must see each task once walks this instead, with
        `env.reset(options={"task_id": next(order)})`.

        >>> source = TaskSource.from_tasks("demo", [Task(f"demo/{i}", "?", "") for i in range(3)])
        >>> order = source.epochs(seed=0)
        >>> first, second = [next(order) for _ in range(3)], [next(order) for _ in range(3)]
        >>> sorted(first) == sorted(second) == source.ids()
        True
        """
        rng = np.random.default_rng(seed)
        while True:
            for index in rng.permutation(self._size):
                yield self[int(index)].id

    def ids(self, limit: int | None = None) -> list[str]:
        """Every task id (the first `limit`), in index order (builds those tasks of a procedural source)."""
        return [self[i].id for i in range(self._size if limit is None else min(limit, self._size))]

    @cached_property
    def _id_positions(self) -> dict[str, int]:
        return {task_id: i for i, task_id in enumerate(self.ids())}


def _concat_build(sources: Sequence[TaskSource], offsets: Sequence[int], index: int) -> Task:
    for source, start, end in zip(sources, offsets, offsets[1:], strict=False):
        if index < end:
            return source[index - start]
    raise IndexError(index)


def _concat_index_of(sources: Sequence[TaskSource], offsets: Sequence[int], task_id: str) -> int | None:
    for source, start in zip(sources, offsets, strict=False):
        if (found := source.index_of(task_id)) is not None:
            return start + found
    return None
