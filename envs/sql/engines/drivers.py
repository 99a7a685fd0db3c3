"""Engine-level safety: read-only reader engines, and one guarded query run per engine.

Whatever SQL reaches these functions (the static check of `guard` may be bypassed or wrong), the
engine itself refuses to change anything or to reach outside the database:

- SQLite: opened read-only (`mode=ro`), `PRAGMA query_only`, no attached databases
  (`SQLITE_LIMIT_ATTACHED` 0), strings and blobs of at most `SQLITE_MAX_VALUE_BYTES`
  (`SQLITE_LIMIT_LENGTH`), and an authorizer that allows only reading and harmless functions;
  a watchdog calls `interrupt()` at the deadline, and `printf`/`format` refuse a `%c` repeat
  longer than the length limit (see `_bounded_printf`). Temporary tables, sorts and indexes stay
  in memory (`PRAGMA temp_store = MEMORY`: no temporary files), under SQLite's hard heap limit.
- DuckDB: opened `read_only` with `enable_external_access = false` (no files, no extensions, no
  ATTACH), `lock_configuration = true` (settings cannot be changed back), `memory_limit` and no
  `temp_directory` (nothing spills to disk: a query that needs more memory fails); a watchdog
  calls `interrupt()` at the deadline. A `reader_engine`'s queries run in worker processes that are
  killed when a query outlives its limit (`duckdb_pool`): DuckDB notices `interrupt()` only
  between vectors, so one `repeat()`/`lpad()` call building a huge string would run on.
- PostgreSQL: a read-only transaction with `statement_timeout`, as a role that may only SELECT
  (see `postgres`), through a server-side cursor (`DECLARE … CURSOR` accepts one SELECT only and
  streams rows, so a huge result is never sent); a watchdog cancels as a last resort.
"""

from __future__ import annotations

import os
import re
import sqlite3
import weakref
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from itertools import count
from typing import Any
from urllib.parse import quote

import sqlalchemy as sa
from sqlalchemy import event

from gfcr.envs.sql.engines.duckdb_pool import DuckDBWorkers
from gfcr.envs.sql.engines.duckdb_worker import Reply
from gfcr.envs.sql.engines.query_check import FORBIDDEN_FUNCTIONS
from gfcr.envs.sql.engines.watchdog import WATCHDOG
from gfcr.errors import ConfigError, QueryError, UnsafeQueryError, needs_extra

SQLITE_MAX_VALUE_BYTES = 10_000_000  # the longest string or blob a SQLite query may build
# All the memory SQLite may use in this process (its page caches and every query's temporaries):
# `hard_heap_limit` is process-wide and the pragma only ever lowers it.
SQLITE_HEAP_LIMIT_BYTES = 1_000_000_000
# Per DuckDB worker; an empty temp_directory keeps DuckDB from spilling to disk.
DUCKDB_CONFIG = {
    "enable_external_access": False,
    "lock_configuration": True,
    "memory_limit": "1GB",
    "temp_directory": "",
}
# SQLite's glob() is the GLOB operator's pattern match; the name is refused for DuckDB's, which lists files.
_SQLITE_FORBIDDEN_FUNCTIONS = FORBIDDEN_FUNCTIONS - {"glob"}
_SQLITE_ALLOWED = {
    sqlite3.SQLITE_SELECT,
    sqlite3.SQLITE_READ,
    sqlite3.SQLITE_FUNCTION,
    sqlite3.SQLITE_RECURSIVE,
}
_SQLITE_SCHEMA_PRAGMAS = {
    "table_info",
    "table_xinfo",
    "table_list",
    "index_list",
    "index_info",
    "foreign_key_list",
}
# One printf conversion: flags, width, precision (digits or `*`, which takes an argument), type.
_PRINTF_SPEC = re.compile(r"%[-+ #!0,]*(\*|\d*)(?:\.(\*|\d*))?l{0,2}(.?)", re.DOTALL)
_CANCEL_GRACE_S = 1.0  # PostgreSQL's own statement_timeout fires first; the watchdog is a backstop
_cursor_names = count()
_DUCKDB_WORKERS: weakref.WeakKeyDictionary[sa.Engine, DuckDBWorkers] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class RawResult:
    """What one query gave: column names, up to `max_rows` rows, and whether there were more."""

    columns: tuple[str, ...]
    rows: list[tuple[Any, ...]]
    truncated: bool


