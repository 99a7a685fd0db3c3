"""The task: one prompt x with the gold data its verifier and oracle need."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Task:
    """One task of an env: the prompt x and the gold data that checks an answer to it.

    `id` is unique within its env and stable across releases (`options={"task_id": id}` picks it);
    `gold` is whatever the env's verifier compares against (an answer, tests, gold SQL …);
    `source` names the dataset it came from, `metadata` holds the rest (level, category …). A task
    whose prompt shows an image names it in `metadata["image_key"]` (a scene's seed, a file path):
    two tasks with one question and other images are two prompts (held-out splits keep them apart).

    >>> Task(id="mmath/0", prompt="What is 1+1?", gold="2", source="mmath").id
    'mmath/0'
    """

    id: str
    prompt: str
    gold: Any = None
    source: str = ""
    metadata: dict[str, Any] = field(default_factory=dict, compare=False)
