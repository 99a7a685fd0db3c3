"""`Database`: one database as the agent sees it — guarded queries, capped results, cached gold.

Every query passes the static check (`guard.check_query`) and then runs under its engine's own
guards (`drivers`); results keep the engine's row order and duplicates. `execution_match` is
the public one-call form of "does this predicted SQL give the gold SQL's result?".
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from gfcr.envs.sql.data.schema import DIALECTS, Dialect
from gfcr.envs.sql.engines.drivers import RawResult, reader_engine, run_query
from gfcr.envs.sql.engines.normalize import Row, normalize_rows
from gfcr.envs.sql.engines.query_check import check_query
from gfcr.envs.sql.matching import FLOAT_TOL, match_normalized, order_matters
from gfcr.errors import ConfigError, DataError, QueryError

DEFAULT_TIMEOUT_S = 5.0
MAX_GOLD_ROWS = 100_000
# The database's own tables and views (PostgreSQL's information_schema also lists the system
# views every role may read; DuckDB's lists none).
_OWN_TABLES = (
    "SELECT table_name FROM information_schema.tables "
    "WHERE table_schema NOT IN ('pg_catalog', 'information_schema')"
)
_TABLE_LISTING: dict[str, str] = {
    "sqlite": "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')",
    "duckdb": _OWN_TABLES,
    "postgresql": _OWN_TABLES,
}


@dataclass(frozen=True)
class GoldResult:
    """A gold query's normalised rows and whether their order counts (outermost ORDER BY)."""

    rows: list[Row]
    ordered: bool


@dataclass(frozen=True)
class MatchReport:
    """The verdict on a predicted query: did it run, does it match, and if not, why."""

    executed: bool
    match: bool
    error: str | None = None
    result: RawResult | None = None


