"""Where the GFCR modules plug into the runner: Control, Filter and Replay.

- Control (`Controller`): `schedule` picks which episodes run (tasks, samples per task) before
  the run starts; `after_step` may stop an episode or branch it into copies that continue
  independently from the same prefix (tree rollouts): after the turn just taken, or inside it,
  from its first tokens (`Decision.branch_tokens`). A branch's trajectory id is its parent's
  and where it branched off (`branch_id`; `branch_points` reads them back).
- Filter (`SignalReader`): `on_step` reads each step's signals φ as the episode goes.
- Replay (`ReplaySink`): `store` receives every finished trajectory.

The modules themselves live in `gfcr.control`, `gfcr.filter` and `gfcr.replay`; anything with
these methods fits. `Controller()` is the default: run every episode, never stop or branch.

>>> Controller().after_step(None)
Decision(stop=False, branches=0, branch_tokens=())
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from gfcr.core.trajectory import Step, Trajectory
from gfcr.errors import ConfigError

if TYPE_CHECKING:
    from gfcr.core.episode import EpisodeSpec


@dataclass(frozen=True)
class Decision:
    """What Control wants after a step: stop the episode here, and/or branch it.

    `branches` copies continue from after the turn just taken. `branch_tokens` are token offsets
    k (1 <= k < the turn's sampled tokens) into that turn: for each, a copy takes the turn again
    from the parent's first k sampled tokens (their ids, logprobs and entropies are the
    parent's); an offset given twice makes two copies. That needs a policy with token ids and
    `decode` (`gfcr.core.policy.DecodingPolicy`; any other is a `ConfigError`). `branch_tokens`
    act on the episode's last step too, where `stop` and `branches` have nothing left to act on.
    """

    stop: bool = False
    branches: int = 0
    branch_tokens: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.branches < 0:
            raise ConfigError(f"branches must be >= 0, got {self.branches}")
        if any(k < 1 for k in self.branch_tokens):
            raise ConfigError(
                f"branch_tokens are token offsets into the turn, each >= 1, got {self.branch_tokens}"
            )


class Controller:
    """The default Control: every scheduled episode runs to its end, unbranched."""

    def schedule(self, episodes: list[EpisodeSpec]) -> list[EpisodeSpec]:
        """The episodes to run (reorder, drop, or repeat them to change samples per task)."""
        return episodes

    def after_step(self, trajectory: Trajectory) -> Decision:
        """Called after every step of an episode, its last included: there (`trajectory.steps[-1]`
        terminated or truncated) only `branch_tokens` act."""
        return Decision()


def branch_id(parent_id: str, turn: int, number: int, offset: int | None = None) -> str:
    """The trajectory id of branch `number` (from 0) of `parent_id` after its turn `turn` (from 1),
    or, with `offset`, of one that takes turn `turn` again from its first `offset` tokens.

    >>> branch_id("a1", 2, 0), branch_id("a1", 1, 1, offset=12)
    ('a1.2-0', 'a1.1t12-1')
    """
    return f"{parent_id}.{turn}{'' if offset is None else f't{offset}'}-{number}"


_BRANCH = re.compile(r"\.(\d+)(?:t(\d+))?-\d+")


def branch_points(trajectory_id: str) -> list[tuple[int, int | None]]:
    """Where the branches that led to `trajectory_id` left their parents, root first: (turn,
    token offset), the offset None for a branch after the turn. [] for an episode never branched.

    >>> branch_points("a1.2-0.1t12-1"), branch_points("a1")
    ([(2, None), (1, 12)], [])
    """
    return [(int(turn), int(k) if k else None) for turn, k in _BRANCH.findall(trajectory_id)]


class SignalReader(Protocol):
    """Filter's hook: reads the signals of each step as it happens."""

    def on_step(self, trajectory: Trajectory, step: Step) -> None: ...


class ReplaySink(Protocol):
    """Replay's hook: keeps finished trajectories."""

    def store(self, trajectory: Trajectory) -> None: ...
