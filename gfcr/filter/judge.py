"""`LLMJudge`: a verifier backed by a language model, with a cache so a rerun asks nothing twice.

The judge talks to a `ChatModel`: any callable from chat messages to the reply text. gfcr's
modules know no policy class (policies live in `gfcr.agents`, which depends on this package),
so a policy spec becomes a chat model in two lines at the call site:

    from gfcr.agents import Request, SamplingParams, make_policy
    policy = make_policy("openai:judge@http://127.0.0.1:8000/v1")
    chat = lambda messages: policy.generate([Request(tuple(messages), sampling=SamplingParams(temperature=0))])[0].text
    judge = LLMJudge(chat)
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from gfcr.core import Message, Task, Trajectory
from gfcr.errors import ConfigError
from gfcr.filter.verifier import Verdict

INSTRUCTIONS = (
    "You are a strict grader. Read the task, the reference answer if one is given, and the response. "
    "Reason briefly, then end with one line `SCORE: x` where x is a number from 0 (wrong) to 1 (fully correct)."
)
_SCORE = re.compile(r"SCORE:\s*([01](?:\.\d+)?|\.\d+)", re.IGNORECASE)


class ChatModel(Protocol):
    """Anything that answers a conversation with text."""

    def __call__(self, messages: Sequence[Message]) -> str: ...


@dataclass
class LLMJudge:
    """Scores a trajectory's final response in [0, 1]; passes at `pass_at`.

    `cache` maps a hash of the judge's prompt to its score; pass a persistent mapping (e.g.
    `shelve.open(path)`) to keep scores across runs. A reply without a readable `SCORE:` line
    scores 0.0 with the signal `judge_unparsed`.

    >>> calls = []
    >>> def model(messages):
    ...     calls.append(messages)
    ...     return "Looks right.\\nSCORE: 0.9"
    >>> from gfcr.core import Step
    >>> t = Trajectory("e", "t", "2+2?", [Step("4", "", 0.0, True, False)])
    >>> judge = LLMJudge(model)
    >>> judge.verify(Task("t", "2+2?", gold="4"), t), judge.verify(Task("t", "2+2?", gold="4"), t).reward
    (Verdict(reward=0.9, passed=True, signals={'judge_score': 0.9}), 0.9)
    >>> len(calls)  # the second verdict came from the cache
    1
    """

    model: ChatModel
    instructions: str = INSTRUCTIONS
    include_gold: bool = True  # show the task's gold data as the reference answer
    pass_at: float = 0.5
    cache: MutableMapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not 0.0 <= self.pass_at <= 1.0:
            raise ConfigError(f"pass_at must be in [0, 1], got {self.pass_at}")
        self._lock = threading.Lock()

    def verify(self, task: Task, trajectory: Trajectory) -> Verdict:
        messages = self.prompt(task, trajectory)
        key = hashlib.sha256(json.dumps([m.to_dict() for m in messages]).encode()).hexdigest()
        with self._lock:
            cached = self.cache.get(key)
        if cached is not None:
            return self._verdict(cached)
        scores = _SCORE.findall(self.model(messages))  # the last SCORE line counts
        if not scores:
            return Verdict(0.0, False, {"judge_score": 0.0, "judge_unparsed": True})
        score = min(1.0, float(scores[-1]))
        with self._lock:
            self.cache[key] = score
        return self._verdict(score)

    def prompt(self, task: Task, trajectory: Trajectory) -> list[Message]:
        """The judge's conversation: instructions, then task, reference and response."""
        response = trajectory.steps[-1].action if trajectory.steps else ""
        parts = [f"Task:\n{task.prompt}"]
        if self.include_gold and task.gold is not None:
            parts.append(f"Reference answer:\n{task.gold}")
        parts.append(f"Response:\n{response}")
        return [Message("system", self.instructions), Message("user", "\n\n".join(parts))]

    def _verdict(self, score: float) -> Verdict:
        return Verdict(score, score >= self.pass_at, {"judge_score": score})
