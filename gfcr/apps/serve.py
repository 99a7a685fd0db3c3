"""`gfcr serve MODEL`: an OpenAI-compatible server over the `hf:` backend (FastAPI + uvicorn).

Endpoints: `GET /v1/models`, `POST /v1/chat/completions` (tools, `n`, `stop`, `seed`,
`logprobs`; no streaming), `GET /health`. Concurrent requests are gathered into batches by the
same `Batcher` the runner uses. With `tools` in the request, `<tool_call>` blocks the model
writes come back as native `tool_calls` (finish reason "tool_calls"), the rest as `content`.
Errors use OpenAI's shape, `{"error": {"message", "type", "code"}}`, with status 400 or 404.
"""

from __future__ import annotations

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

from gfcr.agents.runner.batcher import Batcher
from gfcr.core import Message, ToolCall, parse_action
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
    stream: bool = False


def create_app(policy: HFPolicy, model_name: str, *, max_batch_size: int = 64) -> FastAPI:
    """The ASGI app serving `policy` (a policy with a chat template, such as `HFPolicy`) as `model_name`."""
    app = FastAPI(title="gfcr serve", version="1")
    batcher: dict[str, Batcher] = {}  # made on the server's event loop at first use

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

    @app.post("/v1/chat/completions", response_model=None)
    async def chat(body: ChatRequest) -> dict[str, Any] | JSONResponse:
        if body.model != model_name:
            return error(
                404, f"model {body.model!r} not found; this server serves {model_name!r}", "not_found_error"
            )
        if body.stream:
            return error(400, "stream=true is not supported; send stream=false")
        try:
            messages = tuple(_message(m) for m in body.messages)
            stop = (body.stop,) if isinstance(body.stop, str) else tuple(body.stop or ())
            sampling = SamplingParams(
                body.temperature,
                body.top_p,
                body.max_completion_tokens or body.max_tokens or 1024,
                body.n,
                stop,
                body.seed,
            )
            tools = tuple(body.tools or ())
            prompt_ids = tuple(policy.encode_prompt(messages, tools))
        except (GfcrError, KeyError, TypeError, ValueError) as e:
            return error(400, f"invalid request: {e}")
        if "batcher" not in batcher:
            batcher["batcher"] = Batcher(
                policy, max_batch_size=max_batch_size, batch_timeout_s=0.0, timeout_s=600.0
            )
        completions = await batcher["batcher"].submit(
            Request(messages, tools, sampling, prompt_ids=prompt_ids)
        )
        choices = [_choice(i, c, policy, bool(tools), body.logprobs) for i, c in enumerate(completions)]
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model_name,
            "choices": choices,
            "usage": {
                "prompt_tokens": len(prompt_ids),
                "completion_tokens": sum(c.completion_tokens for c in completions),
                "total_tokens": len(prompt_ids) + sum(c.completion_tokens for c in completions),
            },
        }

    return app


def serve(path: str, *, host: str = "127.0.0.1", port: int = 8000, model_name: str | None = None) -> None:
    """Load the model at `path` and serve it until interrupted."""
    import uvicorn

    from gfcr.agents.policies.hf import HFPolicy

    policy = HFPolicy(path)
    uvicorn.run(create_app(policy, model_name or path), host=host, port=port, log_level="warning")


def _message(data: dict[str, Any]) -> Message:
    """A gfcr message from an OpenAI one (content as text or text parts; tool-call arguments as JSON)."""
    content = data.get("content") or ""
    if isinstance(content, list):
        content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
    calls = tuple(
        ToolCall(c["function"]["name"], json.loads(c["function"].get("arguments") or "{}"), c.get("id", ""))
        for c in data.get("tool_calls") or ()
    )
    return Message(data["role"], content, calls, data.get("tool_call_id"), data.get("name"))


def _choice(
    index: int, completion: Completion, policy: HFPolicy, with_tools: bool, logprobs: bool
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
    choice: dict[str, Any] = {"index": index, "message": message, "finish_reason": finish, "logprobs": None}
    if logprobs and completion.completion_ids is not None and completion.logprobs is not None:
        tokens = [policy.chat.decode([i]) for i in completion.completion_ids]
        choice["logprobs"] = {
            "content": [
                {"token": t, "logprob": lp, "bytes": list(t.encode()), "top_logprobs": []}
                for t, lp in zip(tokens, completion.logprobs, strict=True)
            ]
        }
    return choice
