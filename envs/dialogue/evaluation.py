"""The judgement of a conversation: end state against the gold end state, and what the agent said.

tau2-bench's reward, computed without a model: the episode succeeds when the final database
equals the one obtained by replaying the task's gold actions on the initial database (so any
sequence of calls that reaches the same state succeeds), and every `communicate_info` string
appears in a message the agent sent the user (case-insensitive, commas ignored, as tau2-bench
checks). The share of gold actions the agent called (tau2-bench's "action" check) is reported
but not scored: it penalises equivalent paths.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gfcr.core import Message, Task, ToolCall
from gfcr.envs.dialogue.data import load_domain
from gfcr.envs.dialogue.db import Database
from gfcr.envs.dialogue.users.simulator import agent_texts
from gfcr.errors import ToolError


@dataclass(frozen=True)
class GoldState:
    """A task's gold end state, and the gold actions that failed when replayed (empty if none)."""

    db: Database
    errors: tuple[str, ...]

    @property
    def expects_change(self) -> bool:
        """Whether the gold actions change the database (if not, doing nothing keeps it right)."""
        return not self.db.same_state(Database(self.db.base))


@dataclass(frozen=True)
class ConversationJudgement:
    """The components of the reward, each also reported as a signal."""

    db_match: bool
    communicated: bool
    gold_actions_called: float

    @property
    def reward(self) -> float:
        return 1.0 if self.db_match and self.communicated else 0.0


_GOLD: dict[tuple[str, str], GoldState] = {}


def gold_state(task: Task) -> GoldState:
    """Replay `task`'s gold actions on the initial database (once per process and task).

    >>> task = load_domain("retail").task("retail/0")
    >>> state = gold_state(task)
    >>> state.errors, state.expects_change, state.db.get("orders", "#W2378156")["status"]
    ((), True, 'exchange requested')
    """
    key = (task.id, json.dumps(task.gold["actions"], sort_keys=True))
    if key not in _GOLD:
        domain = load_domain(task.metadata["domain"])
        db = Database(domain.tables)
        tools = domain.toolkit(db)
        errors = []
        for action in task.gold["actions"]:
            try:
                tools.call(action["name"], action["arguments"])
            except ToolError as e:
                errors.append(f"{action['name']}({json.dumps(action['arguments'])}): {e}")
        _GOLD[key] = GoldState(db, tuple(errors))
    return _GOLD[key]


def judge(task: Task, db: Database, messages: Sequence[Message]) -> ConversationJudgement:
    """The judgement of an episode of `task` that ended with database `db` after `messages`."""
    return ConversationJudgement(
        db_match=db.same_state(gold_state(task).db),
        communicated=not unsaid(task, messages),
        gold_actions_called=_share_called(task, list(_calls(messages))),
    )


def evaluate_conversation(task: Task, messages: Sequence[Message]) -> ConversationJudgement:
    """Judge a recorded conversation offline: replay its tool calls on the initial database.

    >>> task = load_domain("retail").task("retail/108")  # return three items, say the refund
    >>> calls = tuple(ToolCall(a["name"], a["arguments"]) for a in task.gold["actions"])
    >>> said = Message("assistant", "You get 346.93 back.")
    >>> evaluate_conversation(task, [Message("assistant", "", calls), said])
    ConversationJudgement(db_match=True, communicated=True, gold_actions_called=1.0)
    """
    return judge(task, replay(task, _calls(messages)), messages)


def replay(task: Task, calls: Iterable[ToolCall]) -> Database:
    """The database of `task` after running `calls` in order on the initial one, as the env runs them.

    >>> task = load_domain("retail").task("retail/108")
    >>> replay(task, [ToolCall("no_such_tool", {})]).changed_keys()  # a refused call changes nothing
    []
    """
    domain = load_domain(task.metadata["domain"])
    db = Database(domain.tables)
    tools = domain.toolkit(db)
    for call in calls:
        try:
            tools.call(call.name, call.arguments)
        except ToolError:
            pass  # a refused call changes nothing
        except Exception:  # a tool's own crash: the env reports it to the agent and goes on, so do we
            pass
    return db


def unsaid(task: Task, messages: Sequence[Message]) -> list[str]:
    """The task's `communicate_info` strings that no message of the agent to the user contains."""
    said = [text.lower().replace(",", "") for text in agent_texts(messages)]
    return [info for info in task.gold["communicate_info"] if not any(info.lower() in text for text in said)]


def _share_called(task: Task, calls: Sequence[ToolCall]) -> float:
    gold = task.gold["actions"]
    if not gold:
        return 1.0
    made = [(c.name, c.arguments) for c in calls]
    return sum((a["name"], a["arguments"]) in made for a in gold) / len(gold)


def _calls(messages: Sequence[Message]) -> Iterable[ToolCall]:
    for message in messages:
        if message.role == "assistant":
            yield from message.tool_calls
