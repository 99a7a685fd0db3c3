"""Early stopping: stop sampling a prompt once its group is decided; stop an episode early.

- `EarlyStopping` samples a group in waves and stops a prompt whose samples so far all agree
  when its posterior says the rest would agree too (probability >= `confidence`): that group
  would carry no signal, so it is dropped and its remaining samples are saved. A prompt whose
  samples disagree is informative and is sampled to the full group. (Sequential sampling in
  the spirit of AR3PO's adaptive rollout, Zhang et al. 2025, and Reinforce-Ada, Xiong et al. 2025.)
- `PrefixStop` ends an episode whose prefix a verifier or process scorer marked as failed.
- `LengthBudget` ends an episode whose response outgrew its prompt's length budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gfcr.control.dynamic import Draw, RunFn, SamplePlan
from gfcr.control.posterior import PromptHistory, PromptStats, beta_moment, is_informative
from gfcr.core import Trajectory, solved
from gfcr.errors import ConfigError
from gfcr.filter.signals import response_length
from gfcr.generate.groups import group_by_task


@dataclass(frozen=True)
class EarlyStopping:
    """Draw each prompt's samples in waves of `wave`, stopping a prompt once its group is decided.

    A prompt's group has `group_size` samples, or what the plan gives it (a budget's allocation).
    As the decide loop's sampler (`DynamicSampling.collect(..., sampler=EarlyStopping())`), the
    groups it stops are dropped and refilled.

    >>> from gfcr.workloads import BernoulliPrompts
    >>> h = PromptHistory()
    >>> for _ in range(10):
    ...     h.update("synthetic/0", [0.0] * 8)
    >>> env = BernoulliPrompts([0.0, 0.5], seed=0)
    >>> draw = EarlyStopping(group_size=8, wave=2).sample(env.run, dict.fromkeys(env.task_ids, 8), h)
    >>> draw.stopped, draw.samples  # the hopeless prompt stopped after its first wave: 6 samples saved
    ({'synthetic/0': 6}, 10)
    """

    group_size: int = 8
    wave: int = 2
    confidence: float = 0.9

    def __post_init__(self) -> None:
        if not 1 <= self.wave <= self.group_size or self.group_size < 2:
            raise ConfigError(
                f"need 1 <= wave <= group_size and group_size >= 2, got {self.wave}, {self.group_size}"
            )
        if not 0.0 < self.confidence < 1.0:
            raise ConfigError(f"confidence must be in (0, 1), got {self.confidence}")

    def decided(
        self,
        rewards: Sequence[float],
        stats: PromptStats,
        success_at: float = 1.0,
        remaining: int | None = None,
    ) -> bool:
        """Whether to stop sampling: no samples remain (default: `group_size` less those drawn), or
        the remaining ones would agree with those drawn."""
        remaining = self.group_size - len(rewards) if remaining is None else remaining
        if remaining <= 0:
            return True
        if not rewards or is_informative(rewards):
            return False
        successes = sum(solved(r, success_at) for r in rewards)
        a, b = stats.alpha + successes, stats.beta + len(rewards) - successes
        all_same = beta_moment(a, b, remaining) if successes else beta_moment(b, a, remaining)
        return all_same >= self.confidence

    def sample(self, run: RunFn, plan: SamplePlan, history: PromptHistory) -> Draw:
        """Draw `plan[t]` samples of each prompt in waves; `history` (not updated here) is the
        evidence each decision adds the wave's outcomes to."""
        drawn: dict[str, list[Trajectory]] = {t: [] for t in plan}
        asked = dict.fromkeys(plan, 0)  # samples requested so far (failed episodes included)
        draw = Draw(drawn)
        open_ids = [t for t, n in plan.items() if n > 0]
        while open_ids:
            wave = {t: min(self.wave, plan[t] - asked[t]) for t in open_ids}
            trajectories = run(wave)
            draw.runs += 1
            draw.samples += len(trajectories)
            for task_id, group in group_by_task(trajectories).items():
                drawn[task_id] += group
            still_open = []
            for task_id in open_ids:
                asked[task_id] += wave[task_id]
                rewards = [t.reward for t in drawn[task_id]]
                remaining = plan[task_id] - asked[task_id]
                if not self.decided(rewards, history.get(task_id), history.success_at, remaining):
                    still_open.append(task_id)
                elif remaining > 0:
                    draw.stopped[task_id] = remaining
            open_ids = still_open
        draw.groups = {t: group for t, group in drawn.items() if group}
        return draw


@dataclass(frozen=True)
class PrefixStop:
    """Stop an episode once the last step's signal `key` is below `threshold` (or False).

    >>> from gfcr.core import Step
    >>> t = Trajectory("e", "t", "?", [Step("a", "", 0.0, False, False, {"process_score": 0.1})])
    >>> PrefixStop().stop(t)
    True
    """

    key: str = "process_score"
    threshold: float = 0.5

    def stop(self, trajectory: Trajectory) -> bool:
        value = trajectory.steps[-1].signals.get(self.key) if trajectory.steps else None
        return value is not None and float(value) < self.threshold


@dataclass(frozen=True)
class LengthBudget:
    """Stop an episode whose response is longer than its prompt's budget.

    The budget is `max_length`, or `factor` × the shortest correct response seen for the prompt
    if that is smaller (a prompt solved in 300 tokens need not be given 8,000).

    >>> h = PromptHistory()
    >>> h.update("t", [1.0, 0.0], lengths=[100, 900])
    >>> LengthBudget(max_length=1000, factor=2.0).budget("t", h)
    200
    """

    max_length: int
    factor: float | None = None

    def __post_init__(self) -> None:
        if self.max_length < 1 or (self.factor is not None and self.factor < 1.0):
            raise ConfigError(
                f"need max_length >= 1 and factor >= 1 (or None), got {self.max_length}, {self.factor}"
            )

    def budget(self, task_id: str, history: PromptHistory) -> int:
        best = history.get(task_id).best_length
        if self.factor is None or best is None:
            return self.max_length
        return min(self.max_length, int(self.factor * best))

    def stop(self, trajectory: Trajectory, history: PromptHistory) -> bool:
        return response_length(trajectory) > self.budget(trajectory.task_id, history)
