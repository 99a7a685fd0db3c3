"""Which questions an env asks and where their databases are: dataset names, engines, schemas.

`engine` is "sqlite" (default), "duckdb", "postgresql" (the server at `$GFCR_POSTGRES_URL`) or a
PostgreSQL URL (`postgresql+psycopg://user:password@host/dbname`: an account allowed to create
databases and roles, see `postgres`). Bundled databases are built on first use; databases are
opened once per process and shared by every env in it.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from gfcr.envs.sql.data import tasks_chinook, tasks_tau2
from gfcr.envs.sql.data.build import ensure_file_database
from gfcr.envs.sql.data.byo import load_spider_or_bird
from gfcr.envs.sql.data.chinook import TABLES as CHINOOK_TABLES
from gfcr.envs.sql.data.questions import SQLQuestion
from gfcr.envs.sql.data.schema import Dialect, Table
from gfcr.envs.sql.data.tau2 import AIRLINE_TABLES, RETAIL_TABLES
from gfcr.envs.sql.engines.database import Database
from gfcr.envs.sql.engines.postgres import ensure_postgres_database
from gfcr.envs.sql.prompt import ENGINE_NAMES, render_table
from gfcr.errors import ConfigError, UnknownNameError

BUNDLED: dict[str, tuple[SQLQuestion, ...]] = {
    "chinook": tasks_chinook.QUESTIONS,
    "tau2_retail": tasks_tau2.RETAIL,
    "tau2_airline": tasks_tau2.AIRLINE,
}
GROUPS: dict[str, tuple[str, ...]] = {"all": tuple(BUNDLED), "tau2": ("tau2_retail", "tau2_airline")}
_TABLES: dict[str, tuple[Table, ...]] = {
    "chinook": CHINOOK_TABLES,
    "tau2_retail": RETAIL_TABLES,
    "tau2_airline": AIRLINE_TABLES,
}
_DESCRIPTIONS = {
    "chinook": "Chinook, a digital music store: artists, albums, tracks, playlists, customers, invoices",
    "tau2_retail": "an online retail store: products and their variants, users, orders, payments",
    "tau2_airline": "an airline: flights and their daily status, users, reservations, passengers, payments",
}


@dataclass(frozen=True)
class EngineSpec:
    """Which engine the env runs on, and where its databases live."""

    dialect: Dialect
    server_url: str | None = None  # PostgreSQL: the administrator's URL
    cache_dir: str | None = None  # SQLite/DuckDB: where built files go

    @classmethod
    def parse(cls, engine: str, cache_dir: str | Path | None = None) -> EngineSpec:
        """Read the `engine` keyword.

        >>> EngineSpec.parse("duckdb").dialect, EngineSpec.parse("postgresql://u@h/db").server_url
        ('duckdb', 'postgresql://u@h/db')
        """
        directory = None if cache_dir is None else str(cache_dir)
        if engine in ("sqlite", "duckdb"):
            return cls(engine, None, directory)  # type: ignore[arg-type]
        if engine in ("postgresql", "postgres"):
            url = os.environ.get("GFCR_POSTGRES_URL")
            if not url:
                raise ConfigError(
                    "engine='postgresql' needs a server: pass its URL as "
                    "engine='postgresql+psycopg://user@host/db' "
                    "or set GFCR_POSTGRES_URL (a throwaway one: gfcr.envs.sql.TemporaryPostgres().start())"
                )
            return cls("postgresql", url, directory)
        if "://" in engine:
            backend = sa.make_url(engine).get_backend_name()
            if backend == "postgresql":
                return cls("postgresql", engine, directory)
            if backend in ("sqlite", "duckdb"):
                raise ConfigError(
                    f"engine={engine!r}: SQLite and DuckDB databases are built into cache_dir; "
                    f"pass engine={backend!r}"
                    " (and cache_dir=... to choose the folder)"
                )
        raise UnknownNameError(
            "SQL engine", engine, ["sqlite", "duckdb", "postgresql"], hint="or a postgresql:// URL"
        )


def questions_for(
    dataset: str, db_dir: str | Path | None = None
) -> tuple[list[SQLQuestion], dict[str, Path]]:
    """The questions of a dataset name (bundled, a group, or a Spider/BIRD file) and BYO database files.

    >>> questions, files = questions_for("tau2")
    >>> len(questions), questions[0].id, files
    (45, 'tau2_retail/001', {})
    """
    if dataset in BUNDLED:
        return list(BUNDLED[dataset]), {}
    if dataset in GROUPS:
        return [q for name in GROUPS[dataset] for q in BUNDLED[name]], {}
    if dataset.endswith(".json"):
        return load_spider_or_bird(dataset, db_dir)
    raise UnknownNameError(
        "SQL dataset", dataset, [*GROUPS, *BUNDLED], hint="or the path of a Spider/BIRD .json task file"
    )


_OPEN: dict[tuple[int, EngineSpec, str, str], Database] = {}
_SCHEMAS: dict[tuple[Any, ...], str] = {}  # (pid, engine url, dialect, name, sample rows)
_LOCK = threading.Lock()


def open_database(spec: EngineSpec, name: str, byo_file: Path | None = None) -> Database:
    """The process's read-only `Database` for bundled dataset `name` (or a BYO SQLite file)."""
    key = (os.getpid(), spec, name, str(byo_file or ""))
    with _LOCK:
        if key not in _OPEN:
            _OPEN[key] = Database.from_url(_url(spec, name, byo_file), name)
        return _OPEN[key]


def _url(spec: EngineSpec, name: str, byo_file: Path | None) -> str | sa.URL:
    if byo_file is not None:
        if spec.dialect != "sqlite":
            raise ConfigError(
                f"Spider/BIRD databases are SQLite files; use engine='sqlite', not {spec.dialect!r}"
            )
        return f"sqlite:///{byo_file}"
    if spec.dialect == "postgresql":
        assert spec.server_url is not None  # EngineSpec.parse always sets it for PostgreSQL
        return ensure_postgres_database(name, spec.server_url)
    directory = None if spec.cache_dir is None else Path(spec.cache_dir)
    return f"{spec.dialect}:///{ensure_file_database(name, spec.dialect, directory)}"


def schema_prompt(database: Database, name: str, sample_rows: int = 3) -> str:
    """The database's description, tables (DDL in its dialect) and sample rows, as the agent sees them."""
    key = (os.getpid(), database.engine.url, database.dialect, name, sample_rows)
    with _LOCK:
        if key in _SCHEMAS:
            return _SCHEMAS[key]
    engine = ENGINE_NAMES[database.dialect]
    if name in _TABLES:
        parts = [f"The {engine} database holds {_DESCRIPTIONS[name]}."]
        for table in _TABLES[name]:
            order = ", ".join(table.primary_key) or "1"
            sample = (
                database.execute(f"SELECT * FROM {table.name} ORDER BY {order} LIMIT {sample_rows}")
                if sample_rows
                else None
            )
            parts.append(render_table(table.ddl(database.dialect), table.name, sample, table.description))
    else:
        parts = [f"The {engine} database {name!r}:"]
        listing = database.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
            "ORDER BY name"
        )
        for table_name, ddl in listing.rows:
            quoted = '"' + table_name.replace('"', '""') + '"'
            sample = database.execute(f"SELECT * FROM {quoted} LIMIT {sample_rows}") if sample_rows else None
            parts.append(render_table(ddl.strip(), table_name, sample))
    text = "\n\n".join(parts)
    with _LOCK:
        _SCHEMAS[key] = text
    return text