def reader_engine(url: str | sa.URL) -> sa.Engine:
    """A SQLAlchemy engine on `url` that can only read (per-engine settings above).

    >>> dict(reader_engine("sqlite:////tmp/any.sqlite").url.query)
    {'mode': 'ro', 'uri': 'true'}
    """
    url = sa.make_url(url)
    backend = url.get_backend_name()
    if backend == "sqlite":
        path = url.database or ""
        if not path or path == ":memory:":
            raise ConfigError("a read-only SQLite engine needs a database file; got an in-memory URL")
        # SQLAlchemy passes `uri=true` to sqlite3 and keeps `mode=ro` in the file: URI
        engine = sa.create_engine(f"sqlite+pysqlite:///file:{quote(path)}?mode=ro&uri=true")
        event.listen(engine, "connect", _prepare_sqlite)
        return engine
    if backend == "duckdb":
        path = url.database or ""
        if not path or path == ":memory:":
            raise ConfigError("a read-only DuckDB engine needs a database file; got an in-memory URL")
        engine = sa.create_engine(url, connect_args={"read_only": True, "config": dict(DUCKDB_CONFIG)})
        workers = _DUCKDB_WORKERS[engine] = DuckDBWorkers(os.path.abspath(path), DUCKDB_CONFIG)
        event.listen(engine, "engine_disposed", lambda _engine: workers.close())
        return engine
    if backend == "postgresql":
        with needs_extra("the PostgreSQL engine"):  # sqlalchemy imports psycopg here
            return sa.create_engine(url.set(drivername="postgresql+psycopg"), pool_pre_ping=True)
    raise ConfigError(
        f"unsupported database URL {url.render_as_string()!r}; use sqlite:///, duckdb:/// or postgresql://"
    )


def run_query(engine: sa.Engine, sql: str, *, max_rows: int, timeout_s: float) -> RawResult:
    """Run one query on a connection from `engine` under its engine's guards (see the module doc)."""
    workers = _DUCKDB_WORKERS.get(engine)
    if workers is not None:
        return _duckdb_result(workers.run(sql, max_rows, timeout_s), timeout_s)
    runner = {"sqlite": _run_sqlite, "duckdb": _run_duckdb, "postgresql": _run_postgres}[engine.dialect.name]
    pooled = engine.raw_connection()
    try:
        return runner(pooled.dbapi_connection, sql, max_rows, timeout_s)
    finally:
        pooled.close()


# -- SQLite ---------------------------------------------------------------------------------------


def _prepare_sqlite(connection: sqlite3.Connection, _record: Any) -> None:
    connection.execute("PRAGMA query_only = ON")
    connection.execute("PRAGMA temp_store = MEMORY")  # sorts, DISTINCT, materialised CTEs: no temp files
    connection.execute(f"PRAGMA hard_heap_limit = {SQLITE_HEAP_LIMIT_BYTES}")
    connection.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, SQLITE_MAX_VALUE_BYTES)
    printf = _bounded_printf()
    for name in ("printf", "format"):  # an application function overrides the built-in one
        connection.create_function(name, -1, printf, deterministic=True)


def _bounded_printf() -> Callable[..., str | None]:
    """SQLite's own `printf`, but NULL at once when its `%c` repeats exceed the length limit.

    Older SQLite builds (3.40, Debian 12's, among them) write a `%.Nc` repeat one character at a
    time and keep looping after the result is over `SQLITE_LIMIT_LENGTH` (then return NULL):
    `printf('%.*c', 2147483647, 'x')` runs for about 15 s inside one VM instruction, where
    `interrupt()` cannot reach it.
    The repeat counts are read from the format (a `*` precision may take any argument's value:
    an over-estimate only gives NULL early); anything smaller is formatted by SQLite itself, on
    a private in-memory connection.
    """
    formatter = sqlite3.connect(":memory:", check_same_thread=False)
    formatter.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, SQLITE_MAX_VALUE_BYTES)

    def printf(template: Any = None, *args: Any) -> str | None:
        text = template.decode(errors="replace") if isinstance(template, bytes) else str(template)
        largest_argument = max((_c_int(arg) for arg in args), default=0)
        repeats = sum(
            largest_argument if precision == "*" else int(precision or 0) & 0x7FFF_FFFF
            for _width, precision, kind in _PRINTF_SPEC.findall(text)
            if kind == "c"
        )
        if repeats > SQLITE_MAX_VALUE_BYTES:
            return None
        placeholders = ", ".join("?" * (1 + len(args)))
        return formatter.execute(f"SELECT printf({placeholders})", (template, *args)).fetchone()[0]

    return printf


def _c_int(value: Any) -> int:
    """The size of `value` as SQLite's printf reads a `*` argument (a C int, sign dropped)."""
    if isinstance(value, str | bytes):
        digits = re.match(rb"\s*[-+]?\d+", value.encode() if isinstance(value, str) else value)
        value = int(digits[0]) if digits else 0
    number = int(value) if isinstance(value, int | float) and abs(value) < 2**63 else 0
    return abs((number + 2**31) % 2**32 - 2**31)  # int64 -> int32 as in C, then |precision|


