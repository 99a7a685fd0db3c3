"""The static check every agent query passes first: one read-only statement, no dangerous functions.

This is the first of two layers and the one that explains itself to the agent. The second layer
is each engine's own enforcement (read-only connections and transactions, SQLite's authorizer,
DuckDB's locked configuration without file access, a PostgreSQL role that may only SELECT): it
holds even for SQL that this check misreads. The check works on sqlglot's tokens in the engine's
dialect, so quoted strings, comments and dollar-quoted bodies are not mistaken for code.
"""

from __future__ import annotations

from sqlglot import tokenize
from sqlglot.errors import TokenError
from sqlglot.tokens import Token, TokenType

from gfcr.envs.sql.data.schema import Dialect
from gfcr.errors import QueryError, UnsafeQueryError

SQLGLOT_DIALECTS: dict[str, str] = {"sqlite": "sqlite", "postgresql": "postgres", "duckdb": "duckdb"}

_FIRST = {TokenType.SELECT, TokenType.WITH, TokenType.VALUES, TokenType.L_PAREN}
# Keywords that write, change settings or sessions, or reach outside the database.
_FORBIDDEN_KEYWORDS = {
    TokenType.INSERT, TokenType.UPDATE, TokenType.DELETE, TokenType.MERGE, TokenType.CREATE, TokenType.DROP,
    TokenType.ALTER, TokenType.TRUNCATE, TokenType.ATTACH, TokenType.DETACH, TokenType.PRAGMA, TokenType.COPY,
    TokenType.GRANT, TokenType.REVOKE, TokenType.SET, TokenType.COMMAND, TokenType.LOAD, TokenType.INSTALL,
    TokenType.USE, TokenType.LOCK, TokenType.COMMIT, TokenType.ROLLBACK, TokenType.BEGIN, TokenType.INTO,
    TokenType.ANALYZE,
}  # fmt: skip
# Functions that read or write files, change settings, run SQL given as a string, reach other
# databases or show where the database lives on the host, on any of the three engines (a name is
# refused on all of them: none is needed here).
FORBIDDEN_FUNCTIONS = frozenset(
    {
        # SQLite
        "load_extension", "readfile", "writefile", "edit", "fts3_tokenizer", "zipfile", "sqlar_compress",
        "sqlar_uncompress", "sqlite_dbpage",
        # PostgreSQL
        "set_config", "pg_read_file", "pg_read_binary_file", "pg_ls_dir", "pg_stat_file", "pg_ls_logdir",
        "pg_ls_waldir", "pg_ls_tmpdir", "pg_ls_archive_statusdir", "pg_file_write", "lo_import", "lo_export",
        "lo_from_bytea", "lo_put", "lo_create", "lo_unlink", "pg_terminate_backend", "pg_cancel_backend",
        "pg_reload_conf", "pg_rotate_logfile", "pg_promote", "pg_switch_wal", "pg_create_restore_point",
        "query_to_xml", "query_to_xml_and_xmlschema", "query_to_xmlschema", "cursor_to_xml",
        "pg_logical_emit_message",
        "nextval", "setval", "pg_notify",
        # DuckDB
        "read_csv", "read_csv_auto", "read_parquet", "parquet_scan", "parquet_metadata", "parquet_schema",
        "read_json", "read_json_auto", "read_json_objects", "read_ndjson", "read_ndjson_auto", "read_text",
        "read_blob", "glob", "sniff_csv", "query", "query_table", "getenv", "duckdb_secrets", "from_csv_auto",
        # ... and that show host paths (the database file, its temp and secret directories)
        "duckdb_databases", "duckdb_settings", "current_setting", "duckdb_extensions", "which_secret",
    }
)  # fmt: skip
_FORBIDDEN_PREFIXES = ("dblink", "pg_advisory", "pg_try_advisory", "lo_")


def check_query(sql: str, dialect: Dialect) -> str:
    """Return `sql` without trailing semicolons if it is one read-only query; else raise.

    Raises `UnsafeQueryError` naming what was refused, or `QueryError` if `sql` cannot be read
    (unbalanced quotes, or text that is not valid Unicode, such as a lone surrogate).

    >>> check_query("SELECT Name FROM Artist WHERE Name LIKE '%; DROP TABLE x';", "sqlite")
    "SELECT Name FROM Artist WHERE Name LIKE '%; DROP TABLE x'"
    >>> check_query("SELECT 1; DROP TABLE Artist", "postgresql")
    Traceback (most recent call last):
    ...
    gfcr.errors.UnsafeQueryError: only one statement per query: found a second one after ';'
    """
    if not isinstance(sql, str) or not sql.strip():
        raise QueryError("empty query: write one SELECT statement")
    try:
        sql.encode("utf-8")
    except UnicodeEncodeError as e:
        raise QueryError(
            f"the query is not valid Unicode: U+{ord(sql[e.start]):04X} at character {e.start} is a lone "
            "surrogate (half of a UTF-16 pair); remove it or write the whole character"
        ) from e
    try:
        tokens = tokenize(sql, read=SQLGLOT_DIALECTS[dialect])
    except TokenError as e:
        raise QueryError(f"cannot read the query ({e}); check quotes and comments") from e
    while tokens and tokens[-1].token_type == TokenType.SEMICOLON:
        tokens.pop()
    if not tokens:
        raise QueryError("empty query: write one SELECT statement")
    if tokens[0].token_type not in _FIRST:
        raise UnsafeQueryError(
            "only read-only queries are allowed: a query must start with SELECT, WITH or VALUES, "
            f"not {tokens[0].text!r}"
        )
    for position, token in enumerate(tokens):
        _check_token(token, tokens[position + 1] if position + 1 < len(tokens) else None)
    return sql[: tokens[-1].end + 1]


def _check_token(token: Token, following: Token | None) -> None:
    kind = token.token_type
    if kind == TokenType.SEMICOLON:
        raise UnsafeQueryError("only one statement per query: found a second one after ';'")
    calls = following is not None and following.token_type == TokenType.L_PAREN
    if kind == TokenType.REPLACE and calls:
        return  # the replace() string function, not REPLACE INTO
    if kind in _FORBIDDEN_KEYWORDS or kind == TokenType.REPLACE:
        raise UnsafeQueryError(
            f"{token.text.upper()!r} is not allowed: queries may only read (SELECT), "
            "never change the database"
            " or the session"
        )
    name = token.text.lower()
    if (
        calls
        and kind not in (TokenType.STRING, TokenType.IDENTIFIER)
        and (name in FORBIDDEN_FUNCTIONS or name.startswith(_FORBIDDEN_PREFIXES))
    ):
        raise UnsafeQueryError(
            f"function {name}() is not allowed: it reaches outside the database or changes settings"
        )
