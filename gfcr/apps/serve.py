"""`gfcr serve MODEL`: an OpenAI-compatible server over the `hf:` backend (FastAPI + uvicorn).

Endpoints: `GET /v1/models`, `POST /v1/chat/completions` (tools, `tool_choice` "auto" or
"none", `n`, `stop`, `seed`, `logprobs`, vLLM's `return_token_ids`; no streaming),
`GET /health`, and weight pushes: `POST /v1/weights` (`{"path", "version"}`: a LoRA adapter folder
or safetensors of the model's parameters, loaded while serving; only on a server started with
`allow_weight_updates`, since it loads files from the server's disk: 403 otherwise) and
`GET /v1/weights` (the version serving now). Each completion says which weights generated it:
`gfcr_policy_version` on each choice and on the response (null there if a push fell between a
request's samples), and OpenAI's `system_fingerprint`.

Message content is text or OpenAI content parts: `text` and `image_url` parts holding `data:` URLs
(images go to a vision-language model, one with `sees_images`; a text model refuses them with a
400 naming the fix). Concurrent requests are gathered into batches by the same `Batcher` the
runner uses. With `tools` in the request, `<tool_call>` blocks the model writes come back as
native `tool_calls` (finish reason "tool_calls"), the rest as `content`. What it cannot honour
it refuses rather than ignores: `top_logprobs`, a forced `tool_choice`, a `response_format` other
than text.

One request cannot take the server down: bodies are capped (`max_request_bytes`, 413), a prompt
plus `max_tokens` must fit the model's context (400), and at most `max_pending` completions wait
at once (429 beyond). Errors use OpenAI's shape, `{"error": {"message", "type", "code"}}`.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI
from fastapi import Request as HttpRequest
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from gfcr.agents.policies.weights import load_weights_from
from gfcr.agents.runner.batcher import Batcher
from gfcr.apps.server_guard import Guard
from gfcr.core import Message, ToolCall, parse_action
from gfcr.core.messages import read_content
from gfcr.core.policy import Completion, Request, SamplingParams
from gfcr.errors import GfcrError

if TYPE_CHECKING:
    from gfcr.agents.policies.hf import HFPolicy

_TOOL_BLOCK = re.compile(r"<tool_call>.*?</tool_call>", re.DOTALL)


class ChatRequest(BaseModel):
    """The fields of a chat-completions request that gfcr serves (others are ignored)."""

    model: str
    messages: list[dict[str, Any]] = Field(min_length=1)
    tools: list[dict[str, Any]] | None = None
    temperature: float = Field(1.0, ge=0, le=2)
    top_p: float = Field(1.0, gt=0, le=1)
    max_tokens: int | None = Field(None, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    n: int = Field(1, ge=1, le=64)
    stop: str | list[str] | None = None
    seed: int | None = None
    logprobs: bool = False
    top_logprobs: int | None = Field(None, ge=0)
    tool_choice: str | dict[str, Any] | None = None
    response_format: dict[str, Any] | None = None
    return_token_ids: bool = False  # vLLM's extension: the prompt's and each choice's token ids
    stream: bool = False

    def unsupported(self) -> str | None:
        """Why gfcr cannot honour this request as asked (None if it can)."""
        if self.stream:
            return "stream=true is not supported; send stream=false"
        if self.top_logprobs:
            return "top_logprobs is not supported (the sampled token's logprob is: logprobs=true)"
        if self.tool_choice not in (None, "auto", "none"):
            return (
                f"tool_choice={self.tool_choice!r} is not supported: the model cannot be forced; use 'auto'"
            )
        if self.response_format and self.response_format.get("type", "text") != "text":
            return f"response_format {self.response_format.get('type')!r} is not supported; only 'text'"
        return None


class WeightsPush(BaseModel):
    """A `POST /v1/weights` body: weights on the server's disk and the version to call them."""

    path: str = Field(min_length=1)
    version: str = Field(min_length=1, max_length=256)


