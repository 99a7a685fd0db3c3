"""The static check every agent query passes first: one read-only query over this database's tables.

This is the first of two layers and the one that explains itself to the agent. The second layer
is each engine's own enforcement (read-only connections and transactions, SQLite's authorizer,
DuckDB's locked configuration without file access, a PostgreSQL role that may only SELECT): it
holds even for SQL that this check misreads.

The check reads sqlglot's parse tree in the engine's dialect, not the spelling, so quoting a name
(`"current_setting"(…)`), changing its case, or hiding a keyword in a string or comment changes
nothing. A query sqlglot cannot parse is refused, not passed through, and so are Unicode-escaped
identifiers (`U&"…"`), which the engines decode and sqlglot does not. What a query may contain is
an allow-list, because a read-only analytic query needs little:

- statements and clauses: one SELECT, set operation or VALUES, with WITH, FROM, JOIN, WHERE, GROUP
  BY, HAVING, QUALIFY, WINDOW, ORDER BY, LIMIT/OFFSET/FETCH, subqueries, and expressions; anything
  else (INSERT, PRAGMA, SET, COPY, ATTACH, SELECT … INTO, FOR UPDATE, …) is refused;
- relations in FROM and JOIN: the database's own tables, the query's own WITH names (as the engine
  scopes them, so a CTE cannot shadow a system view for a later reference), `information_schema`
  and SQLite's `sqlite_master`; so `duckdb_databases`, `pragma_database_list`, `pg_settings`,
  `pg_stat_activity` or a file path as a table name are refused;
- table functions: `range`/`generate_series`, `unnest` and `json_each`/`json_tree`; so
  `query(…)`, `read_csv(…)`, `glob(…)`, `duckdb_settings()`, `pragma_table_info(…)` are refused.

Scalar and aggregate functions are the exception: each engine has hundreds that only compute
(string, date, math, JSON, list, window functions) and agents use them freely, so an allow-list
would refuse correct answers. Those are checked against a deny-list of the few that read files,
show settings or host paths, run SQL given as text, or reach other sessions or databases.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from sqlglot import expressions as exp
from sqlglot.dialects.dialect import Dialect as SqlglotDialect
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import Token, TokenType

from gfcr.envs.sql.data.schema import Dialect
from gfcr.errors import QueryError, UnsafeQueryError

SQLGLOT_DIALECTS: dict[str, str] = {"sqlite": "sqlite", "postgresql": "postgres", "duckdb": "duckdb"}
Node = Any  # a sqlglot tree node: its base class is `Expr` from sqlglot 30, `Expression` before

_QUERIES = (exp.Select, exp.Union, exp.Intersect, exp.Except, exp.Subquery, exp.Values)
# The clauses of a read-only query; values, predicates and function calls are sqlglot's
# `Condition` nodes (functions and relations are then checked by name).
_CLAUSES = (
    exp.With, exp.CTE, exp.From, exp.Join, exp.Where, exp.Group, exp.Having, exp.Qualify, exp.Order,
    exp.Ordered, exp.Limit, exp.Offset, exp.Fetch, exp.Distinct, exp.WindowSpec, exp.Alias, exp.TableAlias,
    exp.Table, exp.Lateral, exp.Identifier, exp.Star, exp.Var, exp.DataType, exp.DataTypeParam, exp.Tuple,
    exp.Interval, exp.Lambda, exp.Filter, exp.WithinGroup, exp.Cube, exp.Rollup, exp.GroupingSets,
    exp.IgnoreNulls, exp.RespectNulls, exp.Slice, exp.TableSample, exp.JSONPath, exp.JSONPathPart,
)  # fmt: skip
_ALLOWED_NODES = (exp.Condition, *_QUERIES, *_CLAUSES)
_TABLE_FUNCTIONS = frozenset({"range", "generate_series", "unnest", "json_each", "json_tree"})
_GENERATORS = (exp.GenerateSeries, exp.Unnest)  # typed forms of range/generate_series and unnest
_CATALOG_TABLES = {"sqlite": frozenset({"sqlite_master", "sqlite_schema"})}  # the schema's own SQL text
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
        # ... and that show other sessions' queries (other episodes' gold SQL) or the settings
        "pg_stat_get_activity",
        # DuckDB
        "read_csv", "read_csv_auto", "read_parquet", "parquet_scan", "parquet_metadata", "parquet_schema",
        "read_json", "read_json_auto", "read_json_objects", "read_ndjson", "read_ndjson_auto", "read_text",
        "read_blob", "glob", "sniff_csv", "query", "query_table", "getenv", "duckdb_secrets", "from_csv_auto",
        "json_execute_serialized_sql",
        # ... and that show host paths (the database file, its temp and secret directories)
        "duckdb_databases", "duckdb_settings", "current_setting", "duckdb_extensions", "which_secret",
    }
)  # fmt: skip
_FORBIDDEN_PREFIXES = (
    "dblink", "pg_advisory", "pg_try_advisory", "lo_", "pg_stat_get_backend", "pg_show_all",
)  # fmt: skip
_TABLES_SHOWN = 12  # tables named in a refusal, at most


def check_query(sql: str, dialect: Dialect, tables: Collection[str] | None = None) -> str:
    """Return `sql` without trailing semicolons if it is one read-only query; else raise.

    `tables` names the relations FROM may read besides the query's own WITH names and the
    catalog (case-insensitive); `Database` passes its tables. None leaves relation names to the
    engine's guards (statements, table functions and functions are checked all the same).
    Raises `UnsafeQueryError` naming what was refused (a query sqlglot cannot parse among them),
    or `QueryError` if `sql` cannot be read at all (unbalanced quotes, or text that is not valid
    Unicode, such as a lone surrogate).

    >>> check_query("SELECT Name FROM Artist WHERE Name LIKE '%; DROP TABLE x';", "sqlite", ["Artist"])
    "SELECT Name FROM Artist WHERE Name LIKE '%; DROP TABLE x'"
    >>> check_query('SELECT "current_setting"(\\'temp_directory\\')', "duckdb")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gfcr.errors.UnsafeQueryError: function current_setting() is not allowed: it reaches outside ...
    >>> check_query("SELECT path FROM duckdb_databases", "duckdb", ["Artist"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gfcr.errors.UnsafeQueryError: table 'duckdb_databases' is not allowed: ... tables (Artist), ...
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
    reader = SqlglotDialect.get_or_raise(SQLGLOT_DIALECTS[dialect])
    try:
        tokens = reader.tokenize(sql)
    except TokenError as e:
        raise QueryError(f"cannot read the query ({e}); check quotes and comments") from e
    while tokens and tokens[-1].token_type == TokenType.SEMICOLON:
        tokens.pop()
    if not tokens:
        raise QueryError("empty query: write one SELECT statement")
    if any(token.token_type == TokenType.SEMICOLON for token in tokens):
        raise UnsafeQueryError("only one statement per query: found a second one after ';'")
    if _unicode_escaped_identifier(tokens):
        raise UnsafeQueryError(
            'Unicode-escaped identifiers (U&"…") are not allowed: write the name as plain text'
        )
    try:
        (tree,) = reader.parser().parse(tokens, sql)
    except ParseError as e:
        error = e.errors[0] if e.errors else {}
        where = f" at line {error.get('line')}, column {error.get('col')}" if error else ""
        raise UnsafeQueryError(
            f"the query was not run: it cannot be parsed as {dialect} SQL "
            f"({error.get('description', e)}{where}), and only queries the safety check can read are "
            "run; check the syntax, or write it as plain SELECT"
        ) from e
    if not isinstance(tree, _QUERIES):
        raise UnsafeQueryError(
            "only read-only queries are allowed: a query must start with SELECT, WITH or VALUES, "
            f"not {tokens[0].text!r}"
        )
    for node in tree.walk():
        _check_node(node, dialect, tables)
    return sql[: tokens[-1].end + 1]


def _unicode_escaped_identifier(tokens: list[Token]) -> bool:
    """Whether `tokens` hold PostgreSQL's (and DuckDB's) `U&"\\0063urrent_setting"` form.

    sqlglot reads it as `U & "\\0063urrent_setting"`, so the name it checks is not the one the
    engine calls.
    """
    return any(
        first.text.upper() == "U"
        and amp.token_type == TokenType.AMP
        and name.token_type == TokenType.IDENTIFIER
        and first.end + 1 == amp.start
        and amp.end + 1 == name.start
        for first, amp, name in zip(tokens, tokens[1:], tokens[2:], strict=False)  # consecutive triples
    )


def _check_node(node: Node, dialect: Dialect, tables: Collection[str] | None) -> None:
    if not isinstance(node, _ALLOWED_NODES):
        raise UnsafeQueryError(
            f"{node.key.upper()!r} is not allowed: queries may only read (SELECT), never change the "
            "database or the session"
        )
    if isinstance(node, exp.Func):
        names = _function_names(node)
        if any(name in FORBIDDEN_FUNCTIONS or name.startswith(_FORBIDDEN_PREFIXES) for name in names):
            raise UnsafeQueryError(
                f"function {min(names)}() is not allowed: it reaches outside the database or changes "
                "settings"
            )
        if _is_relation(node) and not (isinstance(node, _GENERATORS) or names & _TABLE_FUNCTIONS):
            raise UnsafeQueryError(
                f"table function {min(names)}() is not allowed: a query may read this database's tables, "
                "its own WITH queries, subqueries, VALUES, range/generate_series and unnest"
            )
    elif isinstance(node, exp.Table) and tables is not None:
        _check_table(node, dialect, tables)


def _function_names(node: exp.Func) -> set[str]:
    """The names `node` is called by, lower case: as written (however quoted) or sqlglot's names for it."""
    if isinstance(node, exp.Anonymous):
        return {node.name.lower()}
    return {name.lower() for name in node.sql_names()}


def _is_relation(node: Node) -> bool:
    """Whether `node` stands where a table does: FROM f(…), JOIN f(…), LATERAL f(…)."""
    return node.arg_key == "this" and isinstance(node.parent, (exp.Table, exp.From, exp.Join, exp.Lateral))


def _check_table(table: exp.Table, dialect: Dialect, tables: Collection[str]) -> None:
    if isinstance(table.this, exp.Func):
        return  # a table function: checked as a function
    known = {name.lower() for name in tables} | _CATALOG_TABLES.get(dialect, frozenset())
    name = table.name.lower()
    if isinstance(table.this, exp.Identifier) and (
        table.db.lower() == "information_schema"
        or name in known
        or (not table.db and name in _ctes_in_scope(table))
    ):
        return
    listed = ", ".join(sorted(tables, key=str.lower)[:_TABLES_SHOWN])
    if len(tables) > _TABLES_SHOWN:
        listed += ", …"
    raise UnsafeQueryError(
        f"table {table.sql()!r} is not allowed: a query may read this database's tables ({listed}), "
        "its own WITH queries and information_schema"
    )


def _ctes_in_scope(node: Node) -> set[str]:
    """The WITH names `node` may refer to, lower case, scoped as the engines scope them.

    A WITH query sees the ones before it (and itself, under RECURSIVE): in a plain WITH, a query
    named `pg_settings` that reads `pg_settings` reads the system view, not itself.
    """
    names: set[str] = set()
    child, parent = node, node.parent
    while parent is not None:
        if isinstance(parent, exp.With):
            position = next(i for i, cte in enumerate(parent.expressions) if cte is child)
            visible = parent.expressions[: position + 1 if parent.args.get("recursive") else position]
            names |= {cte.alias.lower() for cte in visible}
        else:
            for value in parent.args.values():
                if isinstance(value, exp.With) and value is not child:
                    names |= {cte.alias.lower() for cte in value.expressions}
        child, parent = parent, parent.parent
    return names
