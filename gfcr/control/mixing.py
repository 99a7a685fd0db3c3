"""The on/off-policy mix: how much replayed data joins each group of fresh rollouts, and which."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gfcr.core import Trajectory
from gfcr.errors import ConfigError, UnknownNameError
from gfcr.replay import SAMPLE_RULES


@dataclass(frozen=True)
class OffPolicyMix:
    """Keep replayed trajectories at `ratio` of the mixed batch (0: on-policy only), chosen by
    `rule` from the replay buffer: the newest correct ones ("correct"), the newest of any outcome
    ("recent"), or correct ones far apart ("diverse"; `ReplayBuffer.sample`'s rules).

    RePO (Li et al. 2025, "RePO: Replay-Enhanced Policy Optimization", arXiv:2506.09340) adds
    each prompt's off-policy samples to its on-policy ones; the rollout pipeline's keep stage does
    so per group (`gfcr.trainers.pipeline`). Replayed samples carry their own behaviour logprobs and
    policy version (see `gfcr.replay`), and the trainer corrects for them; Control decides how many.

    >>> mix = OffPolicyMix(ratio=0.25)
    >>> mix.replay_count(30)
    10
    >>> fresh = [Trajectory("e", "t", "") for _ in range(3)]
    >>> len(mix.mix(fresh, [Trajectory("e", "t", "old")] * 5))
    4
    """

    ratio: float = 0.0
    rule: str = "correct"

    def __post_init__(self) -> None:
        if not 0.0 <= self.ratio < 1.0:
            raise ConfigError(f"ratio (replayed share of a batch) must be in [0, 1), got {self.ratio}")
        if self.rule not in SAMPLE_RULES:
            raise UnknownNameError("replay mix rule", self.rule, SAMPLE_RULES)

    def replay_count(self, on_policy: int) -> int:
        """Replayed samples to add to `on_policy` fresh ones: n·r/(1-r), rounded."""
        return round(on_policy * self.ratio / (1.0 - self.ratio))

    def mix(self, on_policy: Sequence[Trajectory], replayed: Sequence[Trajectory]) -> list[Trajectory]:
        """The fresh trajectories, then up to `replay_count` of `replayed` (in their order)."""
        return [*on_policy, *replayed[: self.replay_count(len(on_policy))]]
