"""Agent SQL never changes a database nor reaches files or other databases — on every engine.

Each attack runs twice: through the static check (refused with a message), and with the check
skipped (`check=False`), where the engine's own guards must hold. Afterwards the database is
unchanged and no file was written.
"""

from __future__ import annotations

import time

import pytest

from gfcr.errors import QueryError, UnsafeQueryError

COMMON = [
    "DROP TABLE Genre",
    "DELETE FROM Genre",
    "UPDATE Genre SET Name = 'pwned'",
    "INSERT INTO Genre VALUES (999, 'pwned')",
    "CREATE TABLE gfcr_pwned (a INTEGER)",
    "SELECT 1; DELETE FROM Genre",
    "SELECT 1; DROP TABLE Genre",
    "ALTER TABLE Genre ADD COLUMN pwned INTEGER",
]
PER_ENGINE = {
    "sqlite": [
        "ATTACH DATABASE '{tmp}/attached.db' AS other",
        "PRAGMA writable_schema = 1",
        "PRAGMA query_only = 0",
        "SELECT load_extension('{tmp}/evil')",
        "VACUUM INTO '{tmp}/copy.db'",
        "CREATE TEMP TABLE Genre AS SELECT 1 AS x",
        "REPLACE INTO Genre VALUES (1, 'pwned')",
    ],
    "duckdb": [
        "ATTACH '{tmp}/attached.duckdb' AS other",
        "COPY Genre TO '{tmp}/out.csv'",
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM read_text('/etc/passwd')",
        "INSTALL httpfs",
        "LOAD '{tmp}/evil.duckdb_extension'",
        "SET enable_external_access = true",
        "PRAGMA memory_limit = '100GB'",
        "EXPORT DATABASE '{tmp}/export'",
        "CREATE TEMP TABLE Genre AS SELECT 1 AS x",
    ],
    "postgresql": [
        "COPY Genre TO PROGRAM 'touch {tmp}/pwned'",
        "COPY Genre TO '{tmp}/out.csv'",
        "SELECT pg_read_file('/etc/passwd')",
        "SELECT pg_ls_dir('/')",
        "SELECT lo_import('/etc/passwd')",
        "CREATE EXTENSION dblink",
        "SELECT * FROM dblink('dbname=postgres', 'SELECT 1') AS t(a int)",
        "CREATE TEMP TABLE pwned AS SELECT 1",
        "WITH d AS (DELETE FROM Genre RETURNING *) SELECT * FROM d",
        "SELECT * INTO gfcr_pwned FROM Genre",
        "SELECT set_config('default_transaction_read_only', 'off', false)",
        "SELECT pg_terminate_backend(pg_backend_pid())",
        "SET default_transaction_read_only = off",
        "SELECT nextval('pwned_seq')",
    ],
}
ATTACKS = [(engine, sql) for engine in PER_ENGINE for sql in COMMON + PER_ENGINE[engine]]


def _state(database):
    genres = database.execute("SELECT GenreId, Name FROM Genre ORDER BY GenreId", max_rows=100).rows
    tables = len(_tables(database))
    return genres, tables


def _tables(database):
    if database.dialect == "sqlite":
        return database.execute("SELECT name FROM sqlite_master", max_rows=1000).rows
    return database.execute("SELECT table_name FROM information_schema.tables", max_rows=10_000).rows


@pytest.mark.parametrize(("engine_name", "sql"), ATTACKS, ids=[f"{e}:{s[:40]}" for e, s in ATTACKS])
def test_attacks_are_refused_and_change_nothing(databases, tmp_path, engine_name, sql):
    database = databases[engine_name]["chinook"]
    sql = sql.format(tmp=tmp_path)
    before = _state(database)
    with pytest.raises(UnsafeQueryError):
        database.execute(sql)
    try:  # the engine's own layer: it refuses, or (DuckDB TEMP tables) the effect dies with the query
        database.execute(sql, check=False)
    except QueryError:
        pass
    else:
        assert sql.startswith("CREATE TEMP TABLE") and engine_name == "duckdb", f"{engine_name} ran {sql!r}"
    after = _state(database)
    assert after == before
    assert after[0][0] == (1, "Rock") and len(after[0]) == 25
    assert list(tmp_path.iterdir()) == [], "the query wrote a file"


@pytest.mark.parametrize(
    "sql",
    [
        "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT COUNT(*) FROM r",
        "SELECT COUNT(*) FROM Track a, Track b, Track c",
    ],
)
def test_a_timeout_really_stops_long_queries(chinook_db, sql):
    for check in (True, False):
        started = time.monotonic()
        with pytest.raises(QueryError, match="time limit"):
            chinook_db.execute(sql, timeout_s=0.5, check=check)
        assert time.monotonic() - started < 4.0
    assert chinook_db.execute("SELECT COUNT(*) FROM Genre").rows == [(25,)]  # the connection still works


def test_postgres_sleep_is_stopped(databases):
    started = time.monotonic()
    with pytest.raises(QueryError, match="time limit"):
        databases["postgresql"]["chinook"].execute("SELECT pg_sleep(30)", timeout_s=0.5)
    assert time.monotonic() - started < 4.0


def test_results_are_capped_without_computing_everything(chinook_db):
    started = time.monotonic()
    result = chinook_db.execute("SELECT * FROM Track a, Track b", max_rows=50, timeout_s=10)
    assert len(result.rows) == 50 and result.truncated  # 12 million rows exist
    assert time.monotonic() - started < 5.0
    complete = chinook_db.execute("SELECT * FROM Genre", max_rows=25)
    assert len(complete.rows) == 25 and not complete.truncated


def test_values_that_grow_without_bound_are_stopped(chinook_db):
    sql = "WITH RECURSIVE r(x) AS (SELECT 'ab' UNION ALL SELECT x || x FROM r) SELECT LENGTH(x) FROM r"
    with pytest.raises(QueryError):
        chinook_db.execute(sql, max_rows=10_000, timeout_s=2)


def test_sqlite_glob_is_a_pattern_match_not_a_refusal(databases):
    sqlite = databases["sqlite"]["chinook"]  # DuckDB's glob() lists files; SQLite's matches text
    assert sqlite.execute("SELECT COUNT(*) FROM Artist WHERE Name GLOB 'A*'").rows == [(26,)]
