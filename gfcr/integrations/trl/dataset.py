"""The prompts of gfcr tasks as a `datasets.Dataset` for TRL's `GRPOTrainer`."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import gymnasium as gym

from gfcr.agents.runner.specs import task_specs
from gfcr.core import Message
from gfcr.errors import ConfigError

if TYPE_CHECKING:
    from datasets import Dataset

INSTALL = "pip install -e '.[trl]'"


def dataset(
    env_id_or_suite: str, *, split: str | None = None, n: int | None = None, seed: int = 0, **env_kwargs: Any
) -> Dataset:
    """The prompts of an env's tasks (or a suite's) as a `datasets.Dataset` for `GRPOTrainer`.

    Columns: `prompt` (the env's reset messages, OpenAI chat format: a prompt's images are
    `image_url` parts holding `data:` URLs, which transformers' processors read; where any row shows
    images every message's content is a list of parts, the one shape Arrow can store), `task_id`,
    `env_id` and `env_kwargs` (JSON of the `gymnasium.make` keywords). For an env, `n` tasks in a seeded order
    (every task if None; `split=X` is the env keyword `split=X`); for a suite, its first `n` tasks.

    >>> rows = dataset("gfcr/ToolUse-v0", n=2, num_tasks=10)
    >>> rows.column_names, rows[0]["prompt"][-1]["role"]
    (['prompt', 'task_id', 'env_id', 'env_kwargs'], 'user')
    """
    try:
        from datasets import Dataset
    except ImportError as e:
        raise ConfigError(f"gfcr.integrations.trl.dataset needs the `datasets` package: {INSTALL}") from e
    if split is not None:
        env_kwargs["split"] = split
    specs = task_specs(env_id_or_suite, n, seed=seed, kwargs=env_kwargs)
    envs: dict[str, gym.Env] = {}
    rows = []
    for spec in specs:
        if spec.env.key not in envs:
            envs[spec.env.key] = gym.make(spec.env.env_id, **spec.env.kwargs)
        _, info = envs[spec.env.key].reset(options={"task_id": spec.task_id})
        rows.append(
            {
                "prompt": info["messages"],  # made OpenAI's below, once every row is known
                "task_id": info["task"].id,
                "env_id": spec.env.env_id,
                "env_kwargs": kwargs_json(spec.env.kwargs),
            }
        )
    for env in envs.values():
        env.close()
    as_parts = any(m.images for row in rows for m in row["prompt"])
    for row in rows:
        row["prompt"] = [openai_message(m, as_parts) for m in row["prompt"]]
    return Dataset.from_list(rows)


def openai_message(message: Message, as_parts: bool = False) -> dict[str, Any]:
    """`message` in OpenAI's chat format; with `as_parts`, plain text content as one text part.

    >>> openai_message(Message("user", "hi"), as_parts=True)["content"]
    [{'type': 'text', 'text': 'hi'}]
    """
    out = message.to_openai()
    if as_parts and isinstance(out["content"], str):
        out["content"] = [{"type": "text", "text": out["content"]}]
    return out


def kwargs_json(kwargs: dict[str, Any]) -> str:
    """The `env_kwargs` column: the env's keywords as canonical JSON (rows and env classes compare it)."""
    return json.dumps(kwargs, sort_keys=True, default=str)
