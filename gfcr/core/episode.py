"""What an episode is, before it runs: the env configuration, the task, the seed, the sample number.

`EpisodeSpec` is what Control schedules and the runner plays; its `id` (a hash of its fields)
becomes the trajectory id, so a resumed run knows what it already wrote.

>>> spec = EpisodeSpec(EnvConfig("gfcr/Math-v0", {"split": "AIME2024"}), "mmath/AIME2024/0", seed=0)
>>> spec.id == EpisodeSpec(EnvConfig("gfcr/Math-v0", {"split": "AIME2024"}), "mmath/AIME2024/0", 0).id
True
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any


@dataclass(frozen=True)
class EnvConfig:
    """How to make an env: its id, `gymnasium.make` keywords and (for plugins) its entry point."""

    env_id: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    entry_point: Any = None  # a "module:Class" string or a class; None: already registered

    @cached_property
    def key(self) -> str:
        """Identity of the configuration: envs with equal keys are interchangeable."""
        return json.dumps([self.env_id, self.kwargs], sort_keys=True, default=str)



@dataclass(frozen=True)
class EpisodeSpec:
    """One episode to run: env configuration, task (None: the seed picks), seed, sample number."""

    env: EnvConfig
    task_id: str | None = None
    seed: int | None = None
    sample: int = 0

    @cached_property  # a frozen dataclass: computed once, stored in the instance's __dict__
    def id(self) -> str:
        """A stable id: equal specs give equal ids, in any process and any run."""
        identity = json.dumps([self.env.key, self.task_id, self.seed, self.sample], default=str)
        return hashlib.sha256(identity.encode()).hexdigest()[:32]
