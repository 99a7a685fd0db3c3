"""A budget scheduler: how many samples each prompt gets under a total sample or token budget.

The value of n samples of a prompt is the probability that its group is informative (not all
rewards equal) under the prompt's Beta posterior, 1 - E[p^n] - E[(1-p)^n]. Greedy allocation
by marginal value per unit cost is optimal for this concave-in-n objective: uncertain prompts
(p near 1/2, or little evidence) get samples; prompts known to be solved or hopeless get few
or none. Costs are one per sample, or the prompt's mean response length in tokens.
In the spirit of variance-informed rollout allocation (e.g. VIP, Nguyen et al. 2026;
GVM-RAFT, Yao et al. 2025).

Uncertainty-aware allocation (`uncertainty_weight` w > 0) also weighs each prompt's value by how
much its last groups' answers disagreed in meaning: value × (1 + w · H), H the normalised
semantic entropy the history keeps (`PromptStats.semantic_entropy`, in [0, 1]; 0 before any
group was read), so of two prompts equally likely to give a spread, the one the model answers
inconsistently gets more samples (as SEED-GRPO reads semantic entropy as the model's uncertainty).
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass

from gfcr.control.posterior import PromptHistory, p_informative
from gfcr.errors import ConfigError


@dataclass(frozen=True)
class BudgetScheduler:
    """Allocates `samples` (or `tokens`) over prompts; each gets 0 or `min_samples`..`max_samples`.

    >>> h = PromptHistory()
    >>> h.update("solved", [1.0] * 32); h.update("open", [1.0, 0.0])
    >>> BudgetScheduler(min_samples=2, max_samples=8).allocate(["solved", "open"], h, samples=10)
    {'solved': 3, 'open': 7}
    >>> h.update("scattered", [1.0, 0.0], entropy=1.0); h.update("agreed", [1.0, 0.0], entropy=0.0)
    >>> BudgetScheduler(2, 16, uncertainty_weight=2.0).allocate(["scattered", "agreed"], h, samples=12)
    {'scattered': 8, 'agreed': 4}
    """

    min_samples: int = 2
    max_samples: int = 32
    default_length: float = 512.0  # tokens assumed for a prompt with no length history
    uncertainty_weight: float = 0.0  # w: a prompt's value × (1 + w · its normalised semantic entropy)

    def __post_init__(self) -> None:
        if not 2 <= self.min_samples <= self.max_samples:
            raise ConfigError(
                f"need 2 <= min_samples <= max_samples, got {self.min_samples} and {self.max_samples}"
            )
        if self.default_length <= 0:
            raise ConfigError(f"default_length must be > 0, got {self.default_length}")
        if self.uncertainty_weight < 0:
            raise ConfigError(f"uncertainty_weight must be >= 0 (0: off), got {self.uncertainty_weight}")

    def allocate(
        self,
        task_ids: Sequence[str],
        history: PromptHistory,
        *,
        samples: int | None = None,
        tokens: float | None = None,
    ) -> dict[str, int]:
        """Samples per prompt (every id appears; 0 where the budget did not reach it)."""
        if (samples is None) == (tokens is None):
            raise ConfigError("give exactly one budget: samples=... or tokens=...")
        budget = float(samples if samples is not None else tokens)  # type: ignore[arg-type]
        stats = {t: history.get(t) for t in task_ids}

        def cost(task_id: str) -> float:
            return 1.0 if tokens is None else (stats[task_id].mean_length or self.default_length)

        def value(task_id: str, n: int) -> float:
            s = stats[task_id]
            uncertainty = 1 + self.uncertainty_weight * (s.semantic_entropy or 0.0)
            return p_informative(s.alpha, s.beta, n) * uncertainty

        counts = dict.fromkeys(task_ids, 0)
        # First: which prompts get a group at all, best value per cost first.
        entry = self.min_samples
        for task_id in sorted(task_ids, key=lambda t: -value(t, entry) / cost(t)):
            if entry * cost(task_id) <= budget:
                counts[task_id] = entry
                budget -= entry * cost(task_id)
        # Then: one more sample at a time where it adds the most value per cost.
        heap = [
            (-(value(t, n + 1) - value(t, n)) / cost(t), t)
            for t, n in counts.items()
            if 0 < n < self.max_samples
        ]
        heapq.heapify(heap)
        while heap:
            gain, task_id = heapq.heappop(heap)
            if cost(task_id) > budget:
                continue
            counts[task_id] += 1
            budget -= cost(task_id)
            n = counts[task_id]
            if n < self.max_samples:
                heapq.heappush(heap, (-(value(task_id, n + 1) - value(task_id, n)) / cost(task_id), task_id))
        return counts
