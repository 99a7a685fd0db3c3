"""Early stopping: stop sampling a prompt once its group is decided; stop an episode early.

- `EarlyStopping` samples a group in waves and stops a prompt whose samples so far all agree
  when its posterior says the rest would agree too (probability >= `confidence`): that group
  would be dropped as zero-variance anyway, so its remaining samples are saved. A prompt whose
  samples disagree is informative and is sampled to the full group. (Sequential sampling in
  the spirit of AR3PO's adaptive rollout, Zhang et al. 2025, and Reinforce-Ada, Xiong et al. 2025.)
- `PrefixStop` ends an episode whose prefix a verifier or process scorer marked as failed.
- `LengthBudget` ends an episode whose response outgrew its prompt's length budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gfcr.control.dynamic import Batch, RunFn, observe
from gfcr.control.posterior import PromptHistory, PromptStats, beta_moment, is_informative
from gfcr.core import Trajectory, solved
from gfcr.errors import ConfigError
from gfcr.filter.signals import response_length
from gfcr.generate.groups import group_by_task


@dataclass(frozen=True)
class EarlyStopping:
    """Sample `group_size` per prompt in waves of `wave`, stopping prompts once decided.

    >>> from gfcr.workloads import BernoulliPrompts
    >>> h = PromptHistory()
    >>> for _ in range(10):
    ...     h.update("synthetic/0", [0.0] * 8)
    >>> env = BernoulliPrompts([0.0, 0.5], seed=0)
    >>> batch = EarlyStopping(group_size=8, wave=2).collect(env.run, env.task_ids, h)
    >>> batch.stopped, batch.samples  # the hopeless prompt stopped after its first wave
    ({'synthetic/0': 2}, 10)
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

    def decided(self, rewards: Sequence[float], stats: PromptStats, success_at: float = 1.0) -> bool:
        """Whether to stop sampling: the group is full, or its remaining samples would agree."""
        remaining = self.group_size - len(rewards)
        if remaining <= 0:
            return True
        if not rewards or is_informative(rewards):
            return False
        successes = sum(solved(r, success_at) for r in rewards)
        a, b = stats.alpha + successes, stats.beta + len(rewards) - successes
        all_same = beta_moment(a, b, remaining) if successes else beta_moment(b, a, remaining)
        return all_same >= self.confidence

    def collect(self, run: RunFn, task_ids: Sequence[str], history: PromptHistory) -> Batch:
        """Sample every prompt of `task_ids`; keep the informative full groups."""
        drawn: dict[str, list[Trajectory]] = {t: [] for t in task_ids}
        open_ids = list(task_ids)
        batch = Batch()
        while open_ids:
            plan = {t: min(self.wave, self.group_size - len(drawn[t])) for t in open_ids}
            trajectories = run(plan)
            batch.rounds += 1
            batch.samples += len(trajectories)
            for task_id, group in group_by_task(trajectories).items():
                drawn[task_id] += group
            still_open = []
            for task_id in open_ids:
                rewards = [t.total_reward for t in drawn[task_id]]
                if not self.decided(rewards, history.get(task_id), history.success_at):
                    still_open.append(task_id)
                elif len(rewards) < self.group_size:
                    batch.stopped[task_id] = len(rewards)
            open_ids = still_open
        observe(history, drawn)
        for task_id, group in drawn.items():
            if task_id not in batch.stopped and is_informative([t.total_reward for t in group]):
                batch.groups[task_id] = group
            else:
                batch.dropped += 1
        return batch


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
