"""DAPO's dynamic sampling: over-sample prompts, drop groups whose rewards are all equal, refill.

Dynamic sampling (Yu et al. 2025, DAPO §3.2) keeps sampling until the batch holds
`num_groups` groups with some reward spread, so no zero-advantage group reaches the trainer.
It runs in rounds around any rollout function `run(plan) -> trajectories`, where a plan maps
task ids to sample counts (with the vectorized runner: `runner.run(expand_groups(specs, plan))`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from gfcr.control.posterior import PromptHistory, is_informative
from gfcr.control.selection import PromptSelector, UniformSelector
from gfcr.core import Trajectory
from gfcr.errors import ConfigError
from gfcr.filter.signals import response_length
from gfcr.generate.groups import group_by_task

SamplePlan = Mapping[str, int]  # task id -> samples to draw
RunFn = Callable[[SamplePlan], Sequence[Trajectory]]


@dataclass
class Batch:
    """The groups a batch keeps, and what it cost to fill."""

    groups: dict[str, list[Trajectory]] = field(default_factory=dict)
    dropped: int = 0  # groups sampled but not kept (zero-variance, or past the batch size)
    stopped: dict[str, int] = field(default_factory=dict)  # early-stopped prompt -> samples drawn
    rounds: int = 0
    samples: int = 0  # every sample drawn, dropped ones included


def observe(history: PromptHistory, groups: Mapping[str, Sequence[Trajectory]]) -> None:
    """Record each group's rewards and response lengths in `history`."""
    for task_id, group in groups.items():
        history.update(task_id, [t.total_reward for t in group], [response_length(t) for t in group])


@dataclass
class DynamicSampling:
    """Fill a batch with `num_groups` informative groups of `group_size` samples.

    Each round selects ceil(missing × `oversample`) fresh prompts with `selector`, runs them,
    keeps the informative groups (up to the batch size) and drops the rest; it stops after
    `max_rounds` (the batch may then be short). `filter_groups=False` keeps every group (plain
    GRPO sampling, for comparison).

    >>> from gfcr.workloads import BernoulliPrompts
    >>> env = BernoulliPrompts([0.0, 1.0, 0.5, 0.5, 0.5, 0.5], seed=0)
    >>> batch = DynamicSampling(num_groups=2, group_size=8).collect(env.run, env.task_ids, PromptHistory(),
    ...                                                          np.random.default_rng(0))
    >>> len(batch.groups), all(is_informative([t.total_reward for t in g]) for g in batch.groups.values())
    (2, True)
    """

    num_groups: int
    group_size: int = 8
    oversample: float = 1.5
    max_rounds: int = 8
    filter_groups: bool = True
    selector: PromptSelector = field(default_factory=UniformSelector)

    def __post_init__(self) -> None:
        if self.num_groups < 1 or self.group_size < 2 or self.max_rounds < 1:
            raise ConfigError(
                f"need num_groups >= 1, group_size >= 2, max_rounds >= 1; "
                f"got {self.num_groups}, {self.group_size}, {self.max_rounds}"
            )
        if self.oversample < 1.0:
            raise ConfigError(f"oversample must be >= 1.0, got {self.oversample}")

    def collect(
        self, run: RunFn, task_ids: Sequence[str], history: PromptHistory, rng: np.random.Generator
    ) -> Batch:
        batch = Batch()
        unused = list(task_ids)
        while len(batch.groups) < self.num_groups and batch.rounds < self.max_rounds and unused:
            missing = self.num_groups - len(batch.groups)
            chosen = self.selector.select(unused, math.ceil(missing * self.oversample), history, rng)
            unused = [t for t in unused if t not in set(chosen)]
            trajectories = run({task_id: self.group_size for task_id in chosen})
            groups = group_by_task(trajectories)
            observe(history, groups)
            batch.rounds += 1
            batch.samples += len(trajectories)
            for task_id, group in groups.items():
                keep = not self.filter_groups or is_informative([t.total_reward for t in group])
                if keep and len(batch.groups) < self.num_groups:
                    batch.groups[task_id] = group
                else:
                    batch.dropped += 1
        return batch
