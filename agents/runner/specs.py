"""Which episodes to run: `EpisodeSpec`, and builders for an env's tasks or a suite's.

An episode is identified by its env configuration, task, seed and sample number; its `id`
(a hash of those) becomes the trajectory id, so a resumed run knows what it already wrote.

>>> specs = episodes_for_env("gfcr/Math-v0", 3, kwargs={"split": "AIME2024"})
>>> again = episodes_for_env("gfcr/Math-v0", 1, kwargs={"split": "AIME2024"})
>>> len(specs), len({s.id for s in specs}), specs[0].id == again[0].id
(3, 3, True)
"""

from __future__ import annotations

import inspect
import logging
import random
from collections.abc import Collection, Sequence
from typing import Any

import gymnasium as gym

from gfcr.core import Task
from gfcr.core.episode import EnvConfig, EpisodeSpec
from gfcr.errors import ConfigError, UnknownNameError
from gfcr.registry import env_class, list_envs
from gfcr.suites import Suite, make_suite

logger = logging.getLogger(__name__)


def env_config(env_id: str, kwargs: dict[str, Any] | None = None) -> EnvConfig:
    """The configuration of a registered env, with its entry point (so workers can register it).

    Keywords the env was registered with (`register_env(id, entry, kwargs={...})`) are part of the
    configuration, under the ones given here: a worker process that registers the env from its
    entry point alone makes the same env.
    """
    if env_id not in gym.registry:
        raise UnknownNameError("env id", env_id, list_envs(), hint="see `gfcr list`")
    spec = gym.spec(env_id)
    return EnvConfig(env_id, {**spec.kwargs, **(kwargs or {})}, spec.entry_point)


