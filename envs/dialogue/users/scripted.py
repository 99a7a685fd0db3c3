"""The scripted user: deterministic, free, built from the task's user scenario.

It opens with the reason for the call, then answers each message of the agent by these rules,
first match wins:

1. a transfer to a human agent (said, or the transfer tool called) ends the call (`###TRANSFER###`);
2. a question about a topic it has facts on (user id, email, name, zip, address, order,
   reservation, payment) gets those facts, or what it does not know;
3. a message it cannot read (fewer than three words of its domain's policy, tool names and
   everyday service talk: gibberish, markup, off-topic text) gets "Sorry, I don't understand";
4. a request for confirmation gets its held-back scenario sentence about confirming if it has one,
   else "yes" while the gold end state still needs changes, else "no" (it refuses what it should);
5. once its goal is met (the database is in the gold end state and the required information was
   said) and its agenda is said, it ends the call (`###STOP###`);
6. otherwise it says the next sentence of its agenda (the task instructions);
7. with nothing left to say it asks the agent to go on.

A reply that moves things on (a fact, an agenda step, an answer to a confirmation, or a database
change since it last spoke) is progress; after `max_stalls` stalls without progress the user gives
up (end "gave_up", reward 0), so junk cannot wait out a task whose gold end state is "no change".
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import cache

from gfcr.core import Message, Task
from gfcr.envs.dialogue.data import load_domain
from gfcr.envs.dialogue.users.scenario import Fact, Scenario, asked_topics
from gfcr.envs.dialogue.users.simulator import (
    STOP,
    TRANSFER,
    Progress,
    UserTurn,
    agent_texts,
    asks_for_confirmation,
    says_transfer,
)
from gfcr.errors import GfcrError

_WORD = re.compile(r"[a-z]{3,}")
_REQUEST = re.compile(r"\?|\b(?:please|could you|can you|may i|let me know|tell me|provide|share)\b", re.I)
_MIN_KNOWN_WORDS = 3
_SERVICE_TALK = frozenset(
    "what which how when where why who could would please thank thanks sorry sure okay hello help let check "
    "look found account order details done one moment confirm yes".split()
)


class ScriptedUser:
    """A deterministic user simulator (see the module docstring for its rules).

    >>> from gfcr.envs.dialogue.users.simulator import Progress
    >>> task = load_domain("airline").task("airline/0")
    >>> user = ScriptedUser()
    >>> user.start(task, seed=0).text
    'I want to cancel reservation EHGLP3. It may be more than 24 hours after booking, but it is ok ...'
    >>> waiting = Progress(goal_met=False, writes_pending=True, changed=False, transferred=False)
    >>> user.reply([Message("assistant", "Sure. What is your user id, please?")], waiting).text
    'My user id is emma_kim_9957.'
    >>> user.reply([Message("assistant", "qz8 {} <> 42")], waiting).text
    "Sorry, I don't understand. Could you say that again?"
    """

    def __init__(self, max_stalls: int = 3) -> None:
        self.max_stalls = max_stalls
        self._scenario: Scenario | None = None
        self._vocabulary: frozenset[str] = frozenset()

    def start(self, task: Task, seed: int | None) -> UserTurn:
        self._scenario = _scenario(task.id, json.dumps(task.metadata["scenario"], sort_keys=True))
        self._vocabulary = _vocabulary(task.metadata["domain"])
        self._agenda = list(self._scenario.agenda)
        self._on_confirm = list(self._scenario.on_confirm)
        self._stalls = 0
        return UserTurn(self._scenario.opening or "Hi, I need help with my account.")

    def reply(self, messages: Sequence[Message], progress: Progress) -> UserTurn:
        if self._scenario is None:
            raise GfcrError("ScriptedUser.reply() called before start(); the env calls start() on reset")
        said = agent_texts(messages)
        text = said[-1] if said else ""
        turn = self._answer(text, progress)
        if turn is None:  # nothing that moves things on
            self._stalls += 1
            if self._stalls >= self.max_stalls:
                return UserTurn(f"This is not getting anywhere. Goodbye. {STOP}", end="gave_up")
            understood = self._understands(text)
            return UserTurn(
                "I have told you what I need. Could you please take care of it?"
                if understood
                else "Sorry, I don't understand. Could you say that again?"
            )
        if progress.changed:
            self._stalls = 0
        return turn

    def _answer(self, text: str, progress: Progress) -> UserTurn | None:
        """The reply by rules 1, 2 and 4-6, or None for a stall (rules 3 and 7)."""
        if progress.transferred or says_transfer(text):
            return UserTurn(f"Thank you, I will hold. {TRANSFER}", end="transfer")
        if _REQUEST.search(text) and (asked := asked_topics(text)) and (facts := self._facts_on(asked)):
            return self._progress(" ".join(fact.text for fact in facts))
        if not self._understands(text):
            return None
        if asks_for_confirmation(text):
            if self._on_confirm:
                return self._progress(self._on_confirm.pop(0))
            return self._progress(
                "Yes, please go ahead." if progress.writes_pending else "No, I don't want that."
            )
        if progress.goal_met and not self._agenda:
            return UserTurn(f"Thank you, that's all I needed. {STOP}", end="stop")
        if self._agenda:
            return self._progress(self._agenda.pop(0))
        return UserTurn("Is there anything else you need from me?") if progress.changed else None

    def _facts_on(self, asked: frozenset[str]) -> list[Fact]:
        assert self._scenario is not None
        known = [fact for fact in self._scenario.facts if fact.topics & asked]
        return known or [fact for fact in self._scenario.unknowns if fact.topics & asked]

    def _progress(self, text: str) -> UserTurn:
        self._stalls = 0
        return UserTurn(text)

    def _understands(self, text: str) -> bool:
        known = {word for word in _WORD.findall(text.lower()) if word in self._vocabulary}
        return len(known) >= _MIN_KNOWN_WORDS


@cache
def _scenario(task_id: str, instructions: str) -> Scenario:
    """A task's scenario, parsed once per process (keyed by the instructions' JSON text)."""
    return Scenario.from_instructions(json.loads(instructions))


@cache
def _vocabulary(domain: str) -> frozenset[str]:
    """The words the scripted user knows: its domain's policy, tool names, everyday service talk."""
    loaded = load_domain(domain)
    text = " ".join([loaded.policy, *loaded.toolkit.names]).replace("_", " ")
    return frozenset(_WORD.findall(text.lower())) | _SERVICE_TALK
