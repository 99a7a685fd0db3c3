"""The SQL family's checker as a Filter `Verifier`: `gfcr/SQL-v0` grades with it, and so can anyone.

`SQLVerifier.review(task, query)` runs a query on the task's database and compares its result
with the gold query's (`Database.check`: rows as a multiset, in order when the gold has an
outermost ORDER BY, columns in any order, floats within `float_tol`), and says what happened in
words; `check` gives the verdict alone, and `verify(task, trajectory)` re-judges a saved
trajectory by re-executing its final submitted SQL (see `submitted_sql`). The signals are the
env's own: `format_ok`, `executed`, `match`.

>>> from gfcr.envs.sql import SQLEnv
>>> task = SQLEnv(dataset="chinook").tasks.get("chinook/001")
>>> verifier = SQLVerifier()
>>> verifier.check(task, "SELECT COUNT(*) FROM Track")
Verdict(reward=1.0, passed=True, signals={'format_ok': True, 'executed': True, 'match': True})
>>> verifier.check(task, "SELECT COUNT(*) FROM Album").reward
0.0
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gfcr.core import Task, Trajectory, Verdict, parse_action
from gfcr.envs.sql.data.catalog import EngineSpec, open_database
from gfcr.envs.sql.engines.database import DEFAULT_TIMEOUT_S, Database
from gfcr.envs.sql.matching import FLOAT_TOL
from gfcr.errors import ConfigError

_SQL_BLOCK = re.compile(r"```(?:sql|SQL|postgresql|sqlite|duckdb)?[ \t]*\n?(.*?)```", re.DOTALL)
_BARE_SQL = re.compile(r"^\s*(SELECT|WITH|VALUES)\b", re.IGNORECASE)
NOTHING_SUBMITTED: dict[str, float | bool] = {"format_ok": False, "executed": False, "match": False}


def extract_sql(text: str) -> str | None:
    """The SQL of a reply: its last ```sql block, else the whole text if it starts with SELECT/WITH/VALUES.

    >>> extract_sql("Here:\\n```sql\\nSELECT 1\\n```"), extract_sql("SELECT 2;"), extract_sql("no idea")
    ('SELECT 1', 'SELECT 2;', None)
    """
    if not isinstance(text, str):
        return None
    blocks = [block.strip() for block in _SQL_BLOCK.findall(text) if block.strip()]
    if blocks:
        return blocks[-1]
    return text.strip() if _BARE_SQL.match(text) else None


def submitted_sql(trajectory: Trajectory, mode: str = "multi_turn") -> str | None:
    """The query `gfcr/SQL-v0` graded at the end of `trajectory` (None: nothing was submitted).

    Multi-turn: the query of the first `submit_sql` call of the last reply (the env runs no call
    after it), and none when that reply's tool calls cannot be parsed (the env ran none of them).
    Single-turn (`mode="single_turn"`): the reply's last ```sql block.

    >>> from gfcr.core import Step
    >>> call = '<tool_call>{"name": "submit_sql", "arguments": {"query": "SELECT 1"}}</tool_call>'
    >>> submitted_sql(Trajectory("e", "t", "?", [Step(call, "", 1.0, True, False)]))
    'SELECT 1'
    >>> submitted_sql(Trajectory("e", "t", "?", [Step("```sql\\nSELECT 2\\n```", "", 0.0, True, False)]),
    ...               "single_turn")
    'SELECT 2'
    """
    replies = [m for m in trajectory.messages if m.role == "assistant"]
    if replies:
        text, calls = replies[-1].text, tuple(replies[-1].tool_calls)
    elif trajectory.steps:
        text, calls = trajectory.steps[-1].action, ()
    else:
        return None
    if not isinstance(text, str):
        return None
    if mode == "single_turn":
        return extract_sql(text)
    if not calls:  # calls a server parsed natively are in the message; others are still text
        parsed, errors = parse_action(text)
        if errors:
            return None
        calls = parsed.tool_calls
    submit = next((call for call in calls if call.name == "submit_sql"), None)
    if submit is None or set(submit.arguments) != {"query"}:
        return None  # submit_sql(...) with other arguments is refused by the env, never graded
    query = submit.arguments["query"]
    return query if isinstance(query, str) else None


MATCHED_GOLD = "<result matches the gold query's>"  # the one cluster of every correct submission


def submitted_answer(trajectory: Trajectory) -> str | None:
    """What a submission means, for semantic clusters: `MATCHED_GOLD` for a query whose result
    matched the gold's (equal results: one meaning), else the graded query, whitespace
    collapsed; None when the env graded nothing (the episode did not end on a submission).

    >>> from gfcr.core import Step
    >>> reply = Step("```sql\\nSELECT  1\\n```", "", 0.0, True, False, {"match": False})
    >>> submitted_answer(Trajectory("gfcr/SQL-v0", "t", "?", [reply]))
    'SELECT 1'
    """
    if not trajectory.steps or not trajectory.steps[-1].terminated:
        return None
    if trajectory.signals.get("match"):
        return MATCHED_GOLD
    # The trajectory does not say its mode: a multi-turn submission is a submit_sql call, a
    # single-turn answer a reply without one.
    query = submitted_sql(trajectory) or submitted_sql(trajectory, "single_turn")
    return " ".join(query.split()) if query else None


@dataclass
class SQLVerifier:
    """Reward 1.0 when a query's result matches the gold query's on the task's database, else 0.0.

    `engine`: as `SQLEnv`'s keyword ("sqlite", "duckdb", "postgresql" or a PostgreSQL URL);
    None runs each task on the engine it was made for (`task.metadata["dialect"]`). `databases`
    maps the name of a Spider/BIRD database to its SQLite file (bundled databases are built on
    first use, in `cache_dir`). A query that fails, is refused or is missing is a 0.0 verdict;
    a database that cannot be reached (no PostgreSQL server) raises `gfcr.errors.ConfigError`.
    """

    engine: str | None = None
    cache_dir: str | Path | None = None
    databases: Mapping[str, Path] = field(default_factory=dict)
    float_tol: float = FLOAT_TOL
    timeout_s: float = DEFAULT_TIMEOUT_S
    _spec: EngineSpec | None = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        self._spec = None if self.engine is None else EngineSpec.parse(self.engine, self.cache_dir)

    def verify(self, task: Task, trajectory: Trajectory) -> Verdict:
        query = submitted_sql(trajectory, task.metadata.get("mode", "multi_turn"))
        if query is None:
            return Verdict(0.0, False, dict(NOTHING_SUBMITTED))
        return self.check(task, query)

    def check(self, task: Task, query: str) -> Verdict:
        """The verdict on one submitted query."""
        return self.review(task, query)[0]

    def review(self, task: Task, query: str) -> tuple[Verdict, str]:
        """The verdict on `query`, and what happened in words (for the agent)."""
        report = self.database(task).check(
            query, str(task.gold), float_tol=self.float_tol, timeout_s=self.timeout_s
        )
        if report.error is not None:
            text = f"Your query failed: {report.error}"
        elif report.match:
            text = "Your query's result is correct."
        else:
            text = "Your query ran, but its result does not match the expected result."
        signals: dict[str, Any] = {"format_ok": True, "executed": report.executed, "match": report.match}
        return Verdict(1.0 if report.match else 0.0, report.match, signals), text

    def database(self, task: Task) -> Database:
        """The task's database, opened read-only (once per process)."""
        name = task.metadata.get("database")
        if not name:
            raise ConfigError(f"task {task.id!r} names no database in metadata['database']; not an SQL task")
        spec = self._spec or EngineSpec.parse(task.metadata.get("dialect", "sqlite"), self.cache_dir)
        byo_file = self.databases.get(name)
        return open_database(spec, name, None if byo_file is None else Path(byo_file))