def episodes_for_env(
    env_id: str,
    num_episodes: int,
    *,
    kwargs: dict[str, Any] | None = None,
    seed: int = 0,
    skip: int = 0,
    pool: int | None = None,
    exclude: Collection[str] = (),
) -> list[EpisodeSpec]:
    """`num_episodes` episodes over distinct tasks in a seeded order (repeated if fewer tasks);
    episode i has seed `seed + i`.

    `skip` leaves out the first tasks of the order and `pool` keeps only that many after them, so
    that one seed splits an env's tasks: a training pool (`pool=N`) and a held-out set
    (`skip=N`), which never share a task — nor a prompt: a task whose prompt is also a skipped
    task's (procedural generators repeat questions) is left out of the held-out set too. A prompt
    that shows an image is the question and the image (`Task.metadata["image_key"]`): one question
    about other pictures is another prompt.
    `exclude` leaves out the tasks with these ids (and their prompts) too: another env's
    training pool, when one env's kwargs train and another's evaluate.

    >>> train = episodes_for_env("gfcr/Math-v0", 40, kwargs={"split": "AIME2024"}, pool=20)
    >>> held_out = episodes_for_env("gfcr/Math-v0", 10, kwargs={"split": "AIME2024"}, skip=20)
    >>> len({s.task_id for s in train}), {s.task_id for s in train} & {s.task_id for s in held_out}
    (20, set())
    """
    if num_episodes < 1:
        raise ConfigError(f"num_episodes must be >= 1, got {num_episodes}")
    config = env_config(env_id, kwargs)
    env = gym.make(env_id, **config.kwargs)
    tasks = env.unwrapped.tasks  # type: ignore[attr-defined]  # every gfcr env is a TextEnv
    order = list(range(len(tasks)))
    random.Random(seed).shuffle(order)
    env.close()
    excluded = [i for i in map(tasks.index_of, exclude) if i is not None]
    seen = {_shown(tasks[i]) for i in [*order[:skip], *excluded]}
    order = [i for i in order[skip:] if not seen or _shown(tasks[i]) not in seen][:pool]
    if not order:
        raise ConfigError(
            f"{env_id} has {len(tasks)} tasks: none is left after skipping {skip} (and their prompts); "
            "lower the training pool (e.g. [env] num_tasks) so that held-out tasks remain"
        )
    return [
        EpisodeSpec(config, tasks[order[i % len(order)]].id, seed + i, sample=i // len(order))
        for i in range(num_episodes)
    ]


def _shown(task: Task) -> tuple[str, Any]:
    """What a task's prompt shows: its text, and the identity of its image where it shows one."""
    return task.prompt, task.metadata.get("image_key")


def episodes_for_suite(suite: Suite, k: int = 1, *, seed: int = 0) -> list[EpisodeSpec]:
    """`k` samples of every task of `suite`; sample j has seed `seed + j` — unless the task's entry
    fixes its own samples (`SuiteEntry.k` or `SuiteEntry.seeds`)."""
    if k < 1:
        raise ConfigError(f"k (samples per task) must be >= 1, got {k}")
    specs = []
    for entry, task_id in suite.tasks():
        config = env_config(entry.env_id, entry.kwargs)
        seeds = entry.sample_seeds(k, seed)
        specs += [EpisodeSpec(config, task_id, sample_seed, sample=j) for j, sample_seed in enumerate(seeds)]
    return specs


def task_specs(
    env_id_or_suite: str, n: int | None = None, *, seed: int = 0, kwargs: dict[str, Any] | None = None
) -> list[EpisodeSpec]:
    """One spec per task: an env's tasks in a seeded order (`n` of them, or all), or a suite's in its
    order — the rows other trainers' datasets are made of (`gfcr.integrations`).

    >>> [s.task_id for s in task_specs("gfcr/ToolUse-v0", 2, kwargs={"num_tasks": 5})]
    ['tooluse/2', 'tooluse/1']
    """
    kwargs = dict(kwargs or {})
    if n is not None and n < 1:
        raise ConfigError(f"n must be >= 1 (or None for every task), got {n}")
    if env_id_or_suite in gym.registry:
        if n is None:
            env = gym.make(env_id_or_suite, **kwargs)
            n = len(env.unwrapped.tasks)  # type: ignore[attr-defined]  # every gfcr env is a TextEnv
            env.close()
        return episodes_for_env(env_id_or_suite, n, kwargs=kwargs, seed=seed)
    if kwargs:
        raise ConfigError(
            f"suite {env_id_or_suite!r} fixes its envs' keywords; got {sorted(kwargs)}: drop them"
        )
    specs = episodes_for_suite(make_suite(env_id_or_suite), seed=seed)  # an unknown name lists suites
    return specs[:n] if n is not None else specs


def warn_on_step_budgets(specs: Sequence[EpisodeSpec], env_timeout_s: float) -> list[str]:
    """Warn about each env whose step budget (`step_time_s`, given or its default) is over half of
    the runner's `env_timeout_s`; the warnings, as logged.

    A step's tool calls may take `step_time_s`; the rest of `env_timeout_s` is for the env's own
    work in the step (a verdict, a page read). Without it, an agent that stalls can turn its
    step into an `env timeout` — an infrastructure failure, which resumed runs repeat and
    comparisons drop — instead of its own truncation.

    >>> warn_on_step_budgets(episodes_for_env("gfcr/ToolUse-v0", 1, kwargs={"step_time_s": 20}), 30.0)
    ['gfcr/ToolUse-v0: step_time_s=20 is over half of env_timeout_s=30: ...']
    """
    warnings, seen = [], set()
    for spec in specs:
        config = spec.env
        if config.key in seen:
            continue
        seen.add(config.key)
        if config.env_id not in gym.registry:  # made from its entry point in the workers alone
            continue
        parameter = inspect.signature(env_class(config.env_id)).parameters.get("step_time_s")
        step_time_s = config.kwargs.get("step_time_s", parameter.default if parameter else None)
        if isinstance(step_time_s, int | float) and step_time_s > env_timeout_s / 2:
            warnings.append(
                f"{config.env_id}: step_time_s={step_time_s:g} is over half of "
                f"env_timeout_s={env_timeout_s:g}: an agent that stalls may make its step an infrastructure "
                "failure (env timeout) instead of its own truncation; raise env_timeout_s or lower "
                "step_time_s (-e step_time_s=...)"
            )
            logger.warning(warnings[-1])
    return warnings
