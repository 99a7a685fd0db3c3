"""Control: where compute goes under a budget.

- Prompt selection (`UniformSelector`, `GresoSelector`, `VarianceSelector`, `ThompsonSelector`)
  over per-prompt Beta posteriors kept in a `PromptHistory`.
- `DynamicSampling`: DAPO's over-sample, drop zero-variance groups, refill.
- `BudgetScheduler`: samples per prompt under a total sample or token budget, by uncertainty.
- Early stopping: `EarlyStopping` (stop sampling a decided prompt), `PrefixStop` (stop an
  episode a verifier marked as failed), `LengthBudget` (length control).
- `OffPolicyMix`: the share of replayed data in a batch.
- `RolloutController` + `ControlConfig`: all of the above as the runner's Control hook.

>>> from gfcr.control import ControlConfig
>>> ControlConfig(selector="thmpson")
Traceback (most recent call last):
...
gfcr.errors.UnknownNameError: unknown selector 'thmpson'; did you mean 'thompson'? Known: greso, ...
"""

from gfcr.control.budget import BudgetScheduler
from gfcr.control.controller import ControlConfig, Decision, RolloutController
from gfcr.control.dynamic import Batch, DynamicSampling, RunFn, SamplePlan, observe
from gfcr.control.mixing import OffPolicyMix
from gfcr.control.posterior import PromptHistory, PromptStats, beta_moment, is_informative, p_informative
from gfcr.control.selection import (
    SELECTORS,
    GresoSelector,
    PromptSelector,
    ThompsonSelector,
    UniformSelector,
    VarianceSelector,
)
from gfcr.control.stopping import EarlyStopping, LengthBudget, PrefixStop

__all__ = [
    "SELECTORS",
    "Batch",
    "BudgetScheduler",
    "ControlConfig",
    "Decision",
    "DynamicSampling",
    "EarlyStopping",
    "GresoSelector",
    "LengthBudget",
    "OffPolicyMix",
    "PrefixStop",
    "PromptHistory",
    "PromptSelector",
    "PromptStats",
    "RolloutController",
    "RunFn",
    "SamplePlan",
    "ThompsonSelector",
    "UniformSelector",
    "VarianceSelector",
    "beta_moment",
    "is_informative",
    "observe",
    "p_informative",
]
