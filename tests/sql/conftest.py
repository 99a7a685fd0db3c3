"""Fixtures of the SQL tests: the bundled databases on every engine (PostgreSQL: `pg_url`, tests/conftest.py)."""

from __future__ import annotations

import pytest

from gfcr.envs.sql.data.catalog import EngineSpec, open_database

ENGINES = ("sqlite", "duckdb", "postgresql")
DATASETS = ("chinook", "tau2_retail", "tau2_airline")


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
