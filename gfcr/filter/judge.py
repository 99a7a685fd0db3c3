"""`LLMJudge`: a verifier backed by a language model, with a cache so a rerun asks nothing twice.

The judge talks to a `ChatModel`: any callable from chat messages to the reply text. It also
takes a gfcr policy, or a policy spec (`"openai:MODEL@URL"`, `"hf:PATH"`, `"vllm:PATH"` …),
which `gfcr.core.chat.PolicyChat` turns into a chat model:

    judge = LLMJudge("openai:judge@http://127.0.0.1:8000/v1")
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import MutableMapping
from dataclasses import dataclass, field
from typing import Any

from gfcr.core import Message, Task, Trajectory
from gfcr.core.admission import AdmissionConfig
from gfcr.core.chat import ChatModel, PolicyChat
from gfcr.core.verdict import Verdict
from gfcr.errors import ConfigError

INSTRUCTIONS = (
    "You are a strict grader. Read the task, the reference answer if one is given, and the response. "
    "Reason briefly, then end with one line `SCORE: x` where x is a number from 0 (wrong) "
    "to 1 (fully correct)."
)
_SCORE = re.compile(r"SCORE:\s*([01](?:\.\d+)?|\.\d+)", re.IGNORECASE)


@dataclass
class LLMJudge:
    """Scores a trajectory's final response in [0, 1]; passes at `pass_at`.

    `model` is a `ChatModel`, a policy or a policy spec (see `PolicyChat`; greedy decoding).
    `cache` maps a hash of the judge's prompt (and of the model's spec, or policy name and
    version) to its score; pass a persistent mapping (e.g.
    `shelve.open(path)`) to keep scores across runs. A reply without a readable `SCORE:` line
    scores 0.0 with the signal `judge_unparsed`. `admission` bounds the calls to the model at once
    (every judge of the same model and settings in the process shares one queue); the seconds a
    verdict queued are recorded as "judge" (`gfcr.core.admission`), and a verdict that queues past
    `queue_timeout_s` raises `QueueTimeoutError`: the judge failed, not the agent.

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

    model: ChatModel | Any  # a chat model, a policy, or a policy spec (str)
    instructions: str = INSTRUCTIONS
    include_gold: bool = True  # show the task's gold data as the reference answer
    pass_at: float = 0.5
    cache: MutableMapping[str, float] = field(default_factory=dict)
    admission: AdmissionConfig = field(default_factory=AdmissionConfig)

    def __post_init__(self) -> None:
        if not 0.0 <= self.pass_at <= 1.0:
            raise ConfigError(f"pass_at must be in [0, 1], got {self.pass_at}")
        model: Any = self.model
        # Which model judged is part of a cache key: a shared cache never mixes two judges' scores.
        self._identity = (
            model
            if isinstance(model, str)
            else f"{getattr(model, 'name', '')}@{getattr(model, 'version', '')}"
        )
        if isinstance(model, str) or callable(getattr(model, "generate", None)):
            model = PolicyChat(model)
        if not callable(model):
            raise ConfigError(f"model must be a chat model, a policy or a policy spec, got {model!r}")
        self._chat: ChatModel = model
        self._gate = self.admission.shared_gate("judge", self._identity)
        self._lock = threading.Lock()

    def verify(self, task: Task, trajectory: Trajectory) -> Verdict:
        messages = self.prompt(task, trajectory)
        payload = [self._identity, [m.to_dict() for m in messages]]
        key = hashlib.sha256(json.dumps(payload).encode()).hexdigest()
        with self._lock:
            cached = self.cache.get(key)
        if cached is not None:
            return self._verdict(cached)
        with self._gate.admit():
            reply = self._chat(messages)
        scores = _SCORE.findall(reply)  # the last SCORE line counts
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
