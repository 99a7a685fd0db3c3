"""The contract of a family's proposals: the format it asks for, and verification by execution."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from gfcr.core import Task
from gfcr.errors import DataError


@dataclass(frozen=True)
class Verified:
    """A proposal that verified: its task; whether the answer the proposer claimed agrees with the
    executed one (None where the family's format claims none); and whether executing its check a
    second time gave the same result (the verifier's agreement with itself: the answer program
    prints the same answer, the reference solution passes the same tests, the gold query returns
    the same rows)."""

    task: Task
    claimed_agrees: bool | None = None
    rerun_agrees: bool | None = None


class ProposalFamily(Protocol):
    """What one env family does with proposals: `format` tells the proposer which tagged sections
    to write; `describe` shows a pool task as an example (a parent); `verify` turns the proposer's
    text into a `Task` with id `task_id` by executing it (a reference solution against its tests,
    an answer program, a gold query), or raises `gfcr.proposals.Rejected` with the reason.
    `env` is an env of the family (its sandbox, its databases); `parents` the tasks shown.
    `withheld` is the task with its question withheld, as a blind attempt sees it: the same gold
    (so the env grades it alike), a prompt that asks for an answer without saying to what
    (`gfcr.proposals.blind_task`) — its success is the policy's guess rate on that answer.
    `gold_from` rebuilds a task's gold from its JSON form (`gfcr.proposals.provenance.gold_text`),
    raising `gfcr.errors.DataError` for data that is not such a gold."""

    format: str

    def describe(self, task: Task, env: Any) -> str: ...

    def verify(self, text: str, env: Any, task_id: str, parents: Sequence[Task]) -> Verified: ...

    def withheld(self, task: Task) -> Task: ...

    def gold_from(self, data: Any) -> Any: ...


def text_gold(data: Any, what: str) -> str:
    """A gold that is one string (a math answer, a SQL query) from its JSON form; `what` names it
    in the error.

    >>> text_gold("42", "a math task's answer")
    '42'
    >>> text_gold(42, "a math task's answer")
    Traceback (most recent call last):
    ...
    gfcr.errors.DataError: a task's gold must be a math task's answer, a string; got 42
    """
    if not isinstance(data, str):
        raise DataError(f"a task's gold must be {what}, a string; got {data!r}")
    return data