def _authorize(action: int, arg1: str | None, arg2: str | None, _db: str | None, _trigger: str | None) -> int:
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in _SQLITE_FORBIDDEN_FUNCTIONS:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_PRAGMA:  # pragma_table_info('Track') and friends only read the schema
        return sqlite3.SQLITE_OK if (arg1 or "").lower() in _SQLITE_SCHEMA_PRAGMAS else sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK if action in _SQLITE_ALLOWED else sqlite3.SQLITE_DENY


def _run_sqlite(connection: sqlite3.Connection, sql: str, max_rows: int, timeout_s: float) -> RawResult:
    fired: list[bool] = []

    def interrupt() -> None:  # checked by SQLite at every loop step, even inside one long scan
        fired.append(True)
        connection.interrupt()

    connection.set_authorizer(_authorize)
    cursor = connection.cursor()
    try:
        with WATCHDOG.deadline(timeout_s, interrupt):
            cursor.execute(sql)
            rows = cursor.fetchmany(max_rows + 1)
            columns = tuple(d[0] for d in cursor.description or ())
    except MemoryError as e:  # sqlite3's SQLITE_NOMEM: the heap limit was reached
        with closing(sqlite3.connect(":memory:")) as probe:  # the limit is the process's, on any connection
            (limit,) = probe.execute("PRAGMA hard_heap_limit").fetchone()
        cap = f"at most {limit / 1e6:g} MB in this process" if limit else "no memory was left"
        raise _out_of_memory("SQLite", cap) from e
    except (sqlite3.Error, OverflowError) as e:
        if fired:
            raise _timeout(timeout_s) from e
        if any(
            word in str(e) for word in ("not authorized", "authorization denied", "readonly", "one statement")
        ):
            raise UnsafeQueryError(f"refused by SQLite: {e} (queries may only read this database)") from e
        raise QueryError(f"SQLite error: {e}") from e
    finally:
        cursor.close()
        connection.set_authorizer(None)
        if connection.in_transaction:
            connection.rollback()
    return RawResult(columns, rows[:max_rows], len(rows) > max_rows)


# -- DuckDB ---------------------------------------------------------------------------------------


def _run_duckdb(connection: Any, sql: str, max_rows: int, timeout_s: float) -> RawResult:
    """In process, on a DuckDB engine gfcr did not open: `interrupt()` at the deadline only."""
    from gfcr.envs.sql.engines.duckdb_worker import run_query as run_duckdb_query

    reply = run_duckdb_query(connection, sql, max_rows, timeout_s, WATCHDOG.deadline)
    return _duckdb_result(reply, timeout_s)


def _duckdb_result(reply: Reply, timeout_s: float) -> RawResult:
    """The `RawResult` of a `duckdb_worker` reply, or the `QueryError` it stands for."""
    if reply[0] == "rows":
        _, columns, rows, truncated = reply
        return RawResult(columns, rows, truncated)
    _, kind, message = reply
    if kind == "time limit":
        raise _timeout(timeout_s)
    if kind == "memory limit":
        raise _out_of_memory("DuckDB", message)
    if kind == "refused":
        raise UnsafeQueryError(f"refused by DuckDB: {message} (queries may only read this database)")
    raise QueryError(f"DuckDB error: {message}")


# -- PostgreSQL -----------------------------------------------------------------------------------


def _run_postgres(connection: Any, sql: str, max_rows: int, timeout_s: float) -> RawResult:
    import psycopg

    milliseconds = max(1, int(timeout_s * 1000))
    try:
        with connection.cursor() as setup:
            setup.execute(f"SET TRANSACTION READ ONLY; SET LOCAL statement_timeout = {milliseconds}")
        with WATCHDOG.deadline(timeout_s + _CANCEL_GRACE_S, connection.cancel_safe):
            with connection.cursor(name=f"gfcr_{next(_cursor_names)}") as cursor:
                cursor.execute(sql)
                rows = cursor.fetchmany(max_rows + 1)
                columns = tuple(d.name for d in cursor.description or ())
    except psycopg.Error as e:
        message = (getattr(e.diag, "message_primary", None) or str(e)).splitlines()[0]
        if isinstance(e, psycopg.errors.QueryCanceled):
            raise _timeout(timeout_s) from e
        if isinstance(e, psycopg.errors.InsufficientPrivilege | psycopg.errors.ReadOnlySqlTransaction):
            raise UnsafeQueryError(
                f"refused by PostgreSQL: {message} (queries may only read this database)"
            ) from e
        raise QueryError(f"PostgreSQL error: {message}") from e
    finally:
        connection.rollback()
    return RawResult(columns, rows[:max_rows], len(rows) > max_rows)


def _out_of_memory(engine: str, detail: str) -> QueryError:
    return QueryError(
        f"the query needs more memory than {engine} may use here ({detail}); temporary results are "
        "kept in memory, never written to disk: simplify the query, add filters or aggregate sooner"
    )


def _timeout(seconds: float) -> QueryError:
    return QueryError(
        f"the query was stopped after the time limit of {seconds:g} s; simplify it or add filters"
    )
