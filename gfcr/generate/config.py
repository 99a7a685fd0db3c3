"""`GenerateConfig`: the generate stage's settings, the `[generate]` section of a recipe.

Two sub-tables, each declared in its module: `[generate.tree]` branches episodes inside a turn
(`BranchTokens`: TreeRL's entropy points, TreeRPO's segments) and `[generate.guidance]` puts
few-shot examples, a plan or retrieved skills in the prompt (`GuidanceConfig`). Groups are the
trainer's `[rollout] group_size`; branching between turns is Control's `[control] branch_at`.

>>> from gfcr.core.config import from_dict
>>> table = {"tree": {"entropy_points": 2}, "guidance": {"kind": "plan", "plan": "Think."}}
>>> config = from_dict(GenerateConfig, table)
>>> config.trees, config.branch_tokens.entropy_points, config.guidance.kind
(True, 2, 'plan')
"""

from __future__ import annotations

from dataclasses import dataclass

from gfcr.core.config import setting
from gfcr.generate.branching import BranchTokens
from gfcr.generate.guidance import GuidanceConfig


@dataclass(frozen=True)
class GenerateConfig:
    """`[generate]`: trees inside turns and guidance (both off by default)."""

    tree: BranchTokens = setting(
        default_factory=BranchTokens,
        help="Branch episodes inside a turn, at token positions (TreeRL, TreeRPO).",
    )
    guidance: GuidanceConfig = setting(
        default_factory=GuidanceConfig, help="Guidance in the prompt: few-shot examples, a plan or skills."
    )

    @property
    def branch_tokens(self) -> BranchTokens | None:
        """The token branching to apply, or None when no turn is branched."""
        return self.tree if self.tree.enabled else None

    @property
    def trees(self) -> bool:
        """Whether episodes branch inside turns (their samples then share prefixes)."""
        return self.tree.enabled