def create_app(
    policy: HFPolicy,
    model_name: str,
    *,
    max_batch_size: int = 64,
    max_request_bytes: int = 16 << 20,
    max_pending: int = 1024,
    allow_weight_updates: bool = False,
) -> Guard:
    """The ASGI app serving `policy` (a policy with a chat template, such as `HFPolicy`) as `model_name`.

    `max_request_bytes` caps a request body, images included (they arrive inline, base64).
    `allow_weight_updates` opens `POST /v1/weights` to anyone who can reach the server."""
    app = FastAPI(title="gfcr serve", version="1")
    sees_images = bool(getattr(policy, "sees_images", False))
    batcher: dict[str, Batcher] = {}  # made on the server's event loop at first use
    pending = [0]  # completions asked for and not yet answered
    pushing = asyncio.Lock()  # one weight push at a time

    def error(status: int, message: str, kind: str = "invalid_request_error") -> JSONResponse:
        return JSONResponse({"error": {"message": message, "type": kind, "code": status}}, status_code=status)

    @app.exception_handler(RequestValidationError)
    async def invalid(_: HttpRequest, e: RequestValidationError) -> JSONResponse:
        problems = "; ".join(f"{'.'.join(map(str, p['loc'][1:]))}: {p['msg']}" for p in e.errors())
        return error(400, f"invalid request: {problems}")

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {
            "object": "list",
            "data": [{"id": model_name, "object": "model", "created": 0, "owned_by": "gfcr"}],
        }

    @app.get("/v1/weights")
    async def weights() -> dict[str, str]:
        return {"object": "weights", "version": policy.version}

    @app.post("/v1/weights", response_model=None)
    async def push_weights(body: WeightsPush) -> dict[str, Any] | JSONResponse:
        if not allow_weight_updates:
            return error(
                403,
                "weight updates are off on this server: they load files from its disk, so they need "
                "`gfcr serve MODEL --allow-weight-updates` (on a trusted network)",
                "permission_error",
            )
        async with pushing:
            try:  # off the event loop: requests keep being answered while the files are read
                tensors = await asyncio.to_thread(load_weights_from, policy, body.path, body.version)
            except GfcrError as e:
                return error(400, f"weights not loaded, still serving {policy.version!r}: {e}")
        return {"object": "weights", "version": body.version, "tensors": tensors}

    @app.post("/v1/chat/completions", response_model=None)
    async def chat(body: ChatRequest) -> dict[str, Any] | JSONResponse:
        if body.model != model_name:
            return error(
                404, f"model {body.model!r} not found; this server serves {model_name!r}", "not_found_error"
            )
        if (problem := body.unsupported()) is not None:
            return error(400, problem)
        try:
            messages = tuple(_message(m) for m in body.messages)
            images = tuple(image for m in messages for image in m.images)
            if images and not sees_images:
                return error(
                    400,
                    f"the messages hold {len(images)} image(s), but this model ({model_name!r}) does not "
                    "take images; serve a vision-language model (e.g. `gfcr tiny-model --vision DIR`), "
                    "or send text only",
                )
            stop = (body.stop,) if isinstance(body.stop, str) else tuple(body.stop or ())
            tools = () if body.tool_choice == "none" else tuple(body.tools or ())
            prompt_ids = tuple(policy.encode_prompt(messages, tools))
        except (GfcrError, KeyError, TypeError, ValueError) as e:
            return error(400, f"invalid request: {e}")
        context = int(getattr(policy, "max_positions", 1 << 30))  # the model's context window
        room = context - len(prompt_ids)  # what is left of it for the completion
        max_tokens = body.max_completion_tokens or body.max_tokens or min(1024, room)
        if max_tokens > room or room < 1:
            return error(
                400,
                f"the prompt ({len(prompt_ids)} tokens) plus max_tokens ({max_tokens}) is over the model's "
                f"context of {context} tokens; shorten the conversation or lower max_tokens",
            )
        sampling = SamplingParams(body.temperature, body.top_p, max_tokens, body.n, stop, body.seed)
        if pending[0] + body.n > max_pending:
            return error(
                429, f"the server is busy ({pending[0]} completions waiting); retry later", "rate_limit"
            )
        if "batcher" not in batcher:
            batcher["batcher"] = Batcher(
                policy, max_batch_size=max_batch_size, batch_timeout_s=0.0, timeout_s=600.0
            )
        pending[0] += body.n
        try:
            completions = await batcher["batcher"].submit(
                Request(messages, tools, sampling, prompt_ids=prompt_ids, images=images)
            )
        finally:
            pending[0] -= body.n
        # the weights each completion came from; a policy that does not say: its version now
        versions = [policy.version if c.policy_version is None else c.policy_version for c in completions]
        choices = [
            _choice(i, c, v, policy, bool(tools), body.logprobs)
            for i, (c, v) in enumerate(zip(completions, versions, strict=True))
        ]
        version = versions[0] if len(set(versions)) == 1 else None  # n samples may straddle a push
        ids: dict[str, Any] = {}
        if body.return_token_ids:
            ids["prompt_token_ids"] = list(prompt_ids)
            for choice, completion in zip(choices, completions, strict=True):
                choice["token_ids"] = list(completion.completion_ids or ())
        return {
            **ids,
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model_name,
            "system_fingerprint": version,
            "gfcr_policy_version": version,
            "choices": choices,
            "usage": {
                "prompt_tokens": len(prompt_ids),
                "completion_tokens": sum(c.completion_tokens for c in completions),
                "total_tokens": len(prompt_ids) + sum(c.completion_tokens for c in completions),
            },
        }

    return Guard(app, token=None, max_request_bytes=max_request_bytes, idle_timeout_s=None)


