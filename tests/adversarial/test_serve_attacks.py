"""One request must not take `gfcr serve` or `gfcr serve-env` down, and what they cannot honour
they refuse (never ignore); nor may a flood of sockets keep their clients out."""

from __future__ import annotations

import json
import shutil
import socket
import time

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


# -- gfcr serve-env ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def env_client():
    pytest.importorskip("openenv", reason="the remote extra is not installed: pip install -e '.[remote]'")
    from gfcr.remote import create_app as create_env_app

    with TestClient(create_env_app("gfcr/ToolUse-v0"), raise_server_exceptions=False) as client:
        yield client


BAD_RESETS = [
    ('{"seed": 1e400}', "out of range"),
    ('{"seed": NaN}', "NaN"),
    ('{"seed": -Infinity}', "Infinity"),
    ('{"seed": ' + "9" * 5000 + "}", "5000 digits"),
    ('{"seed": 100000000000000000000000}', "seed must be an integer in [0, 2**63)"),
    ('{"seed": "seven"}', "seed"),
    ('{"seed": 1.5}', "seed"),
    ('{"seed": [1]}', "seed"),
    ('{"task_id": 7}', "task_id must be a string"),
    ('{"task_id": {"$ne": null}}', "task_id must be a string"),
    ('{"options": {"task_id": "tooluse/7", "level": 3}}', "reset options must be"),
    ('{"options": "tooluse/7"}', "reset options must be"),
    ('{"options": {"task_id": 7}}', "task_id must be a string"),
    ('{"sead": 3}', "unknown reset arguments ['sead']"),
]


@pytest.mark.parametrize(("body", "words"), BAD_RESETS)
def test_a_bad_seed_or_options_is_a_400_naming_it_on_http_and_an_error_on_the_websocket(env_client, body, words):
    reply = env_client.post("/reset", content=body, headers={"content-type": "application/json"})
    assert reply.status_code == 400 and words in reply.json()["detail"], reply.text
    with env_client.websocket_connect("/ws") as ws:
        data = body.replace("9" * 5000, "9" * 40)  # Python's json reads NaN, 1e400, long ints: refused here
        ws.send_text('{"type": "reset", "data": ' + data + "}")
        answer = json.loads(ws.receive_text())
        named = {next(iter(json.loads(data))), "task_id"}  # the bad argument (or the task id inside it)
        assert answer["type"] == "error" and any(name in answer["data"]["message"] for name in named), answer
        ws.send_text(json.dumps({"type": "reset", "data": {"task_id": "tooluse/7"}}))  # the session lives on
        assert json.loads(ws.receive_text())["data"]["metadata"]["task_id"] == "tooluse/7"
    assert env_client.post("/reset", json={"task_id": "tooluse/7"}).status_code == 200


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/step", '{"action": {"text": NaN}}'),
        ("/step", '{"action": {"text": "5"}, "timeout_s": 1e400}'),
        ("/mcp", '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "lookup", "arguments": {"x": Infinity}}}'),
    ],
)  # fmt: skip
def test_non_finite_numbers_are_refused_on_every_route(env_client, path, body):
    reply = env_client.post(path, content=body, headers={"content-type": "application/json"})
    assert reply.status_code == 400 and "not strict JSON" in reply.json()["detail"]


@pytest.mark.parametrize("calls", [[{}], [{"name": 1}], ["lookup"], [{"name": "lookup", "arguments": "{}"}]])
def test_malformed_native_tool_calls_are_refused_and_do_not_break_the_session(env_client, calls):
    assert env_client.post("/step", json={"action": {"tool_calls": calls}}).status_code == 422
    with env_client.websocket_connect("/ws") as ws:
        ws.send_text(json.dumps({"type": "reset", "data": {"task_id": "tooluse/7"}}))
        ws.receive_text()
        ws.send_text(json.dumps({"type": "step", "data": {"tool_calls": calls}}))
        assert json.loads(ws.receive_text())["data"]["code"] == "VALIDATION_ERROR"
        ws.send_text(json.dumps({"type": "step", "data": {"tool_calls": [{"name": "lookup"}]}}))
        assert json.loads(ws.receive_text())["data"]["observation"]["text"] == "5"  # the episode goes on


def test_remote_env_refuses_bad_reset_arguments_before_sending_them(tooluse_server):
    import gymnasium as gym

    from gfcr.errors import ConfigError

    env = gym.make("gfcr/Remote-v0", url=tooluse_server[0], token=tooluse_server[1], retries=0)
    with pytest.raises(ConfigError, match="seed must be an integer"):
        env.reset(seed=2**70)
    with pytest.raises(ConfigError, match="reset options"):
        env.reset(options={"task": "tooluse/7"})
    env.close()


@pytest.mark.skipif(shutil.which("prlimit") is None, reason="needs util-linux's prlimit")
def test_a_flood_of_idle_sockets_neither_locks_out_clients_nor_fills_the_log(serve_env):
    """300 sockets that never send a byte against a server that may open 256 files: before, accept()
    failed with EMFILE, authenticated resets timed out and the log took a line per failed accept."""
    token = {"Authorization": "Bearer s3cret"}
    args = ("gfcr/ToolUse-v0", "--token", "s3cret", "--read-timeout", "2")
    with serve_env(*args, prefix=("prlimit", "--nofile=256:256")) as (url, process):
        import httpx

        port = int(url.rsplit(":", 1)[1])
        flood = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(300)]
        try:
            for _ in range(3):  # served while the flood holds its sockets
                reply = httpx.post(f"{url}/reset", json={"task_id": "tooluse/7"}, headers=token, timeout=30)
                assert reply.status_code == 200 and reply.json()["metadata"]["task_id"] == "tooluse/7"
            assert httpx.post(f"{url}/reset", json={}, timeout=30).status_code == 401  # the flood's kind: refused
            deadline = time.monotonic() + 60  # every idle socket is closed by the server (read timeout: 2 s)
            open_ones = list(flood)
            while open_ones and time.monotonic() < deadline:
                open_ones = [s for s in open_ones if not _closed_by_peer(s)]
                time.sleep(0.2)
            assert not open_ones, f"{len(open_ones)} idle sockets still open after 60 s"
        finally:
            for s in flood:
                s.close()
        process.terminate()
        log = process.communicate(timeout=30)[1]
    assert log.count("Too many open files") <= 1 and len(log.splitlines()) < 40, log[-3000:]


def _closed_by_peer(s: socket.socket) -> bool:
    s.settimeout(0)
    try:
        return s.recv(1) == b""
    except (BlockingIOError, InterruptedError):
        return False
    except OSError:  # reset by the server
        return True
