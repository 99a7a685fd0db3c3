"""`SkillLibrary`: skills extracted from successful trajectories, persisted, retrieved by BM25.

Retrieval ranks skills by BM25 (via `bm25s`) between the query (a new task's prompt) and each
skill's name, description and body; an optional `encoder` (texts -> embedding rows) ranks by
cosine similarity instead. The library is a `Guide` (`guidance(query)`: the top skills as
prompt text, for `gfcr.generate.GuidedPolicy`) and a runner Replay hook (`store(trajectory)`:
extract skills from every successful trajectory).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
from sqlalchemy import JSON, Column, Integer, MetaData, String, Table, Text, delete, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import SQLAlchemyError

from gfcr.core import Trajectory, solved
from gfcr.errors import ConfigError, StorageError
from gfcr.skills.fragments import extract_patch, extract_sql_queries, verification
from gfcr.skills.skill import Skill, extract_functions, extract_tool_sequence
from gfcr.skills.tools import PREFIX
from gfcr.storage import open_database

# bm25s sets its own logger to DEBUG on import, so every index it builds would reach the run's log
logging.getLogger("bm25s").setLevel(logging.WARNING)

Encoder = Callable[[Sequence[str]], np.ndarray]  # texts -> (N, D) embeddings

metadata = MetaData()
table = Table(
    "skills",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("name", String(255), nullable=False),
    Column("kind", String(32), nullable=False),
    Column("description", Text, nullable=False),
    Column("body", Text, nullable=False),
    Column("source_task", String(255), nullable=False),
    Column("source_trajectory", String(128), nullable=False),
    Column("policy_version", String(255), nullable=False),
    Column("uses", Integer, nullable=False),
    Column("successes", Integer, nullable=False),
    Column("example", JSON, nullable=False),
    # nullable: a library written before they existed opens as it is (`add_missing_columns`)
    Column("category", String(255), nullable=True),
    Column("verification", JSON, nullable=True),
    Column("extracted_at", Integer, nullable=True),
    Column("last_used", Integer, nullable=True),
)
# what admitted a skill of each kind, where its extractor does not say
VERIFIED = {"tool_sequence": "episode solved", "function": "its tests passed"}


@dataclass(frozen=True)
class SkillConfig:
    """Where the library lives and how it extracts and retrieves."""

    url: str = "runs/skills.db"  # a SQLAlchemy URL, or a path for a SQLite file
    success_at: float = 1.0  # only trajectories with at least this total reward teach skills
    top_k: int = 3  # skills shown as guidance
    min_score: float = 0.0  # BM25 (or cosine) score a skill must exceed to be retrieved

    def __post_init__(self) -> None:
        if self.top_k < 1:
            raise ConfigError(f"top_k must be >= 1, got {self.top_k}")


class SkillLibrary:
    """Skills with provenance and success statistics.

    >>> from gfcr.core import Message, Step, ToolCall
    >>> library = SkillLibrary(SkillConfig(url="sqlite://"))
    >>> solved = Trajectory("e", "t1", "Price of a pear in EUR?", [Step("", "", 1.0, True, False)], messages=[
    ...     Message("assistant", "", (ToolCall("price", {"item": "pear"}),)), Message("tool", "2.0"),
    ...     Message("assistant", "", (ToolCall("convert", {"amount": 2.0, "currency": "EUR"}),))])
    >>> [s.name for s in library.extract(solved)]
    ['price+convert']
    >>> [s.name for s in library.retrieve("Price of a plum in GBP?")]
    ['price+convert']
    """

    def __init__(
        self, config: SkillConfig | str | Path | None = None, *, encoder: Encoder | None = None
    ) -> None:
        if not isinstance(config, SkillConfig):
            config = SkillConfig() if config is None else SkillConfig(url=str(config))
        self.config, self.encoder = config, encoder
        self.engine = open_database(config.url, metadata)
        self._lock = threading.Lock()
        self._skills: dict[str, Skill] = {}
        self._index: tuple[list[str], object] | None = None  # (skill ids, BM25 index or embeddings)
        names = [f.name for f in fields(Skill)]
        try:
            with self.engine.connect() as conn:
                for row in conn.execute(select(table)).mappings():
                    skill = Skill(**{k: row[k] for k in names if row[k] is not None})
                    self._skills[skill.id] = skill
        except SQLAlchemyError as e:
            raise StorageError(f"skill library {config.url!r}: read failed: {e}") from e

    def __len__(self) -> int:
        return len(self._skills)

    def __iter__(self) -> Iterator[Skill]:
        return iter(list(self._skills.values()))

    def get(self, skill_id: str) -> Skill:
        return self._skills[skill_id]

    def add(self, skill: Skill) -> Skill:
        """Keep `skill`; a skill already known (same procedure or code) is kept as first found."""
        with self._lock:
            if skill.id in self._skills:
                return self._skills[skill.id]
            row = {f.name: getattr(skill, f.name) for f in fields(Skill)} | {"id": skill.id}
            self._write(lambda conn: conn.execute(table.insert(), [row]))
            self._skills[skill.id] = skill
            self._index = None
            return skill

    def extract(self, trajectory: Trajectory, *, step: int = 0, category: str = "") -> list[Skill]:
        """Add the skills of a successful trajectory (none from a failed one): helper functions,
        its tool-call procedure, SQL queries that executed, a patch that passed; each with the
        verification that admitted it, the task's `category` and the library's `step`. Returns
        them (a skill already known as it was)."""
        if trajectory.status != "ok" or not solved(trajectory.total_reward, self.config.success_at):
            return []
        fragments = [*extract_sql_queries(trajectory), *filter(None, [extract_patch(trajectory)])]
        # where the env verified fragments, they are the reusable part, not the calls that carried them
        procedure = None if fragments else extract_tool_sequence(trajectory)
        if procedure is not None and any(step["name"].startswith(PREFIX) for step in procedure.steps):
            procedure = None  # it called a skill's tool: a use of that skill (counted), not a new one
        found = [*extract_functions(trajectory), *fragments, *filter(None, [procedure])]
        return [
            self.add(
                dataclasses.replace(
                    skill,
                    category=category,
                    verification=skill.verification or verification(trajectory, VERIFIED[skill.kind]),
                    extracted_at=step,
                    last_used=step,
                )
            )
            for skill in found
        ]

    def store(self, trajectory: Trajectory) -> None:
        """Runner Replay hook: learn skills from each finished trajectory."""
        self.extract(trajectory)

    def record(self, skill_id: str, success: bool, *, step: int | None = None) -> None:
        """Count one episode that used the skill, and whether it succeeded (at the library's
        `step`: the skill was last used then)."""
        with self._lock:
            skill = self._skills[skill_id]
            skill.uses += 1
            skill.successes += int(success)
            skill.last_used = skill.last_used if step is None else step
            values = {"uses": skill.uses, "successes": skill.successes, "last_used": skill.last_used}
            statement = update(table).where(table.c.id == skill_id).values(**values)
            self._write(lambda conn: conn.execute(statement))

    def remove(self, skill_id: str) -> None:
        """Forget a skill (e.g. one whose success rate fell too low)."""
        with self._lock:
            self._write(lambda conn: conn.execute(delete(table).where(table.c.id == skill_id)))
            self._skills.pop(skill_id, None)
            self._index = None

    def retrieve(self, query: str, k: int | None = None) -> list[Skill]:
        """The `k` skills most similar to `query`, best first (ties: higher success rate)."""
        k = k or self.config.top_k
        with self._lock:
            if not self._skills:
                return []
            ids, index = self._index or self._build_index()
            scores = self._scores(index, query)  # (N,)
        order = sorted(range(len(ids)), key=lambda i: (-scores[i], -self._skills[ids[i]].success_rate))
        return [self._skills[ids[i]] for i in order[:k] if scores[i] > self.config.min_score]

    def guidance(self, query: str) -> str:
        """Guide protocol: the retrieved skills as prompt text ("" when none match)."""
        skills = self.retrieve(query)
        if not skills:
            return ""
        return "Skills that solved similar tasks:\n\n" + "\n\n".join(s.render() for s in skills)

    def state_dict(self) -> dict[str, Any]:
        """Every skill with its provenance and statistics, in the library's order, as plain data
        (a checkpoint's part): a library that loads it retrieves and guides as this one does.

        >>> library = SkillLibrary("sqlite://")
        >>> _ = library.add(Skill("add", "function", "adds", "def add(a, b): return a + b"))
        >>> again = SkillLibrary("sqlite://")
        >>> again.load_state_dict(library.state_dict())
        >>> [s.name for s in again.retrieve("add two numbers")]
        ['add']
        """
        with self._lock:
            return {"skills": [asdict(skill) for skill in self._skills.values()]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Hold exactly the skills of `state` (the stored ones are replaced), in its order."""
        skills = [Skill(**dict(row)) for row in state["skills"]]
        rows = [{**asdict(skill), "id": skill.id} for skill in skills]

        def replace(conn: Connection) -> None:
            conn.execute(delete(table))
            if rows:
                conn.execute(table.insert(), rows)

        with self._lock:
            self._write(replace)
            self._skills = {skill.id: skill for skill in skills}
            self._index = None

    def _build_index(self) -> tuple[list[str], object]:
        ids = list(self._skills)
        documents = [_document(self._skills[i]) for i in ids]
        if self.encoder is not None:
            self._index = (ids, _normalise(np.asarray(self.encoder(documents), dtype=np.float32)))
        else:
            bm25 = bm25s.BM25()
            bm25.index(_tokenize(documents), show_progress=False)
            self._index = (ids, bm25)
        return self._index

    def _scores(self, index: object, query: str) -> np.ndarray:
        if self.encoder is not None:
            return index @ _normalise(np.asarray(self.encoder([query]), dtype=np.float32))[0]  # type: ignore[operator]
        return index.get_scores(_tokenize([query])[0])  # type: ignore[attr-defined]

    def _write(self, work: Callable[[Connection], object]) -> None:
        try:
            with self.engine.begin() as conn:
                work(conn)
        except SQLAlchemyError as e:
            raise StorageError(f"skill library {self.config.url!r}: write failed: {e}") from e

    def close(self) -> None:
        self.engine.dispose()


def _document(skill: Skill) -> str:
    body = " ".join(step["name"] for step in skill.steps) if skill.kind == "tool_sequence" else skill.body
    return f"{skill.name.replace('+', ' ').replace('_', ' ')} {skill.description} {body}"


def _tokenize(texts: list[str]) -> list[list[str]]:
    return bm25s.tokenize(texts, stopwords="en", return_ids=False, show_progress=False)


def _normalise(rows: np.ndarray) -> np.ndarray:
    return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
