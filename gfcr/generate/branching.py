"""Token-level tree rollouts: where to branch an episode inside the turn it just took.

TreeRL's EPTree (Hou et al. 2025, §3.1) grows trees from a few full samples by forking each at
the tokens where the policy was least sure of itself (the highest entropy) and continuing every
fork several times; TreeRPO (Yang et al. 2025) forks at fixed segment boundaries. A fork shares
the parent's prefix, generated once. `BranchTokens.positions` gives those token offsets for the
turn an episode just took; a Controller's `after_step` returns them as
`Decision(branch_tokens=...)` and the runner starts the children. Branching between turns is
`gfcr.generate.tree.BranchAt`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from gfcr.core import Trajectory
from gfcr.core.config import setting
from gfcr.core.hooks import branch_points
from gfcr.errors import ConfigError


@dataclass(frozen=True)
class BranchTokens:
    """Branch a turn at fixed segment boundaries and/or at its highest-entropy tokens.

    Offsets count the turn's sampled tokens: offset k keeps the parent's first k tokens and
    samples the rest again, so an entropy point at token i (the draw from the most uncertain
    distribution) is offset i. The entropies are the policy's (`TokenData.entropies`); where it
    reports none, each token's surprisal (-logprob) stands in. Offset 0 would be a fresh sample,
    not a branch, and is never given. A child branches again only under `max_depth` > 1, and
    then only inside the tokens it generated itself.

    >>> from gfcr.core import Step, TokenData
    >>> entropies = [0.1, 0.2, 3.0, 0.1, 0.1, 2.0, 0.1, 0.1]  # the turn's 8 sampled tokens
    >>> tokens = TokenData([1], list(range(8)), [1] * 8, [-0.5] * 8, entropies)
    >>> t = Trajectory("e", "t", "?", [Step("…", "", 0.0, True, False)], tokens=tokens, id="a")
    >>> BranchTokens(segments=2, children=1).positions(t), BranchTokens(entropy_points=2).positions(t)
    ((4,), (2, 2, 5, 5))
    >>> t.id = "a.1t2-0"  # a child: no further branching at depth 1
    >>> BranchTokens(entropy_points=2).positions(t)
    ()
    """

    children: int = setting(2, "Children per branch point inside a turn.")
    turns: tuple[int, ...] = setting((1,), "Turns (from 1) to branch inside.")
    segments: int = setting(
        0, "Branch at the boundaries of this many equal segments of the turn (0: none; 2: the middle)."
    )
    entropy_points: int = setting(0, "Branch at this many highest-entropy tokens of the turn (0: none).")
    max_depth: int = setting(1, "Levels of branching inside turns: 1 branches root episodes only.")

    def __post_init__(self) -> None:
        if isinstance(self.turns, (str, int)) or any(not isinstance(t, int) or t < 1 for t in self.turns):
            raise ConfigError(f"turns must be a list of turn numbers >= 1, got {self.turns!r}; e.g. [1]")
        if self.children < 1 or self.max_depth < 1:
            raise ConfigError(
                f"children and max_depth must be >= 1, got {self.children} and {self.max_depth}"
            )
        if self.entropy_points < 0 or self.segments < 0 or self.segments == 1:
            raise ConfigError(
                f"segments must be 0 (none) or >= 2 and entropy_points >= 0, got {self.segments} and "
                f"{self.entropy_points}"
            )

    @property
    def enabled(self) -> bool:
        """Whether any turn is branched at all."""
        return bool(self.segments or self.entropy_points)

    @property
    def leaves_per_root(self) -> int:
        """Samples one root episode ends as at most, itself and its branches (a short turn has fewer
        branch points): what the pipeline divides a prompt's samples by to get its roots.

        >>> BranchTokens(segments=4).leaves_per_root  # 3 boundaries, 2 children each
        7
        >>> BranchTokens(entropy_points=2, max_depth=2).leaves_per_root  # 1 + 4 + 4 × 4
        21
        """
        points = max(self.segments - 1, 0) + self.entropy_points
        per_level = points * self.children * len(self.turns)  # children of one episode, at most
        return sum(per_level**level for level in range(self.max_depth + 1))

    def positions(self, trajectory: Trajectory) -> tuple[int, ...]:
        """Token offsets into the turn just taken to branch at, each `children` times (sorted)."""
        turn, tokens = len(trajectory.steps), trajectory.tokens
        origins = branch_points(trajectory.id)
        depth = sum(offset is not None for _, offset in origins)
        if not self.enabled or tokens is None or turn not in self.turns or depth >= self.max_depth:
            return ()
        start = _last_turn_start(tokens.loss_mask)
        length = len(tokens.loss_mask) - start
        # a child branches only where it sampled: after the prefix it was forced to start with
        last_turn, last_offset = origins[-1] if origins else (0, None)
        floor = last_offset if last_offset is not None and last_turn == turn else 0
        cuts = {round(i * length / self.segments) for i in range(1, self.segments)}  # none if 0
        if self.entropy_points:
            cuts |= set(_most_uncertain(tokens.entropies, tokens.logprobs, start, floor, self.entropy_points))
        offsets = sorted(k for k in cuts if floor < k < length)
        return tuple(k for k in offsets for _ in range(self.children))


def _last_turn_start(loss_mask: Sequence[int]) -> int:
    """Where the last turn's sampled tokens start: the final run of loss mask 1 (the observation
    after a turn joins the token data only when another turn follows)."""
    start = len(loss_mask)
    while start > 0 and loss_mask[start - 1] == 1:
        start -= 1
    return start


def _most_uncertain(
    entropies: Sequence[float] | None, logprobs: Sequence[float], start: int, floor: int, n: int
) -> list[int]:
    """The offsets (into the turn from `start`) of its `n` most uncertain tokens past `floor`,
    earliest first among equals: by entropy, else by surprisal (-logprob)."""
    uncertainty = -np.asarray(logprobs[start:]) if entropies is None else np.asarray(entropies[start:])
    offsets = np.arange(len(uncertainty))
    eligible = offsets > floor  # offset 0 (or a child's own prefix) is no branch point
    order = np.argsort(-uncertainty[eligible], kind="stable")
    return [int(k) for k in offsets[eligible][order][:n]]
