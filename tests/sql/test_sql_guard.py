"""The static check: one read-only statement, read in each engine's dialect."""

from __future__ import annotations

import pytest

from gfcr.envs.sql.engines.guard import check_query
from gfcr.errors import QueryError, UnsafeQueryError

DIALECTS = ("sqlite", "postgresql", "duckdb")

ALLOWED = [
    "SELECT 1",
    "select Name from Artist;",
    "SELECT Name FROM Artist WHERE Name = 'DROP TABLE Artist; --'",
    "WITH t AS (SELECT 1 AS a) SELECT a FROM t",
    "(SELECT 1) UNION ALL (SELECT 2)",
    "VALUES (1), (2)",
    "SELECT replace(Name, 'a', 'b') FROM Artist",
    "SELECT a FROM t -- DELETE FROM t\n",
    "SELECT /* ; DROP TABLE t */ 1",
]

REFUSED = [
    "DROP TABLE Artist",
    "DELETE FROM Artist",
    "UPDATE Artist SET Name = 'x'",
    "INSERT INTO Artist VALUES (999, 'x')",
    "CREATE TABLE x (a INTEGER)",
    "CREATE TEMP TABLE x AS SELECT 1",
    "ALTER TABLE Artist ADD COLUMN x INTEGER",
    "SELECT 1; DROP TABLE Artist",
    "SELECT 1; SELECT 2",
    "ATTACH DATABASE '/tmp/other.db' AS other",
    "PRAGMA writable_schema = 1",
    "SELECT load_extension('/tmp/evil.so')",
    "SELECT readfile('/etc/passwd')",
    "COPY Artist TO PROGRAM 'id'",
    "SELECT pg_read_file('/etc/passwd')",
    "SELECT set_config('default_transaction_read_only', 'off', false)",
    "SELECT * FROM dblink('host=x', 'SELECT 1') AS t(a int)",
    "SELECT lo_import('/etc/passwd')",
    "SELECT * FROM read_csv('/etc/passwd')",
    "INSTALL httpfs",
    "LOAD httpfs",
    "SET memory_limit = '100GB'",
    "SELECT * INTO copy_of_artist FROM Artist",
    "WITH d AS (DELETE FROM Artist RETURNING *) SELECT * FROM d",
    "EXPLAIN ANALYZE DELETE FROM Artist",
    "VACUUM INTO '/tmp/copy.db'",
    "BEGIN",
    "REPLACE INTO Artist VALUES (1, 'x')",
    "SELECT pg_advisory_lock(1)",
    "SELECT path FROM duckdb_databases()",
    "SELECT value FROM duckdb_settings() WHERE name = 'temp_directory'",
    "SELECT current_setting('temp_directory')",
]


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("sql", ALLOWED)
def test_read_only_queries_pass(sql, dialect):
    checked = check_query(sql, dialect)
    assert not checked.rstrip().endswith(";")


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("sql", REFUSED)
def test_writes_settings_files_and_other_databases_are_refused(sql, dialect):
    with pytest.raises(UnsafeQueryError):
        check_query(sql, dialect)


@pytest.mark.parametrize("sql", ["", "   ", ";", "SELECT 'unterminated"])
def test_unreadable_queries_say_so(sql):
    with pytest.raises(QueryError):
        check_query(sql, "sqlite")


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_lone_surrogate_is_named_not_sent_to_the_driver(dialect):
    with pytest.raises(QueryError, match=r"U\+D800 at character 8 is a lone surrogate"):
        check_query("SELECT '\ud800'", dialect)


def test_errors_name_what_was_refused():
    with pytest.raises(UnsafeQueryError, match="must start with SELECT, WITH or VALUES, not 'DROP'"):
        check_query("DROP TABLE Artist", "postgresql")
    with pytest.raises(UnsafeQueryError, match="'DELETE' is not allowed"):
        check_query("WITH d AS (DELETE FROM Artist RETURNING *) SELECT * FROM d", "postgresql")
    with pytest.raises(UnsafeQueryError, match=r"pg_read_file\(\) is not allowed"):
        check_query("SELECT pg_read_file('/etc/passwd')", "postgresql")
    with pytest.raises(UnsafeQueryError, match="one statement"):
        check_query("SELECT 1; SELECT 2", "duckdb")
