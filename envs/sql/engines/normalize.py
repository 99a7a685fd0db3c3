"""Result values made comparable across engines: one Python value per SQL value, whatever the driver.

Drivers disagree on types: PostgreSQL and DuckDB give `Decimal` for NUMERIC, `datetime` for
TIMESTAMP and `bool` for BOOLEAN, where SQLite gives `float`, ISO text and 0/1. After
normalisation a number is an `int` (when integral) or a `float`, a date/time is its ISO text
(`2009-01-01 00:00:00`, `2009-01-01`, `06:00:00`), bytes are text (UTF-8, else hex),
NULL is None and NaN is the string "NaN".
"""

from __future__ import annotations

import datetime as dt
import math
import uuid
from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import Any

Row = tuple[Any, ...]
_EXACT_FLOAT_LIMIT = 2**53


def normalize_value(value: Any) -> Any:
    """One SQL value in the comparable form.

    >>> normalize_value(Decimal("3.00")), normalize_value(True), normalize_value(dt.datetime(2009, 1, 1))
    (3, 1, '2009-01-01 00:00:00')
    """
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float | Decimal):
        return _number(value)
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        return value.isoformat(sep=" ")
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return _number(value.total_seconds())
    if isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return raw.hex()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, list | tuple):
        return tuple(normalize_value(item) for item in value)
    if isinstance(value, dict):
        return tuple(sorted((str(key), normalize_value(item)) for key, item in value.items()))
    return str(value)


def normalize_rows(rows: Iterable[Sequence[Any]]) -> list[Row]:
    """Every value of every row normalised; rows become tuples."""
    return [tuple(normalize_value(value) for value in row) for row in rows]


def _number(value: float | Decimal) -> int | float | str:
    if isinstance(value, Decimal):
        if not value.is_finite():
            return "NaN" if value.is_nan() else float(value)
        if value == value.to_integral_value():
            return int(value)
        return float(value)
    if math.isnan(value):
        return "NaN"
    if value.is_integer() and abs(value) < _EXACT_FLOAT_LIMIT:
        return int(value)
    return value
