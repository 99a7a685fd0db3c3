"""Scripted policies: the oracle (gold actions) and random junk, for every env family.

`scripted:oracle` proves a verifier accepts correct work: it must score 1.0 on every bundled
task. `scripted:random` proves the verifier rejects junk: it must score near 0.
"""

from __future__ import annotations

import random
import string
from collections.abc import Sequence

from gfcr.core.policy import Completion, Request
from gfcr.envs.remote.wire import require_gold
from gfcr.errors import ConfigError
from gfcr.registry import env_class


class OraclePolicy:
    """Answers with the env's gold action for the task (`TextEnv.oracle`)."""

    name = "scripted:oracle"
    version = "1"
    description = "gold answers from each task's data: the verifiers' upper bound"

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        completions = []
        for request in requests:
            if request.task is None or not request.env_id:
                raise ConfigError("the oracle needs each request's env_id and task; the runner fills them in")
            task = require_gold(request.task)  # a server may withhold it: then say how to get it
            text = env_class(request.env_id).oracle(task, request.messages)  # type: ignore[attr-defined]
            completions.append(Completion(text))
        return completions


class RandomPolicy:
    """Emits junk of the kinds models produce: prose, random numbers in boxes, broken tool calls."""

    name = "scripted:random"
    version = "1"
    description = "junk text and broken tool calls: what the verifiers must reject"

    def __init__(self, seed: int = 0) -> None:
        self._rng = random.Random(seed)

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        return [Completion(self._junk(request)) for request in requests]

    def _junk(self, request: Request) -> str:
        rng = self._rng
        words = "".join(rng.choices(string.ascii_letters + string.digits + " {}\\$<>", k=rng.randint(0, 80)))
        tool = rng.choice(request.tools)["function"]["name"] if request.tools else "tool"
        choices = [
            words,
            f"I think the answer is \\boxed{{{rng.randint(-(10**6), 10**6)}}}",
            f"\\boxed{{{words}}}",
            f'<tool_call>{{"name": "{tool}", "arguments": {{"x": {rng.random()}}}}}</tool_call>',
            "<tool_call>{broken",
            "SELECT 1; DROP TABLE users;",
        ]
        return rng.choice(choices)