class Database:
    """A database reached through a SQLAlchemy engine, queried only through the guards.

    >>> import sqlite3, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "demo.sqlite")
    >>> with sqlite3.connect(path) as c:
    ...     _ = c.executescript("CREATE TABLE t (a INTEGER, b TEXT); INSERT INTO t VALUES (1, 'x'), (2, 'y')")
    >>> db = Database.from_url(f"sqlite:///{path}")
    >>> db.execute("SELECT b, a FROM t ORDER BY a").rows
    [('x', 1), ('y', 2)]
    >>> db.check("SELECT a, b FROM t", "SELECT b, a FROM t").match
    True
    >>> db.check("DELETE FROM t", "SELECT a FROM t").error
    "only read-only queries are allowed: a query must start with SELECT, WITH or VALUES, not 'DELETE'"
    """

    def __init__(self, engine: sa.Engine, name: str = "") -> None:
        dialect = engine.dialect.name
        if dialect not in DIALECTS:
            raise ConfigError(f"unsupported engine {dialect!r}; gfcr's SQL env runs on {', '.join(DIALECTS)}")
        self.engine = engine
        self.name = name or (engine.url.database or "")
        self.dialect: Dialect = dialect  # type: ignore[assignment]  # checked just above
        self._gold: dict[str, GoldResult] = {}
        self._tables: frozenset[str] | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_url(cls, url: str | sa.URL, name: str = "") -> Database:
        """A database opened read-only at `url` (see `drivers.reader_engine`)."""
        return cls(reader_engine(url), name)

    def execute(
        self, sql: str, *, max_rows: int = 1_000, timeout_s: float = DEFAULT_TIMEOUT_S, check: bool = True
    ) -> RawResult:
        """Run one read-only query; `QueryError` (or `UnsafeQueryError`) says why one fails.

        `check=False` skips the static check (tests use it to show the engine's own guards hold).
        """
        if check:
            sql = check_query(sql, self.dialect, self.tables())
        return run_query(self.engine, sql, max_rows=max_rows, timeout_s=timeout_s)

    def tables(self) -> frozenset[str]:
        """The names of the database's own tables and views: all that agent queries may read."""
        if self._tables is None:
            listing = _TABLE_LISTING[self.dialect]
            result = run_query(self.engine, listing, max_rows=MAX_GOLD_ROWS, timeout_s=60)
            self._tables = frozenset(name for (name,) in result.rows)
        return self._tables

    def gold(self, sql: str, *, timeout_s: float = 60.0) -> GoldResult:
        """The gold query's result (cached: a gold query runs once per database and process)."""
        with self._lock:
            cached = self._gold.get(sql)
        if cached is not None:
            return cached
        try:
            result = self.execute(sql, max_rows=MAX_GOLD_ROWS, timeout_s=timeout_s)
        except QueryError as e:
            raise DataError(f"the gold query fails on {self.dialect} ({self.name}): {e}\n{sql}") from e
        if result.truncated:
            raise DataError(
                f"the gold query returns more than {MAX_GOLD_ROWS} rows; a gold result must be smaller"
            )
        gold = GoldResult(normalize_rows(result.rows), order_matters(sql, self.dialect))
        with self._lock:
            self._gold[sql] = gold
        return gold

    def check(
        self,
        pred_sql: str,
        gold_sql: str,
        *,
        float_tol: float = FLOAT_TOL,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> MatchReport:
        """Run `pred_sql` and compare its result with the gold query's (see `results_match`)."""
        gold = self.gold(gold_sql)
        try:  # a result with more rows than the gold's cannot match: fetch one more row at most
            result = self.execute(pred_sql, max_rows=len(gold.rows), timeout_s=timeout_s)
        except QueryError as e:
            return MatchReport(executed=False, match=False, error=str(e))
        if result.truncated:
            return MatchReport(True, False, None, result)
        match = match_normalized(
            normalize_rows(result.rows), gold.rows, order_matters=gold.ordered, float_tol=float_tol
        )
        return MatchReport(True, match, None, result)

    def close(self) -> None:
        self.engine.dispose()


_OPEN: dict[tuple[int, Any], Database] = {}
_OPEN_LOCK = threading.Lock()


def connect(engine_or_url: sa.Engine | str | sa.URL) -> Database:
    """The process's `Database` for an engine or URL (opened once per process, fork-safe)."""
    key = (os.getpid(), id(engine_or_url) if isinstance(engine_or_url, sa.Engine) else str(engine_or_url))
    with _OPEN_LOCK:
        database = _OPEN.get(key)
        if database is None or (
            isinstance(engine_or_url, sa.Engine) and database.engine is not engine_or_url
        ):
            database = (
                Database(engine_or_url)
                if isinstance(engine_or_url, sa.Engine)
                else Database.from_url(engine_or_url)
            )
            _OPEN[key] = database
    return database


def execution_match(
    engine_or_url: sa.Engine | str | sa.URL,
    pred_sql: str,
    gold_sql: str,
    *,
    float_tol: float = FLOAT_TOL,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> bool:
    """Whether `pred_sql` gives the same result as `gold_sql` on the database at `engine_or_url`.

    A URL is opened read-only; an `Engine` you pass is used as it is, each query still guarded
    (static check, SQLite authorizer, PostgreSQL read-only transaction, timeouts). Results are
    compared as in `results_match`, with `order_matters` taken from the gold query's outermost
    ORDER BY. A predicted query that fails or is refused does not match.

    >>> import sqlite3, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "demo.sqlite")
    >>> with sqlite3.connect(path) as c:
    ...     _ = c.executescript("CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1), (2), (2);")
    >>> url = f"sqlite:///{path}"
    >>> execution_match(url, "SELECT a FROM t", "SELECT a FROM t ORDER BY a DESC")  # the gold's order counts
    False
    >>> execution_match(url, "SELECT DISTINCT a FROM t", "SELECT a FROM t")  # and so do duplicates
    False
    >>> execution_match(url, "SELECT a FROM t ORDER BY 1 DESC", "SELECT a FROM t ORDER BY a DESC")
    True
    """
    return connect(engine_or_url).check(pred_sql, gold_sql, float_tol=float_tol, timeout_s=timeout_s).match
