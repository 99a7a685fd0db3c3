"""The database behind Replay and the skill library: any SQLAlchemy URL, SQLite by default.

SQLite files run in WAL mode with `synchronous=FULL`: a transaction is on disk when its commit
returns, so a killed process loses nothing it had committed, and readers never block the writer.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine, MetaData, create_engine, event
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
    except (SQLAlchemyError, OSError) as e:
        raise StorageError(f"cannot open database {url!r}: {e}") from e
    return engine


def _sqlite_pragmas(connection, _record) -> None:  # noqa: ANN001 (a DB-API connection)
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=FULL")
    cursor.close()
