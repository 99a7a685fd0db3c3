"""The static check: one read-only statement, read in each engine's dialect."""

from __future__ import annotations

import pytest

from gfcr.envs.sql.engines.query_check import FORBIDDEN_FUNCTIONS, check_query
from gfcr.errors import QueryError, UnsafeQueryError

DIALECTS = ("sqlite", "postgresql", "duckdb")
TABLES = ("Artist", "Album", "Track", "t")  # what `Database` passes: the database's own tables

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
    'SELECT "Name" FROM "Artist" AS a WHERE a."ArtistId" > 1',
    "SELECT Artist.Name FROM main.Artist JOIN Album ON Album.ArtistId = Artist.ArtistId",
    "WITH a AS (SELECT ArtistId FROM Artist), b AS (SELECT * FROM a) SELECT * FROM b",
    "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r WHERE x < 3) SELECT x FROM r",
    "SELECT * FROM (WITH a AS (SELECT 1 AS x) SELECT x FROM a) AS s, Album",
    "SELECT Name, RANK() OVER (PARTITION BY ArtistId ORDER BY Name ROWS BETWEEN UNBOUNDED PRECEDING "
    "AND CURRENT ROW) FROM Artist",
    "SELECT ArtistId, COUNT(*) FILTER (WHERE AlbumId > 1) FROM Album GROUP BY ArtistId HAVING COUNT(*) > 1",
    "SELECT CAST(ArtistId AS TEXT), COALESCE(Name, 'none'), CASE WHEN ArtistId > 1 THEN 1 ELSE 0 END FROM Artist",
    "SELECT Name FROM Artist WHERE Name LIKE 'A%' AND ArtistId IN (SELECT ArtistId FROM Album) "
    "AND EXISTS (SELECT 1 FROM Track) ORDER BY Name NULLS LAST LIMIT 5 OFFSET 2",
    "SELECT x FROM (VALUES (1), (2)) AS v(x) UNION SELECT ArtistId FROM Artist EXCEPT SELECT 3",
    "SELECT table_name FROM information_schema.tables",
    "SELECT * FROM generate_series(1, 3)",
]
ALLOWED_IN = {  # each engine's own syntax
    "sqlite": [
        "SELECT name FROM sqlite_master WHERE type = 'table'",
        "SELECT key, value FROM json_each('[1, 2]')",
        "SELECT strftime('%Y', 'now'), julianday('now'), group_concat(Name, ',') FROM Artist",
        "SELECT printf('%d', 1), json_extract('{\"a\": 1}', '$.a')",
    ],
    "duckdb": [
        "SELECT * FROM range(3)",
        "SELECT * FROM unnest([1, 2])",
        "SELECT list_transform([1, 2], lambda x: x + 1), {'a': 1}.a, [1, 2, 3][1:2]",
        "SELECT Name FROM Artist QUALIFY ROW_NUMBER() OVER (ORDER BY Name) = 1",
        "SELECT * EXCLUDE (Name) FROM Artist",
        "SELECT ArtistId, COUNT(*) FROM Album GROUP BY ALL ORDER BY ALL",
        "FROM Artist SELECT Name",
    ],
    "postgresql": [
        "SELECT 'a'::text, (ARRAY[1, 2])[1], INTERVAL '1 day'",
        "SELECT DISTINCT ON (ArtistId) Title FROM Album ORDER BY ArtistId, Title",
        "SELECT string_agg(Name, ',' ORDER BY Name) FROM Artist",
        "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ArtistId) FROM Artist",
        "SELECT * FROM Artist CROSS JOIN LATERAL unnest(ARRAY[1]) AS u(x)",
    ],
}

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
    # names are read from the parse tree: quoting or case does not hide a function
    """SELECT "current_setting"('temp_directory')""",
    """SELECT "CURRENT_SETTING"('temp_directory')""",
    "SELECT 'temp_directory'.current_setting()",
    """SELECT * FROM "duckdb_settings"()""",
    """SELECT * FROM "duckdb_databases"()""",
    "SELECT * FROM system.main.duckdb_databases()",
    """SELECT "GetEnv"('HOME')""",
    """SELECT * FROM "read_csv"('/etc/passwd')""",
    "SELECT * FROM Read_Parquet('/tmp/x.parquet')",
    "SELECT * FROM glob('/*')",
    r"""SELECT U&"\0063urrent_setting"('data_directory')""",  # PostgreSQL's Unicode-escaped name
    "SELECT pg_stat_get_activity(NULL)",  # other sessions' queries, as the pg_stat_activity view shows
    "SELECT pg_stat_get_backend_activity(1)",
    "SELECT pg_show_all_settings()",
    # SQL given as text
    """SELECT * FROM "query"('SELECT path FROM duckdb_databases()')""",
    "SELECT * FROM query_table('Artist')",
    "SELECT * FROM Artist, LATERAL query_table('Album')",
    """SELECT "query_to_xml"('SELECT 1', true, false, '')""",
    # relations: only the database's tables, the query's own WITH names and information_schema
    "SELECT path FROM duckdb_databases",
    'SELECT path FROM "duckdb_databases"',
    "SELECT * FROM pragma_database_list",
    "SELECT * FROM pragma_database_list()",
    "SELECT * FROM '/etc/passwd'",
    "SELECT setting FROM pg_settings",
    "SELECT query FROM pg_catalog.pg_stat_activity",
    "TABLE pg_settings",
    "SELECT * FROM ROWS FROM (pg_ls_dir('/'))",
    "WITH pg_settings AS (SELECT * FROM pg_settings) SELECT * FROM pg_settings",
    "WITH a AS (SELECT * FROM duckdb_databases), duckdb_databases AS (SELECT 1) SELECT * FROM a",
    "SELECT * FROM (WITH duckdb_settings AS (SELECT 1) SELECT * FROM duckdb_settings) AS s, duckdb_settings",
    # statements and clauses that are not a read-only query, however they parse
    "SELECT * FROM Artist FOR UPDATE",
    "SUMMARIZE Artist",
    "SHOW TABLES",
    "DESCRIBE Artist",
    "EXPORT DATABASE '/tmp/export'",
    "PRAGMA database_list",
    "current_setting('temp_directory')",
]


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("sql", ALLOWED)
def test_read_only_queries_pass(sql, dialect):
    checked = check_query(sql, dialect, TABLES)
    assert not checked.rstrip().endswith(";")


