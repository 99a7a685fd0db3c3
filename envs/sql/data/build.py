"""Building the bundled datasets into each engine, once, in a checksummed cache.

SQLite and DuckDB databases are files in the cache directory (`$GFCR_CACHE_DIR/sql`, default
`~/.cache/gfcr/sql`), each with a manifest holding its build key (a hash of the builder version,
the table definitions and the source data) and the file's SHA-256. A file is rebuilt when it is
missing, when its build key is stale (new source data or builder) or when its bytes no longer
match the manifest; builds write a temporary file and rename it, under a lock, so concurrent
processes (async vector envs) neither race nor see a half-built database. PostgreSQL databases
are built on the server (see `postgres`).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from gfcr.envs.cache import cache_dir as envs_cache_dir
from gfcr.envs.cache import file_lock
from gfcr.envs.sql.data import chinook, tau2
from gfcr.envs.sql.data.schema import _TYPE_NAMES, Dataset, Dialect
from gfcr.errors import UnknownNameError

BUILD_VERSION = "3"
DATASETS: dict[str, Callable[[], Dataset]] = {
    "chinook": chinook.chinook,
    "tau2_retail": tau2.tau2_retail,
    "tau2_airline": tau2.tau2_airline,
}
_SOURCES: dict[str, Callable[[], Any]] = {
    "chinook": chinook.fixture_path,
    "tau2_retail": lambda: tau2.source_files()["retail"],
    "tau2_airline": lambda: tau2.source_files()["airline"],
}
_TABLES = {"chinook": chinook.TABLES, "tau2_retail": tau2.RETAIL_TABLES, "tau2_airline": tau2.AIRLINE_TABLES}
_SUFFIX = {"sqlite": ".sqlite", "duckdb": ".duckdb"}


def cache_dir() -> Path:
    """Where built databases live: `$GFCR_CACHE_DIR/sql`, else `${XDG_CACHE_HOME:-~/.cache}/gfcr/sql`."""
    return envs_cache_dir("sql")


def build_key(name: str) -> str:
    """Hash of what a built `name` depends on: builder version, table definitions, source bytes."""
    if name not in DATASETS:
        raise UnknownNameError("SQL dataset", name, DATASETS)
    digest = hashlib.sha256(f"gfcr-sql-build {BUILD_VERSION}\n".encode())
    for table in _TABLES[name]:
        digest.update(table.ddl("postgresql").encode())
    digest.update(_file_sha256(str(_SOURCES[name]())).encode())
    return digest.hexdigest()


def ensure_file_database(name: str, dialect: Dialect, directory: Path | None = None) -> Path:
    """The path of dataset `name` built for SQLite or DuckDB, (re)built if missing or stale.

    >>> ensure_file_database("chinook", "sqlite").name
    'chinook.sqlite'
    """
    directory = directory or cache_dir()
    path = directory / f"{name}{_SUFFIX[dialect]}"
    key = build_key(name)
    if _is_current(path, key):
        return path
    directory.mkdir(parents=True, exist_ok=True)
    with file_lock(directory / f".{path.name}.lock"):
        if _is_current(path, key):  # another process built it while we waited
            return path
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        temporary.unlink(missing_ok=True)
        try:
            engine = sa.create_engine(f"{dialect}:///{temporary}", poolclass=sa.pool.NullPool)
            write_dataset(engine, DATASETS[name]())
            engine.dispose()
            manifest = {
                "dataset": name,
                "engine": dialect,
                "build_key": key,
                "sha256": _file_sha256(str(temporary)),
            }
            os.replace(temporary, path)
        finally:
            temporary.unlink(missing_ok=True)
        _write_json(path.with_name(path.name + ".json"), manifest)
    return path


def write_dataset(engine: sa.Engine, dataset: Dataset) -> None:
    """Create `dataset`'s tables on an empty database and load its rows (bulk, per engine)."""
    dialect: Dialect = engine.dialect.name  # type: ignore[assignment]
    pooled = engine.raw_connection()
    try:
        connection: Any = pooled.dbapi_connection
        cursor = connection.cursor()
        for table in dataset.tables:
            cursor.execute(table.ddl(dialect))
            rows = dataset.rows.get(table.name, [])
            if dialect == "duckdb":
                _load_duckdb(connection, table, rows)
            elif dialect == "postgresql":
                with cursor.copy(f"COPY {table.name} ({', '.join(table.column_names)}) FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row(row)
            else:
                marks = ", ".join("?" * len(table.columns))
                cursor.executemany(f"INSERT INTO {table.name} VALUES ({marks})", rows)
            for index in table.index_ddl():
                cursor.execute(index)
        connection.commit()
    finally:
        pooled.close()


def _load_duckdb(connection: Any, table: Any, rows: list[tuple[Any, ...]]) -> None:
    """Rows into DuckDB through Arrow (executemany is row by row: minutes for 40,000 rows)."""
    import pyarrow as pa

    casts = ", ".join(f"CAST(? AS {_TYPE_NAMES[c.type]['duckdb']})" for c in table.columns)
    if any(column.references and column.references.startswith(f"{table.name}.") for column in table.columns):
        # DuckDB checks a self-reference (Employee.ReportsTo) against the table before the statement
        for row in rows:
            connection.execute(f"INSERT INTO {table.name} VALUES ({casts})", row)
        return
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in table.columns]
    arrow = pa.table(
        {column.name: pa.array(list(values)) for column, values in zip(table.columns, columns, strict=True)}
    )
    casts = ", ".join(f"CAST({c.name} AS {_TYPE_NAMES[c.type]['duckdb']})" for c in table.columns)
    connection.register("gfcr_rows", arrow)
    try:
        connection.execute(f"INSERT INTO {table.name} SELECT {casts} FROM gfcr_rows")
    finally:
        connection.unregister("gfcr_rows")


def _is_current(path: Path, key: str) -> bool:
    try:
        manifest = json.loads(path.with_name(path.name + ".json").read_text())
        stat = path.stat()
    except (OSError, ValueError):
        return False
    if manifest.get("build_key") != key:
        return False
    return _file_sha256(str(path), stat.st_mtime_ns, stat.st_size) == manifest.get("sha256")


@cache
def _file_sha256(path: str, _mtime_ns: int = 0, _size: int = 0) -> str:
    """SHA-256 of a file; cached per (path, mtime, size), so each process hashes a file once."""
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _write_json(path: Path, value: dict[str, Any]) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(value, indent=1))
    os.replace(temporary, path)