def serve(
    path: str,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    model_name: str | None = None,
    allow_weight_updates: bool = False,
) -> None:
    """Load the model at `path` and serve it until interrupted."""
    import uvicorn

    from gfcr.agents.policies.hf import HFPolicy

    policy = HFPolicy(path)
    app = create_app(policy, model_name or path, allow_weight_updates=allow_weight_updates)
    uvicorn.run(app, host=host, port=port, log_level="warning")


def _message(data: dict[str, Any]) -> Message:
    """A gfcr message from an OpenAI one (content as text, or text and `image_url` parts holding
    `data:` URLs; tool-call arguments as JSON)."""
    content = read_content(data.get("content") or "")
    calls = tuple(
        ToolCall(c["function"]["name"], json.loads(c["function"].get("arguments") or "{}"), c.get("id", ""))
        for c in data.get("tool_calls") or ()
    )
    return Message(data["role"], content, calls, data.get("tool_call_id"), data.get("name"))


def _choice(
    index: int, completion: Completion, version: str, policy: HFPolicy, with_tools: bool, logprobs: bool
) -> dict[str, Any]:
    action, errors = parse_action(completion.text) if with_tools else (None, [])
    message: dict[str, Any] = {"role": "assistant", "content": completion.text}
    finish = completion.finish_reason
    if action is not None and action.tool_calls and not errors:
        message["content"] = _TOOL_BLOCK.sub("", completion.text).strip() or None
        message["tool_calls"] = [
            {**call.to_openai(), "id": f"call_{uuid.uuid4().hex[:24]}"} for call in action.tool_calls
        ]
        finish = "tool_calls"
    choice: dict[str, Any] = {
        "index": index,
        "message": message,
        "finish_reason": finish,
        "logprobs": None,
        "gfcr_policy_version": version,  # the weights that generated it
    }
    if logprobs and completion.completion_ids is not None and completion.logprobs is not None:
        tokens = [policy.chat.decode([i]) for i in completion.completion_ids]
        choice["logprobs"] = {
            "content": [
                {"token": t, "logprob": lp, "bytes": list(t.encode()), "top_logprobs": []}
                for t, lp in zip(tokens, completion.logprobs, strict=True)
            ]
        }
    return choice
