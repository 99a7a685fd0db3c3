"""One RL step's rollouts: Generate and Control, Filter's reward shaping, and their metrics.

`Rollouts.collect` runs the step's episodes in one of three ways:

- one run: Control (`RolloutController`) picks `prompts_per_step` prompts, `group_size` samples
  each, and every group reaches the update;
- DAPO's dynamic sampling (Yu et al. 2025, §3.2; `[dynamic_sampling] filter_groups`):
  `gfcr.control.DynamicSampling` samples in rounds, with Control's selector, posteriors and RNG,
  drops the groups whose rewards are all equal and refills until `prompts_per_step` groups with a
  reward spread are found (or `max_rounds` pass);
- early stopping (`[early_stopping] enabled`): Control picks the prompts as in one run, and
  `gfcr.control.EarlyStopping` samples their groups in waves, stopping a prompt once its samples
  agree and its posterior says the rest would too (AR3PO's adaptive rollout, Zhang et al. 2025);
  stopped groups are dropped, the samples they did not draw are saved.

Every way it counts what was generated (`samples_total`, `tokens_total`: dropped groups
included), so that runs can be compared at an equal sampling budget. `OverlongPenalty` is DAPO's
soft overlong punishment (eq. 13), added to each episode's task reward before the advantages.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gfcr.agents import Runner
from gfcr.control import DynamicSampling, EarlyStopping, RolloutController, RunFn
from gfcr.core import EpisodeSpec, Policy, ReplaySink, Trajectory
from gfcr.core.admission import RESOURCES, add_waits
from gfcr.filter import overlong_penalty
from gfcr.filter.indicators import batch_indicators, zero_variance
from gfcr.filter.signals import response_length
from gfcr.generate.groups import expand_groups, group_by_task
from gfcr.trainers.config import DiagnoseConfig, TrainConfig

logger = logging.getLogger(__name__)
RewardFn = Callable[[Trajectory], float]


def task_reward(trajectory: Trajectory) -> float:
    """The env's reward of an episode, unshaped."""
    return trajectory.total_reward


@dataclass(frozen=True)
class OverlongPenalty:
    """DAPO's soft overlong punishment (Yu et al. 2025, §3.4, eq. 13) of an episode, on the policy's
    own tokens (`response_length`: every turn's sampled tokens; prompt and observations excluded).

    >>> from gfcr.core import TokenData
    >>> t = Trajectory("e", "t", "?", tokens=TokenData([1], [2] * 9, [1] * 9, [0.0] * 9))
    >>> shaping = OverlongPenalty(max_length=10, cache_length=4)
    >>> shaping.penalty(t), shaping.reward(t)  # 9 tokens: 3 into the 4-token ramp
    (-0.75, -0.75)
    """

    max_length: int
    cache_length: int

    def penalty(self, trajectory: Trajectory) -> float:
        return overlong_penalty(response_length(trajectory), self.max_length, self.cache_length)

    def reward(self, trajectory: Trajectory) -> float:
        """The task reward plus the penalty: what the advantages are computed from."""
        return trajectory.total_reward + self.penalty(trajectory)


@dataclass
class StepRollout:
    """What one RL step sampled, and the groups that reach the update."""

    groups: dict[str, list[Trajectory]]  # task id -> the group trained on
    generated: list[Trajectory] = field(default_factory=list)  # every episode run, dropped ones included
    rounds: int = 1  # sampling rounds (runs of the runner)
    dropped: int = 0  # groups sampled but not trained on
    stopped: int = 0  # groups stopped early (early stopping), among the dropped ones


