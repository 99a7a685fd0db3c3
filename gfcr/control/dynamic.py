"""The decide loop: sample in rounds, stop decided prompts, drop groups without spread, refill.

Dynamic sampling (Yu et al. 2025, DAPO §3.2) keeps sampling until the batch holds
`num_groups` groups with some reward spread, so no zero-advantage group reaches the trainer.
It runs in rounds around any rollout function `run(plan) -> trajectories`, where a plan maps
task ids to sample counts (with the vectorized runner: `runner.run(expand_groups(specs, plan))`).
Each round composes Control's stages: a selector chooses fresh prompts, an allocation gives each
its samples (a budget, or `group_size`), and a sampler draws them — at once, or in waves with
early stopping (`gfcr.control.EarlyStopping`), which ends a prompt once its group is decided; the
groups early stopping dropped are refilled by the next round like any other dropped group.
Rewards are `Trajectory.reward`: the judge stage's (what the optimizer sees), so a label-free run
decides on its votes, never on the gold answer; the env's own reward where no judge stage ran. A
group's spread is that of its outcomes (`outcome_reward`: the length shaping, DAPO's overlong
penalty or a group length term, left out, as DAPO filters on accuracy), so length alone never makes
a group informative.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from gfcr.control.posterior import PromptHistory, is_informative
from gfcr.control.selection import LearningSelector, PromptSelector, UniformSelector
from gfcr.core import Trajectory
from gfcr.errors import ConfigError
from gfcr.filter.semantic import normalised_entropy
from gfcr.filter.signals import outcome_reward, response_length
from gfcr.generate.groups import group_by_task

SamplePlan = Mapping[str, int]  # task id -> samples to draw
RunFn = Callable[[SamplePlan], Sequence[Trajectory]]
Allocate = Callable[[Sequence[str]], dict[str, int]]  # a round's chosen prompts -> samples each


@dataclass
class Batch:
    """The groups a batch keeps, and what each stage did to fill it."""

    groups: dict[str, list[Trajectory]] = field(default_factory=dict)
    allocated: dict[str, int] = field(default_factory=dict)  # every chosen prompt -> samples given (0: none)
    dropped: int = 0  # groups sampled but not kept (stopped, zero-variance, or past the batch size)
    stopped: dict[str, int] = field(default_factory=dict)  # early-stopped prompt -> samples drawn
    saved: int = 0  # samples early stopping did not draw (allocated to stopped prompts, not drawn)
    refilled: int = 0  # groups kept from rounds after the first (dynamic sampling's refills)
    rounds: int = 0  # choose → allocate → draw rounds
    runs: int = 0  # calls of `run` (each wave of early stopping is one)
    samples: int = 0  # every sample drawn, dropped ones included


@dataclass
class Draw:
    """What one round drew: each prompt's samples, and the prompts stopped before their allocation."""

    groups: dict[str, list[Trajectory]]  # task id -> its samples (failed episodes left out)
    stopped: dict[str, int] = field(default_factory=dict)  # stopped prompt -> samples it did not draw
    runs: int = 0
    samples: int = 0

    @classmethod
    def once(cls, run: RunFn, plan: SamplePlan) -> Draw:
        """Every prompt's samples in one call of `run`."""
        if not plan:
            return cls({})
        trajectories = run(plan)
        return cls(group_by_task(trajectories), runs=1, samples=len(trajectories))


class Sampler(Protocol):
    """Draws a round's plan in its own way (`EarlyStopping`: in waves)."""

    def sample(self, run: RunFn, plan: SamplePlan, history: PromptHistory) -> Draw: ...


def observe(
    history: PromptHistory,
    groups: Mapping[str, Sequence[Trajectory]],
    selector: PromptSelector | None = None,
) -> None:
    """Record each group's rewards, response lengths and semantic entropy in `history`, and tell a
    selector that learns from outcomes (SEC's bandit) what the groups yielded."""
    for task_id, group in groups.items():
        lengths = [response_length(t) for t in group]
        history.update(task_id, [t.reward for t in group], lengths, normalised_entropy(group))
    if isinstance(selector, LearningSelector):
        selector.learn({task_id: [t.reward for t in group] for task_id, group in groups.items()})


