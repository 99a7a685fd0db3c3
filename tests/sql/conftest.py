"""Fixtures of the SQL tests: a real PostgreSQL server, and the bundled databases on every engine."""

from __future__ import annotations

import os

import pytest
from gfcr.envs.sql.catalog import EngineSpec, open_database
from gfcr.envs.sql.pg_server import TemporaryPostgres

from gfcr.errors import ConfigError

ENGINES = ("sqlite", "duckdb", "postgresql")
DATASETS = ("chinook", "tau2_retail", "tau2_airline")


@pytest.fixture(scope="session")
def pg_url():
    """The URL of a throwaway PostgreSQL server started from the installed binaries for this session.

    Outside CI, a machine without PostgreSQL skips these tests; in CI (`CI` set) that is a failure.
    """
    try:
        server = TemporaryPostgres()
    except ConfigError as e:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"no PostgreSQL server binaries: {e}")
    server.start()
    yield server.url
    server.stop()


@pytest.fixture(scope="session")
def engine_specs(pg_url):
    """engine name -> EngineSpec (SQLite and DuckDB in the default cache, PostgreSQL on the test server)."""
    return {
        "sqlite": EngineSpec.parse("sqlite"),
        "duckdb": EngineSpec.parse("duckdb"),
        "postgresql": EngineSpec.parse(pg_url),
    }


@pytest.fixture(scope="session")
def databases(engine_specs):
    """engine -> dataset -> the read-only Database the env would use."""
    return {
        engine: {name: open_database(spec, name) for name in DATASETS}
        for engine, spec in engine_specs.items()
    }


@pytest.fixture(params=ENGINES)
def engine(request):
    return request.param


@pytest.fixture
def chinook_db(databases, engine):
    return databases[engine]["chinook"]
