"""Engine-neutral table definitions: one `Dataset` is built the same way into every engine.

Names are written in the canonical case (`Artist.ArtistId`) and never quoted, so SQLite and
DuckDB keep them as written and PostgreSQL folds them to lower case: the same unquoted SQL
(`SELECT Name FROM Artist`) runs on all three.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Dialect = Literal["sqlite", "postgresql", "duckdb"]
DIALECTS: tuple[Dialect, ...] = ("sqlite", "postgresql", "duckdb")
ColumnType = Literal["integer", "text", "numeric", "real", "boolean", "date", "timestamp", "time"]

# Column type -> the type name in each engine's DDL. SQLite stores dates and times as ISO text.
_TYPE_NAMES: dict[str, dict[str, str]] = {
    "integer": {"sqlite": "INTEGER", "postgresql": "INTEGER", "duckdb": "INTEGER"},
    "text": {"sqlite": "TEXT", "postgresql": "TEXT", "duckdb": "VARCHAR"},
    "numeric": {"sqlite": "NUMERIC(10,2)", "postgresql": "NUMERIC(10,2)", "duckdb": "DECIMAL(10,2)"},
    "real": {"sqlite": "REAL", "postgresql": "DOUBLE PRECISION", "duckdb": "DOUBLE"},
    "boolean": {"sqlite": "BOOLEAN", "postgresql": "BOOLEAN", "duckdb": "BOOLEAN"},
    "date": {"sqlite": "DATE", "postgresql": "DATE", "duckdb": "DATE"},
    "timestamp": {"sqlite": "TIMESTAMP", "postgresql": "TIMESTAMP", "duckdb": "TIMESTAMP"},
    "time": {"sqlite": "TIME", "postgresql": "TIME", "duckdb": "TIME"},
}


@dataclass(frozen=True)
class Column:
    """A column: name, neutral type, and whether it may hold NULL; `references` is "Table.Column"."""

    name: str
    type: ColumnType
    nullable: bool = True
    references: str | None = None


@dataclass(frozen=True)
class Table:
    """A table: its columns (in order) and primary key."""

    name: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...] = ()
    description: str = ""

    @property
    def column_names(self) -> list[str]:
        return [column.name for column in self.columns]

    def ddl(self, dialect: Dialect) -> str:
        """`CREATE TABLE` for `dialect`, with keys (the form shown to the agent and run at build).

        >>> columns = (Column("GenreId", "integer", False), Column("Name", "text"))
        >>> table = Table("Genre", columns, ("GenreId",))
        >>> print(table.ddl("duckdb"))
        CREATE TABLE Genre (
          GenreId INTEGER NOT NULL,
          Name VARCHAR,
          PRIMARY KEY (GenreId)
        )
        """
        lines = [
            f"  {c.name} {_TYPE_NAMES[c.type][dialect]}{'' if c.nullable else ' NOT NULL'}"
            for c in self.columns
        ]
        if self.primary_key:
            lines.append(f"  PRIMARY KEY ({', '.join(self.primary_key)})")
        for column in self.columns:
            if column.references:
                table, target = column.references.split(".")
                lines.append(f"  FOREIGN KEY ({column.name}) REFERENCES {table} ({target})")
        return f"CREATE TABLE {self.name} (\n" + ",\n".join(lines) + "\n)"

    def index_ddl(self) -> list[str]:
        """`CREATE INDEX` for each foreign-key column (as canonical Chinook has), for the joins.

        >>> artist = Column("ArtistId", "integer", references="Artist.ArtistId")
        >>> Table("Album", (Column("AlbumId", "integer"), artist), ("AlbumId",)).index_ddl()
        ['CREATE INDEX IFK_Album_ArtistId ON Album (ArtistId)']
        """
        return [
            f"CREATE INDEX IFK_{self.name}_{column.name} ON {self.name} ({column.name})"
            for column in self.columns
            if column.references and self.primary_key[:1] != (column.name,)
        ]


@dataclass
class Dataset:
    """A database's content, engine-neutral: tables in dependency order and their rows.

    Row values are Python `int`, `float`, `str`, `bool` or None; dates, timestamps and times are
    ISO strings (`2009-01-01`, `2009-01-01 00:00:00`, `06:00:00`), which every engine reads.
    """

    name: str
    tables: tuple[Table, ...]
    rows: dict[str, list[tuple[Any, ...]]] = field(default_factory=dict)
    description: str = ""

    def table(self, name: str) -> Table:
        for table in self.tables:
            if table.name.lower() == name.lower():
                return table
        raise KeyError(name)

    def row_count(self) -> int:
        return sum(len(rows) for rows in self.rows.values())


def as_rows(records: Iterable[dict[str, Any]], columns: Sequence[str]) -> list[tuple[Any, ...]]:
    """Records (dicts) to row tuples in `columns` order; a missing key is NULL."""
    return [tuple(record.get(column) for column in columns) for record in records]
