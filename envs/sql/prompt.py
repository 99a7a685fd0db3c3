"""What the agent reads: the schema with sample rows, and query results as compact text tables.

The schema follows the "CREATE TABLE + 3 sample rows" prompt of Rajkumar et al., "Evaluating
the Text-to-SQL Capabilities of Large Language Models" (2022), the form most text-to-SQL work
since has used. Result tables keep the engine's row order and duplicates.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gfcr.envs.sql.engines.drivers import RawResult
from gfcr.envs.sql.engines.normalize import normalize_value

MAX_CELL_CHARS = 80
ENGINE_NAMES = {"sqlite": "SQLite", "postgresql": "PostgreSQL", "duckdb": "DuckDB"}


def render_table(table_ddl: str, name: str, sample: RawResult | None, description: str = "") -> str:
    """One table: its DDL, an optional note, and its first rows in a comment."""
    text = table_ddl + (f"\n-- {description}" if description else "")
    if sample is not None and sample.rows:
        text += f"\n/* {len(sample.rows)} rows of {name}:\n{format_rows(sample.columns, sample.rows)}\n*/"
    return text


def format_rows(
    columns: Sequence[str], rows: Sequence[Sequence[Any]], max_cell_chars: int = MAX_CELL_CHARS
) -> str:
    """A text table: a header of column names and one line per row, cells separated by ' | '.

    >>> print(format_rows(["Name", "Total"], [("AC/DC", 2), (None, 1.5)]))
    Name | Total
    AC/DC | 2
    NULL | 1.5
    """
    lines = [" | ".join(columns)]
    for row in rows:
        lines.append(" | ".join(_cell(value, max_cell_chars) for value in row))
    return "\n".join(lines)


def render_result(result: RawResult, shown: int, total_known: bool = True) -> str:
    """A query's result for the agent: the row count, then the first `shown` rows as a table.

    >>> print(render_result(RawResult(("n",), [(1,), (2,), (3,)], False), shown=2))
    3 rows (first 2 shown)
    n
    1
    2
    """
    count = len(result.rows)
    if not result.columns:
        return "The statement returned no result set."
    if result.truncated:
        header = f"more than {count} rows (first {min(shown, count)} shown)"
    elif count > shown:
        header = f"{count} rows (first {shown} shown)"
    else:
        header = f"{count} row{'s' if count != 1 else ''}"
    return header + "\n" + format_rows(result.columns, result.rows[:shown])


def _cell(value: Any, limit: int) -> str:
    value = normalize_value(value)
    text = "NULL" if value is None else str(value)
    text = text.replace("\n", "\\n").replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"