class Rollouts:
    """Generate + Control of the RL steps, with counters of everything generated (checkpointed)."""

    def __init__(
        self,
        policy: Policy,
        config: TrainConfig,
        controller: RolloutController,
        replay: ReplaySink | None,
        tasks: Sequence[EpisodeSpec],
    ) -> None:
        rollout, dynamic, early = config.rollout, config.dynamic_sampling, config.early_stopping
        self.controller, self.tasks, self.seed = controller, list(tasks), config.seed
        self.task_ids = list(dict.fromkeys(spec.task_id for spec in self.tasks if spec.task_id is not None))
        self.sampling = (
            DynamicSampling(
                num_groups=rollout.prompts_per_step,
                group_size=rollout.group_size,
                oversample=dynamic.oversample,
                max_rounds=dynamic.max_rounds,
                selector=controller.selector,
            )
            if dynamic.filter_groups
            else None
        )
        self.stopping = (
            EarlyStopping(rollout.group_size, early.wave, early.confidence) if early.enabled else None
        )
        # Dynamic sampling and early stopping plan every round themselves, so their runner runs the
        # episodes as given (the default Control hook); the controller's selector, posteriors and
        # RNG still decide.
        hook = controller if self.sampling is None and self.stopping is None else None
        self.runner = Runner(policy, rollout.runner, controller=hook, replay=replay)
        self.samples_total = 0  # episodes generated by every RL step so far
        self.tokens_total = 0  # their policy tokens
        self.rounds_total = 0  # runs of the runner (dynamic sampling's seeds)

    def collect(self) -> StepRollout:
        """Run one step's episodes; see the module's docstring."""
        if self.sampling is not None:
            step = self._dynamic(self.sampling)
        elif self.stopping is not None:
            step = self._early_stopped(self.stopping)
        else:
            trajectories = self._run(self.tasks)
            self.controller.observe(trajectories)  # posteriors for the next step's selection
            step = StepRollout(group_by_task(trajectories), trajectories)
        self.samples_total += len(step.generated)
        self.tokens_total += sum(response_length(t) for t in step.generated if t.tokens is not None)
        return step

    def _planned_runs(self, generated: list[Trajectory]) -> RunFn:
        """`run(plan)` for Control's samplers: each round's episodes, also kept in `generated`."""

        def run(plan: Mapping[str, int]) -> list[Trajectory]:
            seed = self.seed + 100_003 * self.rounds_total  # fresh sample seeds every round
            trajectories = self._run(expand_groups(self.tasks, plan, seed=seed))
            generated.extend(trajectories)
            return trajectories

        return run

    def _dynamic(self, sampling: DynamicSampling) -> StepRollout:
        generated: list[Trajectory] = []
        # `collect` records every group in the controller's history itself
        batch = sampling.collect(
            self._planned_runs(generated), self.task_ids, self.controller.history, self.controller.rng
        )
        if len(batch.groups) < sampling.num_groups:
            logger.warning(
                "dynamic sampling found %d of %d groups with a reward spread in %d rounds; the batch is "
                "short (raise [dynamic_sampling] max_rounds or [env] num_tasks)",
                len(batch.groups),
                sampling.num_groups,
                batch.rounds,
            )
        return StepRollout(batch.groups, generated, batch.rounds, batch.dropped)

    def _early_stopped(self, stopping: EarlyStopping) -> StepRollout:
        generated: list[Trajectory] = []
        chosen = list(self.controller.plan(self.task_ids))  # the step's prompts, by Control's selector
        # `collect` records every group in the controller's history itself
        batch = stopping.collect(self._planned_runs(generated), chosen, self.controller.history)
        return StepRollout(batch.groups, generated, batch.rounds, batch.dropped, len(batch.stopped))

    def _run(self, specs: Sequence[EpisodeSpec]) -> list[Trajectory]:
        self.rounds_total += 1
        return self.runner.run(specs).trajectories

    def state_dict(self) -> dict[str, int]:
        return {
            "samples_total": self.samples_total,
            "tokens_total": self.tokens_total,
            "rounds_total": self.rounds_total,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.samples_total = int(state["samples_total"])
        self.tokens_total = int(state["tokens_total"])
        self.rounds_total = int(state["rounds_total"])


def rollout_metrics(step: StepRollout, penalty: OverlongPenalty | None = None) -> dict[str, float]:
    """Reward, spread and length statistics of one step: of every episode generated (dropped
    groups included), and of the groups trained on, with the rewards their advantages use; and the
    seconds its episodes queued for each shared resource, summed (`rollout/wait_s/sandbox`, …)."""
    generated = step.generated
    rewards = np.array([t.total_reward for t in generated if t.status == "ok"] or [0.0])
    zero_std = [zero_variance([t.total_reward for t in g]) for g in group_by_task(generated).values()]
    reward = penalty.reward if penalty is not None else task_reward
    trained = [zero_variance([reward(t) for t in g]) for g in step.groups.values()]
    lengths = [sum(t.tokens.loss_mask) for t in generated if t.tokens is not None]
    turns = [len(t.steps) for t in generated]
    metrics = {
        "rollout/reward_mean": float(rewards.mean()),
        "rollout/reward_std": float(rewards.std()),
        "rollout/frac_zero_std": float(np.mean(zero_std)) if zero_std else 0.0,
        "rollout/zero_variance_share": float(np.mean(trained)) if trained else 0.0,
        "rollout/groups": len(step.groups),
        "rollout/dropped_groups": step.dropped,
        "rollout/stopped_groups": step.stopped,
        "rollout/rounds": step.rounds,
        "rollout/episodes": len(generated),
        "rollout/failed": sum(t.status == "failed" for t in generated),
        "rollout/turns_mean": float(np.mean(turns)) if turns else 0.0,
        "rollout/completion_tokens_mean": float(np.mean(lengths)) if lengths else 0.0,
    }
    waits = functools.reduce(add_waits, (t.cost.wait_s for t in generated), dict.fromkeys(RESOURCES, 0.0))
    metrics |= {f"rollout/wait_s/{resource}": seconds for resource, seconds in waits.items()}  # summed
    if penalty is not None:
        penalties = [penalty.penalty(t) for g in step.groups.values() for t in g]
        metrics["rollout/overlong_penalty_mean"] = float(np.mean(penalties)) if penalties else 0.0
    return metrics | batch_indicators(generated)


# The indicators the trainer watches: metric key -> (its [diagnose] threshold, the lever to name).
WATCHED = {
    "rollout/zero_variance_share": (
        "zero_variance_share",
        "groups trained on with no reward spread; enable [dynamic_sampling] filter_groups = true, "
        "raise [rollout] group_size, or pick prompts the model solves sometimes",
    ),
    "diagnose/wasted_token_share": (
        "wasted_token_share",
        "tokens spent on groups with no reward spread; enable [early_stopping] or [rollout] "
        "selector = 'greso'",
    ),
    "diagnose/rewarded_incorrect_share": (
        "rewarded_incorrect_share",
        "rewarded episodes that the env's correctness signal rejects (reward hacking?); reward correctness",
    ),
    "diagnose/truncated_share": (
        "truncated_share",
        "episodes cut off by a limit; enable [overlong_penalty] or change [rollout] max_tokens / max_turns",
    ),
    "diagnose/failed_share": ("failed_share", "episodes failed by infrastructure; see the failure reasons"),
    "diagnose/replay_lag": ("replay_lag", "policy versions behind, on average; lower [replay] max_staleness"),
}


class PathologyWatch:
    """Warns (logging.warning) when a watched indicator crosses its `[diagnose]` threshold, once
    per pathology until it falls back below it; `gfcr diagnose OUT_DIR` reads the same metrics.

    >>> watch = PathologyWatch(DiagnoseConfig())
    >>> watch.check(1, {"diagnose/failed_share": 0.5}), watch.check(2, {"diagnose/failed_share": 0.5})
    (['diagnose/failed_share'], [])
    """

    def __init__(self, config: DiagnoseConfig) -> None:
        self.config = config
        self.raised: set[str] = set()

    def check(self, step: int, metrics: Mapping[str, Any]) -> list[str]:
        """The keys newly over their threshold at `step` (each warned about once)."""
        new = []
        for key, (name, lever) in WATCHED.items():
            value, threshold = metrics.get(key), getattr(self.config, name)
            if not isinstance(value, int | float) or value < threshold:
                self.raised.discard(key)
            elif key not in self.raised:
                self.raised.add(key)
                new.append(key)
                if self.config.warn:
                    logger.warning(
                        "step %d: %s = %.3g >= [diagnose] %s = %g: %s (gfcr diagnose OUT_DIR for "
                        "the evidence)",
                        step, key, value, name, threshold, lever,
                    )  # fmt: skip
        return new
