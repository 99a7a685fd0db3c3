"""Control: where compute goes under a budget.

- Prompt selection (`UniformSelector`, `GresoSelector`, `VarianceSelector`, `ThompsonSelector`)
  over per-prompt Beta posteriors kept in a `PromptHistory`; `SecSelector`, a bandit over task
  categories.
- `DynamicSampling`: DAPO's over-sample, drop zero-variance groups, refill — the decide loop,
  composed with a budget's allocation and early stopping's waves.
- `BudgetScheduler`: samples per prompt under a total sample or token budget, by uncertainty.
- Early stopping: `EarlyStopping` (stop sampling a decided prompt), `PrefixStop` (stop an
  episode a verifier marked as failed), `LengthBudget` (length control).
- `OffPolicyMix`: the share of replayed data in a batch.
- `TemperatureBySuccess`: a sampling temperature per prompt, from its posterior.
- `AdaptiveGuidance`: guidance only for prompts the policy fails; `guided` builds a trainer's.
- `DifficultyCurriculum`: each task category's level, raised or lowered from the success measured
  there so training stays in the informative band; `task_difficulty` reads a task's level.
- `RolloutController` + `ControlConfig` (the `[control]` table): all of the above, as the
  runner's Control hook and as the decide loop `collect(run, task_ids)`.

>>> from gfcr.control import ControlConfig
>>> ControlConfig(selector="thmpson")
Traceback (most recent call last):
...
gfcr.errors.UnknownNameError: unknown selector 'thmpson'; did you mean 'thompson'? Known: greso, ...
"""

from gfcr.control.budget import BudgetScheduler
from gfcr.control.controller import ControlConfig, Decision, RolloutController, make_selector
from gfcr.control.curriculum import DifficultyCurriculum, task_difficulty
from gfcr.control.dynamic import Batch, Draw, DynamicSampling, RunFn, SamplePlan, observe
from gfcr.control.guidance import AdaptiveGuidance, guided
from gfcr.control.mixing import OffPolicyMix
from gfcr.control.posterior import PromptHistory, PromptStats, beta_moment, is_informative, p_informative
from gfcr.control.selection import (
    SELECTORS,
    GresoSelector,
    LearningSelector,
    PromptSelector,
    SecSelector,
    ThompsonSelector,
    UniformSelector,
    VarianceSelector,
    task_category,
)
from gfcr.control.stopping import EarlyStopping, LengthBudget, PrefixStop
from gfcr.control.temperature import TemperatureBySuccess

__all__ = [
    "SELECTORS",
    "AdaptiveGuidance",
    "Batch",
    "BudgetScheduler",
    "ControlConfig",
    "Decision",
    "DifficultyCurriculum",
    "Draw",
    "DynamicSampling",
    "EarlyStopping",
    "GresoSelector",
    "LearningSelector",
    "LengthBudget",
    "OffPolicyMix",
    "PrefixStop",
    "PromptHistory",
    "PromptSelector",
    "PromptStats",
    "RolloutController",
    "RunFn",
    "SamplePlan",
    "SecSelector",
    "TemperatureBySuccess",
    "ThompsonSelector",
    "UniformSelector",
    "VarianceSelector",
    "beta_moment",
    "guided",
    "is_informative",
    "make_selector",
    "observe",
    "p_informative",
    "task_category",
    "task_difficulty",
]
