"""The database behind Replay and the skill library: any SQLAlchemy URL, SQLite by default.

SQLite files run in WAL mode with `synchronous=FULL`: a transaction is on disk when its commit
returns, so a killed process loses nothing it had committed, and readers never block the writer.
A database written by an earlier gfcr opens as it is: the nullable columns a table has gained
since are added to it (`ALTER TABLE … ADD COLUMN`), so its rows read as before, with NULL there.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine, MetaData, Table, create_engine, event, inspect, text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.pool import StaticPool

from gfcr.errors import StorageError


def database_url(target: str | Path) -> str:
    """A SQLAlchemy URL for `target`: a URL is kept, a path becomes a SQLite file URL.

    >>> database_url("runs/replay.db"), database_url("postgresql+psycopg://u@h/db")
    ('sqlite:///runs/replay.db', 'postgresql+psycopg://u@h/db')
    """
    text = str(target)
    return text if "://" in text else f"sqlite:///{text}"


def open_database(target: str | Path, metadata: MetaData) -> Engine:
    """An engine for `target` with `metadata`'s tables created (if missing)."""
    url = database_url(target)
    try:
        if url.startswith("sqlite"):
            memory = url in ("sqlite://", "sqlite:///:memory:")
            if not memory:
                Path(url.split("///", 1)[1]).parent.mkdir(parents=True, exist_ok=True)
            engine = create_engine(
                url,
                connect_args={"check_same_thread": False, "timeout": 30.0},
                poolclass=StaticPool if memory else None,
            )
            event.listen(engine, "connect", _sqlite_pragmas)
        else:
            engine = create_engine(url, pool_pre_ping=True)
        metadata.create_all(engine)
        for table in metadata.tables.values():
            add_missing_columns(engine, table)
    except (SQLAlchemyError, OSError) as e:
        raise StorageError(f"cannot open database {url!r}: {e}") from e
    return engine


def add_missing_columns(engine: Engine, table: Table) -> list[str]:
    """Give an existing `table` the nullable columns its definition has and the database lacks
    (a buffer written before they existed); returns their names. A missing column that may not be
    NULL cannot be filled in for the old rows: a `StorageError` names it and the fix.

    >>> from sqlalchemy import Column, Integer, MetaData, Table, create_engine, text
    >>> engine = create_engine("sqlite://")
    >>> with engine.begin() as conn:
    ...     _ = conn.execute(text("CREATE TABLE t (id INTEGER PRIMARY KEY)"))
    >>> add_missing_columns(engine, Table("t", MetaData(), Column("id", Integer, primary_key=True),
    ...                                   Column("refreshed", Integer, nullable=True)))
    ['refreshed']
    """
    present = {column["name"] for column in inspect(engine).get_columns(table.name)}
    missing = [column for column in table.columns if column.name not in present]
    required = [column.name for column in missing if not column.nullable]
    if required:
        raise StorageError(
            f"table {table.name!r} of {engine.url!r} lacks the columns {required}, which an older gfcr did "
            "not write and which cannot be NULL; start a new database (another file or URL), or move "
            "this one aside"
        )
    with engine.begin() as conn:
        for column in missing:  # names and types come from our own table definitions, never from input
            kind = column.type.compile(dialect=engine.dialect)
            conn.execute(text(f'ALTER TABLE {table.name} ADD COLUMN "{column.name}" {kind}'))
    return [column.name for column in missing]


def _sqlite_pragmas(connection, _record) -> None:  # noqa: ANN001 (a DB-API connection)
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=FULL")
    cursor.close()
