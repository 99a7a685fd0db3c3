"""The families that take proposals, by env id, and the proposer's prompt."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

from gfcr.core import Task
from gfcr.envs.proposals.base import ProposalFamily
from gfcr.errors import UnknownNameError

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
