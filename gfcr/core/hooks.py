"""Where the GFCR modules plug into the runner: Control, Filter and Replay.

- Control (`Controller`): `schedule` picks which episodes run (tasks, samples per task) before
  the run starts; `after_step` may stop an episode or branch it into copies that continue
  independently from the same prefix (tree rollouts).
- Filter (`SignalReader`): `on_step` reads each step's signals φ as the episode goes.
- Replay (`ReplaySink`): `store` receives every finished trajectory.

The modules themselves live in `gfcr.control`, `gfcr.filter` and `gfcr.replay`; anything with
these methods fits. `Controller()` is the default: run every episode, never stop or branch.

>>> Controller().after_step(None)
Decision(stop=False, branches=0)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from gfcr.core.trajectory import Step, Trajectory
from gfcr.errors import ConfigError

if TYPE_CHECKING:
    from gfcr.core.episode import EpisodeSpec


@dataclass(frozen=True)
class Decision:
    """What Control wants after a step: stop the episode here, and/or branch it `branches` times."""

    stop: bool = False
    branches: int = 0

    def __post_init__(self) -> None:
        if self.branches < 0:
            raise ConfigError(f"branches must be >= 0, got {self.branches}")


class Controller:
    """The default Control: every scheduled episode runs to its end, unbranched."""

    def schedule(self, episodes: list[EpisodeSpec]) -> list[EpisodeSpec]:
        """The episodes to run (reorder, drop, or repeat them to change samples per task)."""
        return episodes

    def after_step(self, trajectory: Trajectory) -> Decision:
        """Called after every step of a live episode."""
        return Decision()


class SignalReader(Protocol):
    """Filter's hook: reads the signals of each step as it happens."""

    def on_step(self, trajectory: Trajectory, step: Step) -> None: ...


class ReplaySink(Protocol):
    """Replay's hook: keeps finished trajectories."""

    def store(self, trajectory: Trajectory) -> None: ...
