"""The simulated-user contract: how a user opens the conversation, replies, and ends it.

The env gives a user the conversation so far and `Progress`, what the env knows of the agent's
work (a scripted user, built from the task's gold data, may use it; an LLM user reads only the
conversation). A reply is a `UserTurn`: the text, and `end` when the user ends the conversation. Problems that
are the simulator's fault, not the agent's, come back in `flags` (`FAILURE_FLAGS`); the env
reports them as the `simulator_failure` signal so that such episodes are left out of pass^k.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from gfcr.core import Message, Task

STOP, TRANSFER, OUT_OF_SCOPE = "###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###"  # tau2-bench's tokens
AGENT_GREETING = "Hi! How can I help you today?"

# stop, transfer: the user ended it (the verdict counts); gave_up: the agent got nowhere (reward 0);
# out_of_scope, error: the simulator failed (reward 0, flagged as a simulator failure).
End = Literal["stop", "transfer", "gave_up", "out_of_scope", "error"]
ENDS_THAT_COUNT: frozenset[str] = frozenset({"stop", "transfer"})
# Flags a user may raise: the simulator's failures, and the guard that kept a stop from cutting off writes.
FAILURE_FLAGS: frozenset[str] = frozenset({"user_error", "out_of_scope", "invented_fact"})
STOP_DEFERRED = "stop_deferred"

_CONFIRMATION_REQUEST = re.compile(
    r"\bconfirm|\bproceed\b|\bgo ahead\b|\byes or no\b|\byes/no\b|\bshall i\b|\bshould i\b|"
    r"\bwould you like (?:me )?to\b|\bdo you want (?:me )?to\b|\bis that (?:correct|right|ok)\b"
    r"|\bare you sure\b",
    re.I,
)
_TRANSFER = re.compile(
    r"\btransferr?(?:ed|ing)?\b.{0,40}\bhuman\b|\bhuman agent\b.{0,40}\btransfer", re.I | re.S
)


@dataclass(frozen=True)
class Progress:
    """What the env knows of the agent's work when the user is about to reply."""

    goal_met: bool  # the database is in the gold end state and the required information was said
    writes_pending: bool  # the gold end state needs changes the database does not have yet
    changed: bool  # the database changed since the user last spoke
    transferred: bool  # the agent has called transfer_to_human_agents


@dataclass(frozen=True)
class UserTurn:
    """One reply of the simulated user; `end` is set when it ends the conversation."""

    text: str
    end: End | None = None
    flags: frozenset[str] = frozenset()  # e.g. {"invented_fact"}; see FAILURE_FLAGS


@runtime_checkable
class UserSimulator(Protocol):
    """A simulated user: opens the conversation for a task, then replies to the agent."""

    def start(self, task: Task, seed: int | None) -> UserTurn:
        """Begin an episode of `task` (the agent has greeted with `AGENT_GREETING`); the opening."""
        ...

    def reply(self, messages: Sequence[Message], progress: Progress) -> UserTurn:
        """Answer the agent's last message; `messages` is the whole conversation so far."""
        ...


def asks_for_confirmation(text: str) -> bool:
    """Whether an agent's message asks the user to confirm an action.

    >>> asks_for_confirmation("Shall I cancel reservation EHGLP3? Please confirm (yes/no).")
    True
    >>> asks_for_confirmation("Your reservation is cancelled.")
    False
    """
    return bool(_CONFIRMATION_REQUEST.search(text))


def says_transfer(text: str) -> bool:
    """Whether an agent's message says the user is being transferred to a human.

    >>> says_transfer("YOU ARE BEING TRANSFERRED TO A HUMAN AGENT. PLEASE HOLD ON.")
    True
    """
    return bool(_TRANSFER.search(text))


def agent_texts(messages: Sequence[Message]) -> list[str]:
    """The agent's messages to the user (assistant messages without tool calls), in order."""
    return [m.text for m in messages if m.role == "assistant" and not m.tool_calls]
