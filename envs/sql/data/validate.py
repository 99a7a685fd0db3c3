"""Validating gold SQL: it runs on every engine, agrees across them, and does not depend on ties.

For each question and engine: the gold query runs and returns rows; the results of all engines
match (as `results_match` compares them, in order when the gold orders). When the outermost
SELECT has ORDER BY, the validator re-runs the query with its sort keys added as columns and
without LIMIT/OFFSET, and reports (a) NULL sort keys (engines put NULLs first or last by
default), (b) rows whose sort keys tie but whose content differs (their order, and whatever a
LIMIT keeps of them, is arbitrary). LIMIT without ORDER BY and LIMIT inside subqueries are
reported too. Window functions that depend on tie order are caught by the cross-engine check.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import sqlglot
from sqlglot import expressions as exp

from gfcr.envs.sql.data.questions import SQLQuestion
from gfcr.envs.sql.engines.database import MAX_GOLD_ROWS, Database
from gfcr.envs.sql.engines.drivers import RawResult
from gfcr.envs.sql.engines.normalize import normalize_rows
from gfcr.envs.sql.engines.query_check import SQLGLOT_DIALECTS
from gfcr.envs.sql.matching import order_matters, results_match
from gfcr.errors import QueryError


def validate_question(question: SQLQuestion, databases: Mapping[str, Database]) -> list[str]:
    """Problems with `question`'s gold SQL on `databases` (engine name -> database); [] if none.

    >>> from gfcr.envs.sql.data.build import ensure_file_database
    >>> sqlite = Database.from_url(f"sqlite:///{ensure_file_database('chinook', 'sqlite')}")
    >>> sql = "SELECT Name FROM Track ORDER BY UnitPrice DESC LIMIT 3"
    >>> tied = SQLQuestion("demo/1", "chinook", "?", sql, "easy", ())
    >>> validate_question(tied, {"sqlite": sqlite})  # doctest: +ELLIPSIS
    ["sqlite: ORDER BY ties: rows ('...',) and ('...',) share the sort key (1.99,); add a tie-breaker"]
    """
    problems: list[str] = []
    results: dict[str, RawResult] = {}
    for dialect, database in databases.items():
        sql = question.gold_for(database.dialect)
        try:
            result = database.execute(sql, max_rows=MAX_GOLD_ROWS, timeout_s=60)
        except QueryError as e:
            problems.append(f"{dialect}: the gold query fails: {e}")
            continue
        if not result.rows:
            problems.append(f"{dialect}: the gold query returns no rows")
        results[dialect] = result
        problems += [f"{dialect}: {p}" for p in order_problems(sql, database, len(result.columns))]
    if len(results) > 1:
        (first, reference), *others = results.items()
        ordered = order_matters(question.gold_for(databases[first].dialect), databases[first].dialect)
        for dialect, result in others:
            if not results_match(result.rows, reference.rows, order_matters=ordered):
                problems.append(f"{dialect} and {first} give different results")
    return problems


def validate_all(
    questions: Iterable[SQLQuestion], databases_for: Mapping[str, Mapping[str, Database]]
) -> dict[str, list[str]]:
    """Problems per question id (only questions with problems); `databases_for[question.database]`."""
    report = {}
    for question in questions:
        if problems := validate_question(question, databases_for[question.database]):
            report[question.id] = problems
    return report


def order_problems(sql: str, database: Database, width: int) -> list[str]:
    """Ways the order (or LIMIT) of `sql`'s result depends on ties or NULL ordering."""
    dialect = SQLGLOT_DIALECTS[database.dialect]
    tree: Any = sqlglot.parse_one(sql, read=dialect)  # sqlglot 25-30 name its node base differently
    while isinstance(tree, exp.Subquery) and not tree.args.get("order"):
        tree = tree.this
    problems = []
    for node in tree.find_all(exp.Select, exp.Union):
        if node is not tree and node.args.get("limit"):
            problems.append(
                "LIMIT inside a subquery: which rows it keeps depends on ties; "
                "use = (SELECT MAX(...)) or RANK()"
            )
    order = tree.args.get("order")
    if order is None:
        if tree.args.get("limit"):
            problems.append("LIMIT without ORDER BY: which rows it keeps is arbitrary")
        return problems
    keyed, key_positions = _with_sort_keys(tree, order, width)
    if keyed is None:
        return [
            *problems,
            "cannot check the ORDER BY keys (an expression over a set operation); order by output columns",
        ]
    rows = normalize_rows(
        database.execute(keyed.sql(dialect=dialect), max_rows=MAX_GOLD_ROWS, timeout_s=60).rows
    )
    keys = [tuple(row[i] for i in key_positions) for row in rows]
    if any(value is None for key in keys for value in key):
        problems.append(
            "an ORDER BY key is NULL in some rows: engines sort NULLs differently; filter or COALESCE them"
        )
    # Ties matter in the rows a LIMIT keeps and across its boundary, or everywhere without LIMIT.
    end = len(rows) - 1 if tree.args.get("limit") is None else min(len(rows) - 1, _limit_end(tree))
    for i in range(end):
        key, next_key, row, next_row = keys[i], keys[i + 1], rows[i], rows[i + 1]
        if key == next_key and row[:width] != next_row[:width]:
            problems.append(
                f"ORDER BY ties: rows {row[:width]} and {next_row[:width]} share the sort key {key}; "
                "add a tie-breaker"
            )
            break
    return problems


def _limit_end(tree: exp.Expression) -> int:
    """OFFSET + LIMIT of the outermost query: the number of sorted rows whose order is visible."""
    limit = tree.args["limit"].expression
    offset = tree.args.get("offset")
    return int(limit.name) + (int(offset.expression.name) if offset is not None else 0)


def _with_sort_keys(
    tree: exp.Expression, order: exp.Order, width: int
) -> tuple[exp.Expression | None, list[int]]:
    """`tree` without LIMIT/OFFSET and with each ORDER BY key as an output column, and their positions."""
    keyed = tree.copy()
    keyed.set("limit", None)
    keyed.set("offset", None)
    outputs = keyed.expressions if isinstance(keyed, exp.Select) else []
    positions: list[int] = []
    for ordered in order.expressions:
        key = ordered.this
        if isinstance(key, exp.Literal) and key.is_int:
            positions.append(int(key.name) - 1)
            continue
        found = next(
            (i for i, output in enumerate(outputs) if _same_output(output, key)),
            None,
        )
        if found is not None:
            positions.append(found)
        elif isinstance(keyed, exp.Select) and not keyed.args.get("distinct"):
            keyed.select(key.copy().as_(f"gfcr_sort_key_{len(positions)}"), copy=False)
            positions.append(width + sum(1 for p in positions if p >= width))
        else:
            return None, []
    return keyed, positions


def _same_output(output: exp.Expression, key: exp.Expression) -> bool:
    """Whether ORDER BY `key` names the output column `output` (by alias, or as the same expression)."""
    if isinstance(key, exp.Column) and not key.table and output.alias_or_name == key.name and output.alias:
        return True
    unaliased = output.this if isinstance(output, exp.Alias) else output
    return unaliased == key
