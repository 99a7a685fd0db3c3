"""The families that take proposals, by env id, and the proposer's prompt."""

from __future__ import annotations

import importlib
import json
from collections.abc import Sequence
from typing import Any

from gfcr.core import Task
from gfcr.envs.proposals.base import ProposalFamily
from gfcr.errors import DataError, UnknownNameError
from gfcr.proposals import ProvenanceRecord

FAMILIES = {
    "gfcr/Code-v0": "gfcr.envs.code.proposals:CODE",
    "gfcr/Math-v0": "gfcr.envs.math.proposals:MATH",
    "gfcr/SQL-v0": "gfcr.envs.sql.proposals:SQL",
}

PROMPT = """You write new practice tasks. Here are {count} tasks a learner has seen:

{examples}

Write ONE new task that differs from these: not a copy or a rewording, hard enough that a careful \
solver needs to think, and checkable. {format}"""


def family_of(env_id: str) -> ProposalFamily:
    """The proposal family of the env `env_id`.

    >>> family_of("gfcr/Math-v0").__class__.__name__
    'MathProposals'
    """
    if env_id not in FAMILIES:
        raise UnknownNameError("env with proposals", env_id, list(FAMILIES))
    module, name = FAMILIES[env_id].split(":")
    family: ProposalFamily = getattr(importlib.import_module(module), name)
    return family


def proposer_prompt(family: ProposalFamily, parents: Sequence[Task], env: Any) -> str:
    """The proposer's prompt: the parent tasks as examples, then the family's format.

    >>> prompt = proposer_prompt(family_of("gfcr/Math-v0"), [Task("t", "What is 1+1?", "2")], None)
    >>> prompt.splitlines()[2:4]
    ['Task 1:', 'What is 1+1?']
    """
    examples = "\n\n".join(f"Task {i + 1}:\n{family.describe(task, env)}" for i, task in enumerate(parents))
    return PROMPT.format(count=len(parents), examples=examples, format=family.format)


def restored_task(record: ProvenanceRecord) -> Task:
    """The task a verified proposal became, rebuilt from its provenance: id, prompt, source and
    metadata as stored, gold through its family (`ProposalFamily.gold_from`). A resumed run puts
    the generated tasks of its pool back this way.

    >>> record = ProvenanceRecord("gen/1", "gfcr/Math-v0", "What is 6*7?", '"42"', "v0", (), "valid", "",
    ...                           step_proposed=0, task_source="generated", task_metadata={})
    >>> restored_task(record)
    Task(id='gen/1', prompt='What is 6*7?', gold='42', source='generated', metadata={})
    """
    if record.task_source is None or record.task_metadata is None or not record.gold:
        raise DataError(
            f"proposal {record.id!r} holds no task to rebuild (verdict {record.verdict!r}, or a store "
            "written before tasks' source and metadata were kept): it cannot rejoin the pool"
        )
    try:
        gold = family_of(record.family).gold_from(json.loads(record.gold))
    except json.JSONDecodeError as e:
        raise DataError(f"proposal {record.id!r}: its gold is not JSON ({e}): {record.gold[:200]!r}") from e
    return Task(record.id, record.prompt, gold, record.task_source, dict(record.task_metadata))
