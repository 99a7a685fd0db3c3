"""`SQLQuestion`: a question over a database with its gold SQL, the unit the SQL env's tasks are made of.

Gold SQL is written once in SQL that SQLite, PostgreSQL and DuckDB all run; where the engines
differ (date functions) a question carries the engine's own form in `dialect_sql`.
`gfcr.envs.sql.data.validate` checks every gold query on every engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from gfcr.envs.sql.data.schema import Dialect

Difficulty = Literal["easy", "medium", "hard"]
FEATURES = frozenset(
    {
        "filter", "sort", "limit", "aggregate", "group", "having", "join", "left_join", "self_join",
        "subquery",
        "correlated", "cte", "window", "date", "set_op", "case", "null", "distinct", "string",
    }
)  # fmt: skip


@dataclass(frozen=True)
class SQLQuestion:
    """One question: its id, database, text, gold SQL, difficulty and the SQL features it needs.

    >>> q = SQLQuestion("demo/1", "chinook", "How many artists?", "SELECT COUNT(*) FROM Artist", "easy", ())
    >>> q.gold_for("duckdb")
    'SELECT COUNT(*) FROM Artist'
    """

    id: str
    database: str
    question: str
    sql: str
    difficulty: Difficulty
    features: tuple[str, ...]
    dialect_sql: dict[str, str] = field(default_factory=dict)
    evidence: str = ""  # a hint that goes with the question (BIRD's "evidence")

    def __post_init__(self) -> None:
        unknown = set(self.features) - FEATURES
        if unknown:
            raise ValueError(f"{self.id}: unknown features {sorted(unknown)}; known: {sorted(FEATURES)}")

    def gold_for(self, dialect: Dialect) -> str:
        """The gold SQL for `dialect` (its own form if it has one, else the shared one)."""
        return self.dialect_sql.get(dialect, self.sql).strip()
