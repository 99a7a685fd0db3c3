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
With `deadline_s`, a call the model has not answered in time fails (`PolicyError`) while the run
goes on; the late answer still lands in the cache, and holds its admission slot until it does, so
the model never serves more calls at once than its gate allows. `replies` asks many conversations
in one call (one batch: an HF or vLLM policy decodes them together).

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

import contextvars
import hashlib
import json
import sqlite3
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import ExitStack
from pathlib import Path
from typing import Protocol

from gfcr.core.admission import AdmissionConfig
from gfcr.core.messages import Message
from gfcr.core.policy import Policy, Request, SamplingParams
from gfcr.errors import ConfigError, PolicyError
from gfcr.registry import make_policy


class ChatModel(Protocol):
    """Anything that answers a conversation with text."""

    def __call__(self, messages: Sequence[Message]) -> str: ...


class PolicyChat:
    """`policy` (a `Policy` or a spec) as a cached `ChatModel`; greedy unless `temperature` > 0.

    `seed`, per call, makes a sampled reply reproducible and is part of the cache key; `name` is
    what error messages call the policy (e.g. the env keyword it came from); `resource` and
    `admission` name and bound the model's queue, `deadline_s` its answer (see the module docstring).
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
        deadline_s: float | None = None,
    ) -> None:
        resolved: Policy = make_policy(policy) if isinstance(policy, str) else policy
        if not callable(getattr(resolved, "generate", None)):
            raise ConfigError(f"{name} must be a policy spec or an object with generate(), got {policy!r}")
        if deadline_s is not None and not deadline_s > 0:
            raise ConfigError(
                f"{name} deadline_s must be > 0 seconds (or None: no deadline), got {deadline_s!r}"
            )
        self.policy = resolved
        self.name = name
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.deadline_s = deadline_s
        self.cache = ReplyCache(cache_path)
        self.gate = (admission or AdmissionConfig()).shared_gate(resource, self.identity)

    @property
    def identity(self) -> str:
        """Which model answers: the policy's name and version (part of every cache key)."""
        policy = self.policy
        return f"{getattr(policy, 'name', type(policy).__name__)}@{getattr(policy, 'version', '')}"

    def __call__(self, messages: Sequence[Message], *, seed: int | None = None) -> str:
        return self.replies([messages], seed=seed)[0]

    def replies(self, conversations: Sequence[Sequence[Message]], *, seed: int | None = None) -> list[str]:
        """The reply to each conversation; those not cached are asked in one call to the policy
        (one admission slot, one deadline). Raises what the policy raised, `PolicyError` past the
        deadline, `QueueTimeoutError` past the queue's."""
        sampling = SamplingParams(temperature=self.temperature, max_tokens=self.max_tokens, seed=seed)
        keys = [self._key(messages, sampling) for messages in conversations]
        texts = [self.cache.get(key) for key in keys]
        asked = [i for i, text in enumerate(texts) if text is None]
        if asked:
            requests = [Request(tuple(conversations[i]), (), sampling) for i in asked]
            for i, text in zip(asked, self._ask(requests, [keys[i] for i in asked]), strict=True):
                texts[i] = text
        return [text for text in texts if text is not None]

    def _key(self, messages: Sequence[Message], sampling: SamplingParams) -> str:
        payload = [self.identity, sampling.temperature, sampling.top_p, sampling.max_tokens, sampling.seed,
                   [m.to_dict() for m in messages]]  # fmt: skip
        return hashlib.sha256(json.dumps(payload, ensure_ascii=False).encode()).hexdigest()

    def _ask(self, requests: list[Request], keys: list[str]) -> list[str]:
        """The policy's answers, cached; past `deadline_s` the caller gets a `PolicyError` and the
        call goes on in its thread, holding its admission slot until the policy answers."""
        slot = ExitStack()
        slot.enter_context(self.gate.admit())  # queues here, in the caller, under the queue's timeout

        def answer() -> list[str]:
            with slot:
                texts = [c.text for c in self.policy.generate(requests)]
            for key, text in zip(keys, texts, strict=True):
                self.cache.put(key, text)
            return texts

        if self.deadline_s is None:
            return answer()
        future: Future[list[str]] = Future()

        def run() -> None:
            try:
                future.set_result(answer())
            except Exception as e:  # handed to the caller, if it still waits
                future.set_exception(e)

        # A daemon thread: a model that never answers must not keep the process alive at exit.
        context = contextvars.copy_context()  # the caller's wait ledger, for the policy's own waits
        threading.Thread(target=context.run, args=(run,), name=f"gfcr-{self.name}", daemon=True).start()
        try:
            return future.result(timeout=self.deadline_s)
        except FutureTimeout:
            raise PolicyError(
                f"{self.name} {self.identity} did not answer {len(requests)} conversation(s) within "
                f"deadline_s={self.deadline_s}; raise deadline_s, or ask less (max_tokens) or fewer at once",
                retryable=True,
            ) from None


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
