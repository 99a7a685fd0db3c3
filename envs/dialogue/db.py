"""`Database`: a domain's tables, shared read-only, plus one episode's changes (copy on write).

The airline database holds 2,000 reservations and 500 users (7 MB of JSON); copying it on every
reset would cost more than the episode. So each episode sees the loaded tables through a
`Database` that keeps only the records it changed: a tool that writes asks for `edit(table, key)`,
which copies that one record into the episode's changes, and reads fall through to the shared
tables. Two databases over the same tables are in the same state when their changed records
agree, so comparing an episode's end state with the gold end state touches only changed records.

Records read with `get` belong to the shared tables: never mutate them, `edit` first.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from typing import Any

Tables = Mapping[str, Mapping[str, Any]]  # table name -> key -> record (JSON-like)


class Database:
    """A domain's tables seen through one episode's changes.

    >>> db = Database({"users": {"ana": {"name": "Ana", "orders": []}}})
    >>> db.edit("users", "ana")["orders"].append("#W1")
    >>> db.get("users", "ana"), db.base["users"]["ana"]
    ({'name': 'Ana', 'orders': ['#W1']}, {'name': 'Ana', 'orders': []})
    >>> db.same_state(Database(db.base)), db.changed_keys()
    (False, [('users', 'ana')])
    """

    def __init__(self, base: Tables) -> None:
        self.base = base
        self._changes: dict[str, dict[str, Any]] = {}

    def get(self, table: str, key: str) -> Any | None:
        """The record under `key`, or None; read-only (call `edit` to change it)."""
        changed = self._changes.get(table)
        if changed is not None and key in changed:
            return changed[key]
        return self.base[table].get(key)

    def __contains__(self, location: tuple[str, str]) -> bool:
        return self.get(*location) is not None

    def edit(self, table: str, key: str) -> Any:
        """The record under `key` as this episode's own copy, to change in place."""
        changed = self._changes.setdefault(table, {})
        if key not in changed:
            changed[key] = copy.deepcopy(self.base[table][key])
        return changed[key]

    def insert(self, table: str, key: str, record: Any) -> None:
        """Add a new record (or replace one) under `key`."""
        self._changes.setdefault(table, {})[key] = record

    def values(self, table: str) -> Iterator[Any]:
        """Every record of `table` as this episode sees it, in the base order, new records last."""
        changed = self._changes.get(table, {})
        for key, record in self.base[table].items():
            yield changed.get(key, record)
        for key, record in changed.items():
            if key not in self.base[table]:
                yield record

    def changed_keys(self) -> list[tuple[str, str]]:
        """(table, key) of every record this episode edited or inserted."""
        return [(table, key) for table, records in self._changes.items() for key in records]

    def same_state(self, other: Database) -> bool:
        """Whether both databases hold the same records (they must share their base tables)."""
        keys = set(self.changed_keys()) | set(other.changed_keys())
        return all(self.get(*key) == other.get(*key) for key in keys)

    def fork(self) -> Database:
        """An independent copy of this database, changes included."""
        forked = Database(self.base)
        forked._changes = copy.deepcopy(self._changes)
        return forked
