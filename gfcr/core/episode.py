"""What an episode is, before it runs: the env configuration, the task, the seed, the sample number.

`EpisodeSpec` is what Control schedules and the runner plays; its `id` (a hash of its fields)
becomes the trajectory id, so a resumed run knows what it already wrote. Its `sampling`
overrides some of the runner's `SamplingParams` for this episode alone (Control's per-prompt
temperature, say); it is how the episode is sampled, not which episode it is, so not in its `id`.

>>> spec = EpisodeSpec(EnvConfig("gfcr/Math-v0", {"split": "AIME2024"}), "mmath/AIME2024/0", seed=0)
>>> spec.id == EpisodeSpec(EnvConfig("gfcr/Math-v0", {"split": "AIME2024"}), "mmath/AIME2024/0", 0).id
True
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from gfcr.core.policy import SamplingParams
from gfcr.core.task import Task
from gfcr.errors import ConfigError


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
    """One episode to run: env configuration, task (None: the seed picks), seed, sample number,
    and `SamplingParams` fields that override the runner's for it. `task`: a `Task` object the env
    does not hold (a generated one, `task_id` its id), which the runner resets the env to with
    `options={"task": task}`; the env grades it from its own gold. `skills`: skill records the env
    adds to the episode's tools (`options={"skills": ...}`).

    >>> spec = EpisodeSpec(EnvConfig("gfcr/Math-v0"), "q", sampling={"temperature": 1.2})
    >>> spec.sampling_params(SamplingParams(temperature=1.0, max_tokens=64))
    SamplingParams(temperature=1.2, top_p=1.0, max_tokens=64, n=1, stop=(), seed=None)
    >>> EpisodeSpec(EnvConfig("gfcr/Math-v0"), "q", sampling={"temprature": 1.2})
    Traceback (most recent call last):
    ...
    gfcr.errors.ConfigError: EpisodeSpec sampling: unknown SamplingParams field 'temprature'; known: ...
    """

    env: EnvConfig
    task_id: str | None = None
    seed: int | None = None
    sample: int = 0
    sampling: dict[str, Any] = field(default_factory=dict)  # SamplingParams field -> value
    task: Task | None = field(default=None, compare=False)  # not in `id`: `task_id` names it
    # skill records (`dataclasses.asdict(Skill)`) the episode may call as tools, built inside the
    # env (`options={"skills": ...}`, `gfcr.skills.skill_tools`); like guidance, not in `id`
    skills: tuple[dict[str, Any], ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        if self.task is not None and self.task.id != self.task_id:
            raise ConfigError(f"EpisodeSpec task_id {self.task_id!r} must be its task's id {self.task.id!r}")
        known = sorted(f.name for f in dataclasses.fields(SamplingParams))
        for name in self.sampling:
            if name not in known:
                raise ConfigError(
                    f"EpisodeSpec sampling: unknown SamplingParams field {name!r}; known: {', '.join(known)}"
                )
        self.sampling_params(SamplingParams())  # a bad value fails here, not in the episode

    def reset_options(self) -> dict[str, Any] | None:
        """The `env.reset` options of this episode: its task (the id, or the `Task` itself) and its
        skills as tools; None when the seed picks the task.

        >>> math = EnvConfig("gfcr/Math-v0")
        >>> EpisodeSpec(math, "t0").reset_options(), EpisodeSpec(math).reset_options()
        ({'task_id': 't0'}, None)
        >>> EpisodeSpec(math, skills=({"name": "f"},)).reset_options()
        {'skills': [{'name': 'f'}]}
        """
        options: dict[str, Any] = {"skills": list(self.skills)} if self.skills else {}
        if self.task is not None:
            options["task"] = self.task
        elif self.task_id is not None:
            options["task_id"] = self.task_id
        return options or None

    def sampling_params(self, base: SamplingParams) -> SamplingParams:
        """`base` (the runner's settings) with this episode's overrides."""
        return dataclasses.replace(base, **self.sampling) if self.sampling else base

    @cached_property  # a frozen dataclass: computed once, stored in the instance's __dict__
    def id(self) -> str:
        """A stable id: equal specs give equal ids, in any process and any run."""
        identity = json.dumps([self.env.key, self.task_id, self.seed, self.sample], default=str)
        return hashlib.sha256(identity.encode()).hexdigest()[:32]
