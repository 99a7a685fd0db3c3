"""One request must not take `gfcr serve` down, and what it cannot honour it refuses (never ignores)."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi", reason="the serve extra is not installed")

from fastapi.testclient import TestClient  # noqa: E402

from gfcr.apps.serve import create_app  # noqa: E402

CHAT = {"model": "tiny", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4}


@pytest.fixture(scope="module")
def client(hf_policy):
    with TestClient(create_app(hf_policy, "tiny", max_request_bytes=256 << 10)) as client:
        yield client


def test_a_huge_body_is_refused_before_it_is_read_whole(client):
    huge = {**CHAT, "messages": [{"role": "user", "content": "x" * (1 << 20)}]}
    assert client.post("/v1/chat/completions", json=huge).status_code == 413

    def chunks():  # no content-length: the cap must hold on the stream itself
        for _ in range(64):
            yield b"x" * (16 << 10)

    reply = client.post(
        "/v1/chat/completions", content=chunks(), headers={"content-type": "application/json"}
    )
    assert reply.status_code == 413


def test_max_tokens_and_prompts_are_capped_by_the_models_context(client, hf_policy):
    context = hf_policy.max_positions
    reply = client.post("/v1/chat/completions", json={**CHAT, "max_tokens": 10**9})
    assert reply.status_code == 400 and f"context of {context} tokens" in reply.json()["error"]["message"]
    long = {**CHAT, "messages": [{"role": "user", "content": "word " * (context * 2)}], "max_tokens": None}
    assert client.post("/v1/chat/completions", json=long).status_code == 400
    assert client.post("/v1/chat/completions", json=CHAT).status_code == 200  # the server still works


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("top_logprobs", 5, "top_logprobs"),
        ("tool_choice", "required", "tool_choice"),
        ("tool_choice", {"type": "function", "function": {"name": "x"}}, "tool_choice"),
        ("response_format", {"type": "json_object"}, "response_format"),
    ],
)
def test_options_the_server_cannot_honour_are_refused(client, field, value, words):
    reply = client.post("/v1/chat/completions", json={**CHAT, field: value})
    assert reply.status_code == 400 and words in reply.json()["error"]["message"]


def test_tool_choice_none_offers_no_tools(client):
    tools = [{"type": "function", "function": {"name": "echo", "parameters": {"type": "object"}}}]
    with_tools = client.post("/v1/chat/completions", json={**CHAT, "tools": tools})
    without = client.post("/v1/chat/completions", json={**CHAT, "tools": tools, "tool_choice": "none"})
    assert with_tools.json()["usage"]["prompt_tokens"] > without.json()["usage"]["prompt_tokens"]
