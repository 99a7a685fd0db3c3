"""Provenance of every proposed task: who proposed it from what, how it verified, when it came and went.

One row per proposal, kept or rejected: its id, family (env id), prompt, gold (JSON) and, for a
task that verified, its source and metadata (so a resumed run rebuilds it losslessly:
`gfcr.envs.proposals.restored_task`), the proposer's policy version, the parent tasks its prompt
showed, the verdict (`valid`, or the kind of rejection) with its reason, the solver's success on it
and its blind success (the guess rate with the question withheld: `gfcr.proposals.guessing`),
whether the proposer's claimed answer agreed with the executed one (where it claims one), whether
executing its check a second time gave the same result, the step it was proposed, added to the pool
and retired. Storage
goes through SQLAlchemy (`gfcr.storage.open_database`: a SQLite file by default); each write is one
committed transaction, so a killed run loses nothing it had recorded. `gfcr diagnose` reads it to
show drift: generated tasks' share, difficulty and verifier agreement over training.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    Float,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    delete,
    select,
    update,
)

from gfcr.errors import DataError, StorageError
from gfcr.storage import open_database

metadata = MetaData()
table = Table(
    "proposed_tasks",
    metadata,
    Column("id", String(128), primary_key=True),
    Column("family", String(255), nullable=False, index=True),  # the env id its tasks run in
    Column("prompt", Text, nullable=False),
    Column("gold", Text, nullable=False),  # the gold data as JSON (`gold_text`); "" for a rejected one
    Column("task_source", String(255), nullable=True),  # None: rejected, or written by an older gfcr
    Column("task_metadata", JSON, nullable=True),  # the same
    Column("proposer_version", String(255), nullable=False),
    Column("parent_ids", JSON, nullable=False),
    Column("verdict", String(32), nullable=False, index=True),  # "valid" or a kind of REJECTIONS
    Column("reason", Text, nullable=False),
    Column("solver_success", Float, nullable=True),  # None: no solver ran (rejected before)
    Column("blind_success", Float, nullable=True),  # None: no blind attempt ran (or an older gfcr)
    Column("claimed_agrees", Boolean, nullable=True),  # None: the proposal claimed no answer
    Column("rerun_agrees", Boolean, nullable=True),  # None: not verified (or by an older gfcr)
    Column("step_proposed", Integer, nullable=False, index=True),
    Column("step_added", Integer, nullable=True),  # None: never joined the pool
    Column("step_retired", Integer, nullable=True),  # None: in the pool still (or never added)
    Column("created", Float, nullable=False),  # Unix seconds
)


@dataclass(frozen=True)
class ProvenanceRecord:
    """One proposal's provenance (the columns of `proposed_tasks`)."""

    id: str
    family: str
    prompt: str
    gold: str
    proposer_version: str
    parent_ids: tuple[str, ...]
    verdict: str
    reason: str
    step_proposed: int
    solver_success: float | None = None
    blind_success: float | None = None  # the guess rate: success with the question withheld
    claimed_agrees: bool | None = None
    rerun_agrees: bool | None = None  # its check executed twice gave the same result
    task_source: str | None = None  # the verified task's `Task.source` …
    task_metadata: dict[str, Any] | None = None  # … and `Task.metadata` (None: rejected)
    step_added: int | None = None
    step_retired: int | None = None
    created: float = dataclasses.field(default_factory=time.time)

    @property
    def active(self) -> bool:
        """Whether the task is in the choose pool: added and not retired."""
        return self.step_added is not None and self.step_retired is None


class ProvenanceStore:
    """The proposals of a run, in a database (`target`: a SQLAlchemy URL or a SQLite path; the
    default keeps them in memory).

    >>> store = ProvenanceStore()
    >>> store.record(ProvenanceRecord("gen/1", "gfcr/Math-v0", "1+2?", "3", "v0", ("mmath/0",), "valid", "",
    ...                               step_proposed=0, solver_success=0.5, step_added=0))
    >>> store.retire("gen/1", step=7)
    >>> [(r.id, r.step_added, r.step_retired, r.active) for r in store.records()]
    [('gen/1', 0, 7, False)]
    """

    def __init__(self, target: str | Path = "sqlite://") -> None:
        self.engine = open_database(target, metadata)

    def record(self, record: ProvenanceRecord) -> None:
        """Store one proposal (a proposal id recorded twice is an error: ids name one proposal)."""
        row = dataclasses.asdict(record) | {"parent_ids": list(record.parent_ids)}
        try:
            with self.engine.begin() as conn:
                conn.execute(table.insert().values(**row))
        except Exception as e:
            raise StorageError(f"cannot record proposal {record.id!r} in {self.engine.url!r}: {e}") from e

    def retire(self, task_id: str, *, step: int) -> None:
        """Mark a task as leaving the choose pool at `step`."""
        with self.engine.begin() as conn:
            done = conn.execute(update(table).where(table.c.id == task_id).values(step_retired=step))
        if done.rowcount != 1:
            raise StorageError(f"no proposal {task_id!r} to retire in {self.engine.url!r}")

    def rewind(self, step: int) -> None:
        """Forget what happened at or after `step`, for a run resumed from a checkpoint written
        before it: the proposals made then are deleted and the retirements then undone (the resumed
        run makes its own).

        >>> store = ProvenanceStore()
        >>> for n in (0, 1):
        ...     store.record(ProvenanceRecord(f"gen/{n}", "gfcr/Math-v0", "?", '"1"', "v0", (), "valid", "",
        ...                                   step_proposed=n, step_added=n))
        >>> store.retire("gen/0", step=1)
        >>> store.rewind(1)
        >>> [(r.id, r.step_retired) for r in store.records()]
        [('gen/0', None)]
        """
        with self.engine.begin() as conn:
            conn.execute(delete(table).where(table.c.step_proposed >= step))
            conn.execute(update(table).where(table.c.step_retired >= step).values(step_retired=None))

    def records(self) -> list[ProvenanceRecord]:
        """Every proposal, in the order proposed."""
        with self.engine.connect() as conn:
            rows = conn.execute(select(table).order_by(table.c.step_proposed, table.c.created)).mappings()
            return [ProvenanceRecord(**{**row, "parent_ids": tuple(row["parent_ids"])}) for row in rows]

    def close(self) -> None:
        self.engine.dispose()


def gold_text(gold: object) -> str:
    """A task's gold data as JSON (a dataclass as its fields), from which each family rebuilds it
    (`ProposalFamily.gold_from`); gold that is not plain data is refused, since it would not come back.

    >>> gold_text("42"), gold_text({"sql": "SELECT 1"})
    ('"42"', '{"sql": "SELECT 1"}')
    """
    if dataclasses.is_dataclass(gold) and not isinstance(gold, type):
        gold = dataclasses.asdict(gold)
    try:
        return json.dumps(gold, ensure_ascii=False)
    except TypeError as e:
        raise DataError(
            "a generated task's gold must be plain data (JSON) or a dataclass of it, got "
            f"{type(gold).__name__}: {e}"
        ) from e
