"""Group sampling: K samples per prompt, as episode specs for the runner, and back into groups.

Specs are the runner's `EpisodeSpec`s, handled by their fields (`task_id`, `seed`, `sample`)
only: Generate does not import the runner (it sits below it). Sample j of a group gets
`sample=j` and seed `seed + j`, so every sample draws differently and the group is
reproducible.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from gfcr.core import Trajectory
from gfcr.errors import ConfigError


class SpecLike(Protocol):
    """What Generate needs of an episode spec: a dataclass with these fields."""

    task_id: str | None
    seed: int | None
    sample: int


S = TypeVar("S", bound=Any)
ROUND_SEED_STRIDE = 100_003  # a prime above any group size: rounds' sample seeds never overlap


def round_seed(seed: int, round_number: int) -> int:
    """The first sample seed of sampling round `round_number` (from 0) of a run seeded `seed`:
    sample j of a group in that round is seeded `round_seed(...) + j` (`expand_groups`), so no two
    rounds — steps, dynamic-sampling refills, TRL calls — draw the same samples.

    >>> round_seed(7, 0), round_seed(7, 2)
    (7, 200013)
    """
    return seed + ROUND_SEED_STRIDE * round_number


def expand_groups(specs: Sequence[S], counts: int | Mapping[str, int], *, seed: int = 0) -> list[S]:
    """K samples of each distinct task of `specs` (the first spec of a task is the template).

    `counts` is K for every task, or a sample count per task id (a task it leaves out, or gives
    0, is not run). Specs come out grouped by task, in the order tasks first appear.

    >>> @dataclasses.dataclass(frozen=True)
    ... class Spec:
    ...     task_id: str
    ...     seed: int | None = None
    ...     sample: int = 0
    >>> specs = expand_groups([Spec("a"), Spec("b")], {"a": 2, "b": 1}, seed=10)
    >>> [(s.task_id, s.sample, s.seed) for s in specs]
    [('a', 0, 10), ('a', 1, 11), ('b', 0, 10)]
    """
    templates: dict[str, S] = {}
    for spec in specs:
        if spec.task_id is None:
            raise ConfigError("group sampling needs specs with a task_id; got one with task_id=None")
        templates.setdefault(spec.task_id, spec)
    out = []
    for task_id, template in templates.items():
        k = counts if isinstance(counts, int) else counts.get(task_id, 0)
        if k < 0:
            raise ConfigError(f"sample count for {task_id!r} must be >= 0, got {k}")
        out += [dataclasses.replace(template, sample=j, seed=seed + j) for j in range(k)]
    return out


def group_by_task(trajectories: Iterable[Trajectory]) -> dict[str, list[Trajectory]]:
    """Trajectories grouped by task id, in first-seen order; infrastructure failures left out.

    >>> groups = group_by_task([Trajectory("e", "a", ""), Trajectory("e", "b", ""), Trajectory("e", "a", "")])
    >>> {task: len(group) for task, group in groups.items()}
    {'a': 2, 'b': 1}
    """
    groups: dict[str, list[Trajectory]] = {}
    for trajectory in trajectories:
        if trajectory.status == "ok":
            groups.setdefault(trajectory.task_id, []).append(trajectory)
    return groups
