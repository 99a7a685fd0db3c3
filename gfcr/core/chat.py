"""A policy as a chat function: messages in, the reply's text out, each reply cached.

Components that need a model's words rather than a trajectory (an LLM judge, a simulated user)
talk to a `ChatModel`. `PolicyChat` makes one from any `Policy` — or from a policy spec such as
`"openai:judge@http://127.0.0.1:8000/v1"`, which `gfcr.registry.make_policy` builds with the
factory that `gfcr.agents` registers when imported — and caches replies by policy, sampling
parameters and conversation: in memory,
and in a SQLite file when `cache_path` is given, so a rerun asks the model nothing twice. Calls
that reach the model pass its admission gate (`admission`: how many at once, how long one may
queue; shared by every `PolicyChat` of the same model and settings in the process), and the
seconds they queued are recorded as the `resource` ("judge" or "user", see `gfcr.core.admission`).

>>> from gfcr.core.policy import Completion
>>> class Counter:  # a policy that numbers its replies
...     name, version, calls = "counter", "1", 0
...     def generate(self, requests):
...         self.calls += len(requests)
...         return [Completion(f"reply {self.calls}") for _ in requests]
>>> chat = PolicyChat(Counter())
>>> chat([Message("user", "Grade this.")], seed=1), chat([Message("user", "Grade this.")], seed=1)
('reply 1', 'reply 1')
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from gfcr.core.admission import AdmissionConfig
from gfcr.core.messages import Message
from gfcr.core.policy import Policy, Request, SamplingParams
from gfcr.errors import ConfigError
from gfcr.registry import make_policy


class ChatModel(Protocol):
    """Anything that answers a conversation with text."""

    def __call__(self, messages: Sequence[Message]) -> str: ...


class PolicyChat:
    """`policy` (a `Policy` or a spec) as a cached `ChatModel`; greedy unless `temperature` > 0.

    `seed`, per call, makes a sampled reply reproducible and is part of the cache key; `name` is
    what error messages call the policy (e.g. the env keyword it came from); `resource` and
    `admission` name and bound the model's queue (see the module docstring).
    """

    def __init__(
        self,
        policy: Policy | str,
        *,
        temperature: float = 0.0,
        max_tokens: int = 1024,
        cache_path: str | Path | None = None,
        name: str = "policy",
        resource: str = "judge",
        admission: AdmissionConfig | None = None,
    ) -> None:
        resolved: Policy = make_policy(policy) if isinstance(policy, str) else policy
        if not callable(getattr(resolved, "generate", None)):
            raise ConfigError(f"{name} must be a policy spec or an object with generate(), got {policy!r}")
        self.policy = resolved
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.cache = ReplyCache(cache_path)
        self.gate = (admission or AdmissionConfig()).shared_gate(resource, self.identity)

    @property
    def identity(self) -> str:
        """Which model answers: the policy's name and version (part of every cache key)."""
        policy = self.policy
        return f"{getattr(policy, 'name', type(policy).__name__)}@{getattr(policy, 'version', '')}"

    def __call__(self, messages: Sequence[Message], *, seed: int | None = None) -> str:
        sampling = SamplingParams(temperature=self.temperature, max_tokens=self.max_tokens, seed=seed)
        payload = [self.identity, sampling.temperature, sampling.top_p, sampling.max_tokens, seed,
                   [m.to_dict() for m in messages]]  # fmt: skip
        key = hashlib.sha256(json.dumps(payload, ensure_ascii=False).encode()).hexdigest()
        text = self.cache.get(key)
        if text is None:
            with self.gate.admit():
                text = self.policy.generate([Request(tuple(messages), (), sampling)])[0].text
            self.cache.put(key, text)
        return text


class ReplyCache:
    """Replies by key: a dict, backed by a SQLite file when `path` is given (safe across processes)."""

    def __init__(self, path: str | Path | None = None) -> None:
        self._memory: dict[str, str] = {}
        self._path = Path(path) if path else None
        self._lock = threading.Lock()
        if self._path is not None:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            with self._connect() as db:
                db.execute("CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, text TEXT NOT NULL)")

    def get(self, key: str) -> str | None:
        if key in self._memory or self._path is None:
            return self._memory.get(key)
        with self._lock, self._connect() as db:
            row = db.execute("SELECT text FROM replies WHERE key = ?", (key,)).fetchone()
        if row is not None:
            self._memory[key] = row[0]
        return self._memory.get(key)

    def put(self, key: str, text: str) -> None:
        self._memory[key] = text
        if self._path is not None:
            with self._lock, self._connect() as db:
                db.execute("INSERT OR REPLACE INTO replies VALUES (?, ?)", (key, text))

    def _connect(self) -> sqlite3.Connection:
        if self._path is None:
            raise ConfigError("ReplyCache has no file; it keeps replies in memory only")
        return sqlite3.connect(self._path, timeout=30)
