"""The databases: Chinook and tau2 on every engine, built once into a checksummed cache."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

from gfcr.envs.sql.data.build import build_key, ensure_file_database
from gfcr.envs.sql.engines.database import Database
from gfcr.envs.sql.engines.postgres import database_name, ensure_postgres_database

CHINOOK_COUNTS = {
    "Artist": 275, "Album": 347, "Track": 3503, "Genre": 25, "MediaType": 5, "Playlist": 18,
    "PlaylistTrack": 8715,
    "Employee": 8, "Customer": 59, "Invoice": 412, "InvoiceLine": 2240,
}  # fmt: skip


def test_chinook_has_the_canonical_tables_and_all_fixture_rows(databases, engine):
    database = databases[engine]["chinook"]
    for table, count in CHINOOK_COUNTS.items():
        assert database.execute(f"SELECT COUNT(*) FROM {table}").rows == [(count,)]
    assert sum(CHINOOK_COUNTS.values()) == 15_607
    # canonical column names, and values mapped from the Django fixture's fields
    row = database.execute(
        "SELECT c.FirstName, c.SupportRepId, e.LastName, i.Total, i.InvoiceDate, l.UnitPrice, l.Quantity "
        "FROM Customer c JOIN Employee e ON e.EmployeeId = c.SupportRepId "
        "JOIN Invoice i ON i.CustomerId = c.CustomerId "
        "JOIN InvoiceLine l ON l.InvoiceId = i.InvoiceId WHERE i.InvoiceId = 1 ORDER BY l.InvoiceLineId"
    )
    from gfcr.envs.sql.engines.normalize import normalize_rows

    assert normalize_rows(row.rows)[0] == ("Leonie", 5, "Johnson", 1.98, "2007-01-01 00:00:00", 0.99, 1)


def test_tau2_nested_json_becomes_related_tables(databases, engine):
    retail, airline = databases[engine]["tau2_retail"], databases[engine]["tau2_airline"]
    assert retail.execute("SELECT COUNT(*) FROM orders").rows == [(1000,)]
    assert retail.execute("SELECT COUNT(*) FROM order_items").rows == [(2978,)]
    orphans = retail.execute(
        "SELECT COUNT(*) FROM order_items LEFT JOIN variants ON variants.item_id = order_items.item_id "
        "WHERE variants.item_id IS NULL"
    )
    assert orphans.rows == [(0,)]
    assert airline.execute("SELECT COUNT(*) FROM reservation_flights").rows == [(5003,)]
    assert airline.execute("SELECT COUNT(*) FROM flights WHERE arrival_day_offset = 1").rows == [(36,)]
    seats = airline.execute(
        "SELECT available_seats, price FROM flight_cabins "
        "WHERE flight_number = 'HAT001' AND flight_date = '2024-05-16' "
        "AND cabin = 'business'"
    )
    assert seats.rows == [(13, 471)]


def test_file_databases_are_built_once_and_rebuilt_when_stale_or_tampered(tmp_path):
    path = ensure_file_database("tau2_retail", "sqlite", tmp_path)
    manifest = json.loads(path.with_name(path.name + ".json").read_text())
    assert manifest["build_key"] == build_key("tau2_retail") and len(manifest["sha256"]) == 64
    built = path.stat().st_mtime_ns
    assert ensure_file_database("tau2_retail", "sqlite", tmp_path) == path
    assert path.stat().st_mtime_ns == built  # current: not rebuilt

    with open(path, "r+b") as handle:  # tampered bytes: the checksum no longer matches
        handle.seek(200)
        handle.write(b"\x00garbage\x00")
    ensure_file_database("tau2_retail", "sqlite", tmp_path)
    assert json.loads(path.with_name(path.name + ".json").read_text())["sha256"] == manifest["sha256"]
    assert Database.from_url(f"sqlite:///{path}").execute("SELECT COUNT(*) FROM orders").rows == [(1000,)]

    stale = dict(manifest, build_key="an older builder")
    path.with_name(path.name + ".json").write_text(json.dumps(stale))
    ensure_file_database("tau2_retail", "sqlite", tmp_path)
    assert json.loads(path.with_name(path.name + ".json").read_text())["build_key"] == build_key(
        "tau2_retail"
    )

    path.unlink()
    assert ensure_file_database("tau2_retail", "sqlite", tmp_path).exists()
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == [
        "tau2_retail.sqlite",
        "tau2_retail.sqlite.json",
    ]


def test_duckdb_files_are_cached_too(tmp_path):
    path = ensure_file_database("chinook", "duckdb", tmp_path)
    assert Database.from_url(f"duckdb:///{path}").execute("SELECT COUNT(*) FROM Track").rows == [(3503,)]


def test_postgres_databases_are_rebuilt_when_their_build_key_changes(pg_url):
    admin = sa.create_engine(pg_url, isolation_level="AUTOCOMMIT")
    reader_url = ensure_postgres_database("tau2_retail", pg_url)
    with admin.connect() as connection:
        connection.exec_driver_sql(
            f"COMMENT ON DATABASE {database_name('tau2_retail')} IS 'gfcr build stale'"
        )
    reader_url = ensure_postgres_database("tau2_retail", pg_url)
    with admin.connect() as connection:
        comment = connection.exec_driver_sql(
            "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = 'gfcr_tau2_retail'"
        ).scalar()
    admin.dispose()
    assert comment == f"gfcr build {build_key('tau2_retail')}"
    assert reader_url.username == "gfcr_reader"
    assert Database.from_url(reader_url).execute("SELECT COUNT(*) FROM users").rows == [(500,)]


@pytest.mark.parametrize("table", ["Artist", "artist", "ARTIST"])
def test_unquoted_names_work_on_every_engine(databases, engine, table):
    assert databases[engine]["chinook"].execute(f"SELECT COUNT(*) FROM {table}").rows == [(275,)]