@dataclass
class DynamicSampling:
    """Fill a batch with `num_groups` informative groups of `group_size` samples.

    Each round selects ceil(missing × `oversample`) fresh prompts with `selector`, runs them,
    keeps the informative groups (up to the batch size) and drops the rest; it stops after
    `max_rounds` (the batch may then be short). `filter_groups=False` keeps every group (plain
    GRPO sampling, for comparison). `collect` takes an allocation (samples per chosen prompt, e.g.
    a budget's) and a sampler (early stopping's waves) to compose with them.

    >>> from gfcr.workloads import BernoulliPrompts
    >>> env = BernoulliPrompts([0.0, 1.0, 0.5, 0.5, 0.5, 0.5], seed=0)
    >>> batch = DynamicSampling(num_groups=2, group_size=8).collect(env.run, env.task_ids, PromptHistory(),
    ...                                                          np.random.default_rng(0))
    >>> len(batch.groups), all(is_informative([t.reward for t in g]) for g in batch.groups.values())
    (2, True)
    """

    num_groups: int
    group_size: int = 8
    oversample: float = 1.5
    max_rounds: int = 8
    filter_groups: bool = True
    selector: PromptSelector = field(default_factory=UniformSelector)

    def __post_init__(self) -> None:
        if self.num_groups < 1 or self.group_size < 1 or self.max_rounds < 1:
            raise ConfigError(
                f"need num_groups >= 1, group_size >= 1, max_rounds >= 1; "
                f"got {self.num_groups}, {self.group_size}, {self.max_rounds}"
            )
        if self.filter_groups and self.group_size < 2:
            raise ConfigError(f"filtering groups by spread needs group_size >= 2, got {self.group_size}")
        if self.oversample < 1.0:
            raise ConfigError(f"oversample must be >= 1.0, got {self.oversample}")

    def collect(
        self,
        run: RunFn,
        task_ids: Sequence[str],
        history: PromptHistory,
        rng: np.random.Generator,
        *,
        allocate: Allocate | None = None,
        sampler: Sampler | None = None,
        samples_left: int | None = None,
    ) -> Batch:
        """Sample rounds until the batch is full, recording every group drawn in `history`.

        `allocate` gives each chosen prompt its samples (default: `group_size` each); `sampler`
        draws them (default: all at once), e.g. `EarlyStopping` in waves; a group it stopped is
        dropped, and refilled as any dropped group is. `samples_left` (a run's unspent sample
        budget) cuts each round to the groups of `group_size` that fit in it, the first round to
        one group at least, and starts no round once none fits: the batch may then be short.
        """
        batch = Batch()
        unused = list(task_ids)
        while len(batch.groups) < self.num_groups and batch.rounds < self.max_rounds and unused:
            wanted = math.ceil((self.num_groups - len(batch.groups)) * self.oversample)
            if samples_left is not None:
                fits = (samples_left - batch.samples) // self.group_size
                if fits < 1 and batch.rounds > 0:
                    break
                wanted = min(wanted, max(fits, 1))
            chosen = self.selector.select(unused, wanted, history, rng)
            unused = [t for t in unused if t not in set(chosen)]
            plan = allocate(chosen) if allocate is not None else dict.fromkeys(chosen, self.group_size)
            batch.allocated |= plan
            live = {task_id: n for task_id, n in plan.items() if n > 0}
            draw = sampler.sample(run, live, history) if sampler is not None else Draw.once(run, live)
            observe(history, draw.groups, self.selector)
            batch.runs += draw.runs
            batch.samples += draw.samples
            for task_id, group in draw.groups.items():
                if task_id in draw.stopped:
                    batch.stopped[task_id] = len(group)
                    batch.saved += draw.stopped[task_id]
                    batch.dropped += 1
                elif self._keeps(group) and len(batch.groups) < self.num_groups:
                    batch.groups[task_id] = group
                    batch.refilled += batch.rounds > 0
                else:
                    batch.dropped += 1
            batch.rounds += 1
        return batch

    def _keeps(self, group: Sequence[Trajectory]) -> bool:
        return not self.filter_groups or is_informative([outcome_reward(t) for t in group])
