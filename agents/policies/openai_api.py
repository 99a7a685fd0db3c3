"""`openai:MODEL@BASE_URL`: any OpenAI-compatible server through the official `openai` client.

vLLM's and SGLang's servers, `gfcr serve`, hosted APIs. Tool calls come back natively parsed;
requests run concurrently up to `concurrency` (the server batches them); the client retries
connection errors, timeouts, 429s and 5xx with exponential backoff (`max_retries`); logprobs are
requested and kept where the server gives them, and so are token ids (`return_token_ids`, as
`gfcr serve` and vLLM answer it) and the `top_logprobs` that token entropies are estimated from
(`gfcr.filter.entropy.topk_entropy`); a server that refuses one of these fields is asked without
it from then on. So the runner keeps a served model's trajectories as trainable as `hf:`'s.
`gfcr serve` also names the weights that generated each completion (`gfcr_policy_version`), kept
as `Completion.policy_version`. The API key is read from `OPENAI_API_KEY` ("EMPTY" if unset, which
local servers accept).

The client lives on an event loop of the policy's own (a daemon thread), so `generate` works
from plain code and `agenerate` from any other loop, such as the runner's.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Sequence
from typing import Any

from gfcr.core import ToolCall
from gfcr.core.policy import Completion, Request
from gfcr.core.redact import redact
from gfcr.errors import ConfigError, PolicyError
from gfcr.filter.entropy import topk_entropy

_RETRYABLE = ("APIConnectionError", "APITimeoutError", "InternalServerError", "RateLimitError")


class OpenAIPolicy:
    """Chat completions from `base_url` (e.g. "http://127.0.0.1:8000/v1") for `model`."""

    def __init__(
        self,
        model: str,
        base_url: str,
        *,
        concurrency: int = 64,
        max_retries: int = 3,
        timeout_s: float = 600.0,
        logprobs: bool = True,
        token_ids: bool = True,
        top_logprobs: int = 20,
    ) -> None:
        if concurrency < 1 or max_retries < 0 or timeout_s <= 0 or not 0 <= top_logprobs <= 20:
            raise ConfigError(
                "need concurrency >= 1, max_retries >= 0, timeout_s > 0, 0 <= top_logprobs <= 20 "
                f"(the API's most); got {concurrency}, {max_retries}, {timeout_s}, {top_logprobs}"
            )
        try:
            import openai
        except ImportError as e:
            raise PolicyError(
                "the openai: backend needs the `openai` package: pip install 'gfcr[openai]'"
            ) from e
        self.name = redact(f"openai:{model}@{base_url}")  # trajectories record it: no credentials
        self.version = model
        self.model = model
        self.logprobs = logprobs
        self.token_ids = token_ids
        self.top_logprobs = top_logprobs if logprobs else 0
        self.max_concurrent_batches = concurrency
        self._loop = asyncio.new_event_loop()
        threading.Thread(target=self._loop.run_forever, name="gfcr-openai", daemon=True).start()
        api_key = os.environ.get("OPENAI_API_KEY", "EMPTY")

        async def setup() -> tuple[Any, asyncio.Semaphore]:
            client = openai.AsyncOpenAI(
                base_url=base_url, api_key=api_key, max_retries=max_retries, timeout=timeout_s
            )
            return client, asyncio.Semaphore(concurrency)

        self._client, self._slots = asyncio.run_coroutine_threadsafe(setup(), self._loop).result()

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        return asyncio.run_coroutine_threadsafe(self._generate(requests), self._loop).result()

    async def agenerate(self, requests: Sequence[Request]) -> list[Completion]:
        return await asyncio.wrap_future(
            asyncio.run_coroutine_threadsafe(self._generate(requests), self._loop)
        )

    def close(self) -> None:
        """Close the HTTP client and stop the policy's event loop."""
        asyncio.run_coroutine_threadsafe(self._client.close(), self._loop).result()
        self._loop.call_soon_threadsafe(self._loop.stop)

    async def _generate(self, requests: Sequence[Request]) -> list[Completion]:
        answers = await asyncio.gather(*(self._one(request) for request in requests))
        return [completion for answer in answers for completion in answer]

    async def _one(self, request: Request) -> list[Completion]:
        sampling = request.sampling
        arguments: dict[str, Any] = {
            "model": self.model,
            "messages": [message.to_openai() for message in request.messages],
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "max_tokens": sampling.max_tokens,
            "n": sampling.n,
            "logprobs": self.logprobs,
        }
        optional = {"tools": list(request.tools), "stop": list(sampling.stop), "seed": sampling.seed}
        arguments.update({key: value for key, value in optional.items() if value not in (None, [])})
        async with self._slots:
            try:
                response = await self._create(arguments)
            except Exception as e:
                kind = type(e).__name__
                raise PolicyError(f"{self.name}: {kind}: {e}", retryable=kind in _RETRYABLE) from e
        usage, choices = response.usage, response.choices
        prompt_tokens, completion_tokens = (
            (usage.prompt_tokens, usage.completion_tokens // max(len(choices), 1)) if usage else (0, 0)
        )
        prompt_ids = getattr(response, "prompt_token_ids", None)
        version = getattr(response, "gfcr_policy_version", None)
        return [
            _completion(choice, prompt_tokens, completion_tokens, prompt_ids, version) for choice in choices
        ]

    async def _create(self, arguments: dict[str, Any]) -> Any:
        """The chat completion, with token ids and top logprobs asked for while the server accepts them."""
        optional: dict[str, Any] = {"top_logprobs": self.top_logprobs} if self.top_logprobs else {}
        if self.token_ids:
            optional["extra_body"] = {"return_token_ids": True}
        try:
            return await self._client.chat.completions.create(**arguments, **optional)
        except Exception as e:
            # What this request asked for decides: a concurrent one may have turned it off already.
            refused = [field for field in ("return_token_ids", "top_logprobs") if field in str(e)]
            if type(e).__name__ != "BadRequestError" or not refused:
                raise
            if "return_token_ids" in refused and "extra_body" in optional:
                self.token_ids = False  # a server that does not know the field: ask without it from now on
            elif "top_logprobs" in refused and "top_logprobs" in optional:
                self.top_logprobs = 0  # likewise (gfcr serve gives the sampled token's logprob only)
            else:
                raise
            return await self._create(arguments)


def _completion(
    choice: Any,
    prompt_tokens: int,
    completion_tokens: int,
    prompt_ids: list[int] | None = None,
    version: str | None = None,
) -> Completion:
    """A Completion from one OpenAI choice; calls with unreadable arguments go back as text.

    Its `policy_version` is `gfcr serve`'s `gfcr_policy_version`, the choice's own or else the
    response's (`version`); None from other servers (their `system_fingerprint` names a backend
    configuration, not weights)."""
    content = choice.message.content or ""
    raw_calls = choice.message.tool_calls or []
    calls: list[ToolCall] = []
    for call in raw_calls:
        try:
            arguments = json.loads(call.function.arguments or "{}")
        except json.JSONDecodeError:
            arguments = None
        if not isinstance(arguments, dict):  # let the env's parser explain the problem to the model
            blocks = "".join(
                f'<tool_call>{{"name": {json.dumps(c.function.name)}, "arguments": '
                f"{c.function.arguments}}}</tool_call>"
                for c in raw_calls
            )
            content, calls = content + blocks, []
            break
        calls.append(ToolCall(call.function.name, arguments, call.id or ""))
    content_logprobs = choice.logprobs.content if choice.logprobs and choice.logprobs.content else None
    logprobs = tuple(item.logprob for item in content_logprobs) if content_logprobs else None
    entropies = None  # estimated over each position's top logprobs, where every position has them
    if content_logprobs and all(item.top_logprobs for item in content_logprobs):
        entropies = tuple(topk_entropy(top.logprob for top in item.top_logprobs) for item in content_logprobs)
    completion_ids = getattr(choice, "token_ids", None)
    return Completion(
        content,
        tuple(calls),
        finish_reason="length" if choice.finish_reason == "length" else "stop",
        prompt_ids=tuple(prompt_ids) if prompt_ids is not None and completion_ids is not None else None,
        completion_ids=tuple(completion_ids) if completion_ids is not None else None,
        logprobs=logprobs,
        entropies=entropies,
        prompt_tokens=prompt_tokens,
        completion_tokens=len(logprobs) if logprobs else completion_tokens,
        policy_version=getattr(choice, "gfcr_policy_version", None) or version,
    )