@pytest.mark.parametrize(("dialect", "sql"), [(d, sql) for d, queries in ALLOWED_IN.items() for sql in queries])
def test_each_engines_own_read_only_syntax_passes(dialect, sql):
    assert check_query(sql, dialect, TABLES) == sql


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("sql", REFUSED)
def test_writes_settings_files_and_other_databases_are_refused(sql, dialect):
    with pytest.raises(UnsafeQueryError):
        check_query(sql, dialect, TABLES)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_forbidden_functions_are_refused_however_written(dialect):
    for name in FORBIDDEN_FUNCTIONS:
        quoted = f'"{name}"'  # a quoted name is an identifier token: the old token check let it through
        for call in (f"{name}('x')", f"{name.upper()}('x')", f"{quoted}('x')", f"main.{quoted}('x')"):
            for sql in (f"SELECT {call}", f"SELECT * FROM {call}"):
                with pytest.raises(UnsafeQueryError):  # by name; or (sqlite's one-argument glob) unparsable
                    check_query(sql, dialect, TABLES)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_without_a_table_list_functions_and_statements_are_still_checked(dialect):
    assert check_query("SELECT * FROM anything", dialect) == "SELECT * FROM anything"
    for sql in ("""SELECT * FROM "duckdb_databases"()""", "SELECT * FROM glob('*')", "PRAGMA database_list"):
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
    with pytest.raises(UnsafeQueryError, match=r"function current_setting\(\) is not allowed"):
        check_query("""SELECT "current_setting"('temp_directory')""", "duckdb", TABLES)
    with pytest.raises(UnsafeQueryError, match=r"table function duckdb_tables\(\) is not allowed"):
        check_query("SELECT * FROM Artist, duckdb_tables()", "duckdb", TABLES)
    with pytest.raises(UnsafeQueryError, match=r"table 'duckdb_databases' is not allowed: .*\(Album, Artist, t, Track\)"):
        check_query("SELECT path FROM duckdb_databases", "duckdb", TABLES)
    with pytest.raises(UnsafeQueryError, match="cannot be parsed as duckdb SQL .*line 1, column"):
        check_query("EXPORT DATABASE '/tmp/export'", "duckdb", TABLES)
