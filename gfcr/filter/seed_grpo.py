"""SEED-GRPO: a group's advantages scaled down by its semantic entropy (Chen et al. 2025, arXiv:2505.12346).

A prompt whose K answers agree in meaning is one the model is sure of: its update keeps its full
size. A prompt whose answers scatter is one at the edge of what the model knows: its update is
damped, so a lucky answer there moves the policy less. With SE the group's semantic entropy
(`gfcr.filter.semantic`) and SE_max = ln G its most for a group of G answers, every advantage
A_i of the group becomes

    Â_i = A_i · f(α · SE / SE_max),  f(x) = 1 - x ("linear") or e^{-x} ("exponential").

Here SE counts the answers' clusters (the paper's Monte-Carlo estimate weighs clusters by the
sequences' likelihoods); its third shape ("focal") is not realised.

>>> from gfcr.core import Step, Trajectory
>>> group = [Trajectory("e", "t", "?", [Step(a, "", 0.0, True, False)]) for a in ["4", "4", "5", "6"]]
>>> round(SeedGRPO(enabled=True, alpha=1.0).scale(group), 4)  # SE = 1.0397 of ln 4 = 1.3863
0.25
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from gfcr.core import Trajectory
from gfcr.core.config import setting
from gfcr.errors import ConfigError, UnknownNameError
from gfcr.filter.semantic import normalised_entropy

SHAPES = ("linear", "exponential")


@dataclass(frozen=True)
class SeedGRPO:
    """`[credit.seed_grpo]`: scale each group's advantages by a function of its semantic entropy."""

    enabled: bool = setting(False, "Scale each group's advantages by its semantic entropy (SEED-GRPO).")
    alpha: float = setting(
        1.0, "Sensitivity α: the damping at the most scattered group (linear: 0 <= α <= 1)."
    )
    shape: str = setting("linear", "f of the normalised entropy x: linear 1 - x, exponential e^-x.")

    def __post_init__(self) -> None:
        if self.shape not in SHAPES:
            raise UnknownNameError("[credit.seed_grpo] shape", self.shape, SHAPES)
        if self.alpha < 0 or (self.shape == "linear" and self.alpha > 1):
            raise ConfigError(
                f"[credit.seed_grpo] alpha must be >= 0, and <= 1 with shape 'linear' (above 1 the scale "
                f"turns negative and flips the update); got {self.alpha} with shape {self.shape!r}"
            )

    def factor(self, normalised: float) -> float:
        """f(α · x) of a normalised entropy x = SE / SE_max in [0, 1].

        >>> SeedGRPO(alpha=0.5).factor(1.0), SeedGRPO(shape="exponential").factor(0.0)
        (0.5, 1.0)
        """
        x = self.alpha * normalised
        return 1.0 - x if self.shape == "linear" else math.exp(-x)

    def scale(self, group: Sequence[Trajectory]) -> float:
        """The factor of `group`'s advantages (its failed episodes, no answers, left out; a group
        of one answer keeps its full update)."""
        return self.factor(normalised_entropy(group))
