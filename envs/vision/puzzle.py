"""`Puzzle`: one generated visual question, what every kind's generator returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

AnswerKind = Literal["number", "choice", "text", "path"]
ANSWER_KINDS: tuple[AnswerKind, ...] = ("number", "choice", "text", "path")


@dataclass(frozen=True)
class Puzzle:
    """A question about a picture, its exact answer, and the scene that draws the picture.

    `answer_kind` says how an answer is checked (see `gfcr.envs.vision.verifier`): `"number"`
    (math's equivalence: 12, 12.0, 24/2, 40°), `"choice"` (one of `choices`, by its text or its
    letter), `"text"` (the same words) or `"path"` (moves through a maze, simulated). `scene` is
    JSON data: the kind's `draw` renders it at any resolution, and a path is checked against it.
    """

    question: str
    answer: str
    answer_kind: AnswerKind
    scene: dict[str, Any] = field(default_factory=dict)
    choices: tuple[str, ...] = ()
