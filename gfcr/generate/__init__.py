"""Generate: how candidate trajectories are proposed.

- Group sampling: `expand_groups` turns episode specs into K samples per prompt for the
  runner; `group_by_task` gathers the results back into groups.
- Tree rollouts: `BranchAt` (branch live episodes at turn boundaries, through Control's
  `after_step`), `build_tree` and `tree_advantages` (TreeRL, TreeRPO step values),
  `build_token_tree` and `token_tree_advantages` (the same, per token, for the losses).
- `GenerateConfig`: the `[generate]` section (trees inside turns, guidance) of a recipe.
- Tree rollouts inside a turn: `BranchTokens` (token offsets to branch at, for Control's
  `after_step`).
- Guidance: `FewShot`, `Plan` and any `Guide` (a `gfcr.skills.SkillLibrary` too) injected
  into the prompt by `GuidedPolicy`.

>>> from gfcr.generate import FewShot, inject
>>> inject([], FewShot(()).guidance("q"))
[]
"""

from gfcr.generate.branching import BranchTokens
from gfcr.generate.config import GenerateConfig
from gfcr.generate.groups import expand_groups, group_by_task, round_seed
from gfcr.generate.guidance import FewShot, GuidanceConfig, Guide, GuidedPolicy, Plan, first_user_text, inject
from gfcr.generate.tree import (
    TREE_ESTIMATORS,
    BranchAt,
    Node,
    build_token_tree,
    build_tree,
    token_tree_advantages,
    tree_advantages,
)

__all__ = [
    "TREE_ESTIMATORS",
    "BranchAt",
    "BranchTokens",
    "FewShot",
    "GenerateConfig",
    "Guide",
    "GuidanceConfig",
    "GuidedPolicy",
    "Node",
    "Plan",
    "build_token_tree",
    "build_tree",
    "expand_groups",
    "first_user_text",
    "group_by_task",
    "inject",
    "round_seed",
    "token_tree_advantages",
    "tree_advantages",
]
