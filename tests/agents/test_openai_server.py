"""`gfcr serve` and the `openai:` backend, against each other: a real server, the real `openai` client."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest
from runner_envs import EchoEnv  # noqa: F401  (registers test/Echo-v0)

openai = pytest.importorskip("openai", reason="the openai extra is not installed")
pytest.importorskip("fastapi", reason="the serve extra is not installed")

from gfcr.agents import Completion, Request, Runner, RunnerConfig, SamplingParams, episodes_for_env  # noqa: E402
from gfcr.agents.policies.chat import ChatTokens  # noqa: E402
from gfcr.agents.policies.openai_api import OpenAIPolicy  # noqa: E402
from gfcr.agents.runner.specs import EpisodeSpec, env_config  # noqa: E402
from gfcr.apps.serve import create_app  # noqa: E402
from gfcr.core import read_jsonl  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_up(url: str, process: subprocess.Popen | None = None, timeout_s: float = 240) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}: {process.stderr.read()}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"{url} did not come up in {timeout_s} s")


@pytest.fixture(scope="module")
def served(tiny_model):
    """`gfcr serve TINY --name tiny` in its own process, as a user starts it."""
    port = free_port()
    gfcr = Path(sys.executable).parent / "gfcr"
    process = subprocess.Popen([str(gfcr), "serve", str(tiny_model), "--port", str(port), "--name", "tiny"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(url, process)
        yield url, process
    finally:
        process.kill()
        process.wait(30)


def test_models_and_chat_completions_with_logprobs_n_and_usage(served):
    url, _ = served
    client = openai.OpenAI(base_url=url + "/v1", api_key="EMPTY", max_retries=0)
    assert [m.id for m in client.models.list()] == ["tiny"]
    question = [{"role": "user", "content": "What is 2+2?"}]
    response = client.chat.completions.create(
        model="tiny", messages=question, max_tokens=6, n=2, logprobs=True, seed=1
    )
    assert len(response.choices) == 2
    for choice in response.choices:
        assert choice.finish_reason in ("stop", "length") and isinstance(choice.message.content, str)
        assert 1 <= len(choice.logprobs.content) <= 6 and all(t.logprob <= 0 for t in choice.logprobs.content)
    assert response.usage.prompt_tokens > 5 and response.usage.completion_tokens >= 2


def test_history_with_tool_calls_and_tool_results_is_accepted(served):
    url, _ = served
    client = openai.OpenAI(base_url=url + "/v1", api_key="EMPTY", max_retries=0)
    tools = [
        {"type": "function", "function": {"name": "echo", "parameters": {"type": "object", "properties": {}}}}
    ]
    call = {"id": "c1", "type": "function", "function": {"name": "echo", "arguments": '{"text": "hi"}'}}
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "Say hi"}]},  # content as parts
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "echo: hi"},
    ]
    response = client.chat.completions.create(model="tiny", messages=messages, tools=tools, max_tokens=4)
    assert response.choices[0].message.role == "assistant"


def test_bad_requests_get_openai_errors_naming_the_problem(served):
    url, _ = served
    client = openai.OpenAI(base_url=url + "/v1", api_key="EMPTY", max_retries=0)
    with pytest.raises(openai.NotFoundError, match="model 'gpt-9' not found; this server serves 'tiny'"):
        client.chat.completions.create(model="gpt-9", messages=[{"role": "user", "content": "x"}])
    with pytest.raises(openai.BadRequestError, match="temperature"):
        client.chat.completions.create(
            model="tiny", messages=[{"role": "user", "content": "x"}], temperature=7
        )
    with pytest.raises(openai.BadRequestError, match="role"):
        client.chat.completions.create(model="tiny", messages=[{"role": "wizard", "content": "x"}])


def test_the_openai_backend_runs_episodes_through_the_server_and_records_a_server_death(served, tmp_path):
    url, process = served
    policy = OpenAIPolicy("tiny", url + "/v1", concurrency=4, max_retries=1, timeout_s=30)
    out = tmp_path / "run.jsonl"
    done: list[str] = []

    def kill_after_three(trajectory) -> None:
        done.append(trajectory.status)
        if len(done) == 3:
            process.kill()

    specs = episodes_for_env("gfcr/Math-v0", 12, kwargs={"split": "AIME2024"})
    # Each episode's failure is recorded, not the run stopped after 5 failed batches in a row
    # (that fail-fast is tested in test_runner.py).
    config = RunnerConfig(concurrency=2, sampling=SamplingParams(max_tokens=8), max_consecutive_failures=100)
    result = Runner(policy, config).run(specs, out, on_episode=kill_after_three)
    policy.close()
    assert result.episodes == 12 and len(list(read_jsonl(out))) == 12
    ok = [t for t in result.trajectories if t.status == "ok"]
    failed = [t for t in result.trajectories if t.status == "failed"]
    assert len(ok) >= 3 and failed, "the server died after three episodes; later ones cannot succeed"
    assert all(
        t.failure.startswith("policy unavailable: ") and "APIConnectionError" in t.failure for t in failed
    )
    assert all(
        t.steps and t.cost.tokens_out > 0 and t.provenance.policy == f"openai:tiny@{url}/v1" for t in ok
    )
    assert all(len(t.steps) == 0 for t in failed)


class CallsEchoOnce(ChatTokens):
    """A token policy (the tiny model's tokenizer) that calls `echo`, then answers once it has the result."""

    version = "1"

    def __init__(self, hf_policy) -> None:
        self.name, self.chat = "calls-echo", hf_policy.chat

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        out = []
        for request in requests:
            called = request.messages[-1].role == "tool"
            call = json.dumps({"name": "echo", "arguments": {"text": "ü"}})
            text = "done" if called else f"Calling.<tool_call>{call}</tool_call>"
            ids = self.chat.encode(text)
            out.append(
                Completion(
                    text, completion_ids=tuple(ids), logprobs=(0.0,) * len(ids), completion_tokens=len(ids)
                )
            )
        return out


@pytest.mark.timeout(120)
def test_native_tool_calls_travel_from_the_server_to_the_env_and_back(hf_policy):
    """The server turns `<tool_call>` text into native `tool_calls`; the env runs them from the Action."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(create_app(CallsEchoOnce(hf_policy), "calls"), port=port, log_level="error")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        wait_until_up(f"http://127.0.0.1:{port}", timeout_s=60)
        policy = OpenAIPolicy("calls", f"http://127.0.0.1:{port}/v1", max_retries=0)
        spec = EpisodeSpec(env_config("test/Echo-v0"), "turns-3")
        (trajectory,) = Runner(policy).run([spec]).trajectories
        policy.close()
    finally:
        server.should_exit = True
        thread.join(10)
    assert trajectory.status == "ok" and trajectory.total_reward == 1.0
    calls = [m for m in trajectory.messages if m.role == "assistant" and m.tool_calls]
    assert calls and calls[0].content == "Calling." and calls[0].tool_calls[0].arguments == {"text": "ü"}
    assert calls[0].tool_calls[0].id.startswith("call_")
    results = [m for m in trajectory.messages if m.role == "tool"]
    assert (
        results and results[0].content == "echo: ü" and results[0].tool_call_id == calls[0].tool_calls[0].id
    )


class SaysNext(ChatTokens):
    """Answers "next" as the tiny model's token ids (its end-of-turn token included), as a model would;
    a `TokenPolicy` (`ChatTokens`): prompts and observations encoded with the tiny model's template."""

    version = "1"

    def __init__(self, hf_policy) -> None:
        self.name, self.chat = "says-next", hf_policy.chat

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        ids = (*self.chat.encode("next"), *sorted(self.chat.end_ids))
        return [Completion("next", completion_ids=ids, logprobs=(-0.5,) * len(ids)) for _ in requests]


@contextmanager
def in_process_server(policy, name: str):
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(policy, name), port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        wait_until_up(f"http://127.0.0.1:{port}", timeout_s=60)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.should_exit = True
        thread.join(10)


@pytest.mark.timeout(120)
def test_served_multi_turn_trajectories_keep_the_servers_token_ids(hf_policy):
    """`return_token_ids`: an episode through `gfcr serve` is as trainable as through `hf:` — the
    model's ids with their logprobs (mask 1), the observations between turns as the server saw them (mask 0)."""
    with in_process_server(SaysNext(hf_policy), "next") as url:  # the server renders as hf: would
        policy = OpenAIPolicy("next", url, max_retries=0)
        spec = EpisodeSpec(env_config("test/Echo-v0"), "turns-3", seed=0)
        (served,) = Runner(policy, RunnerConfig(concurrency=1)).run([spec]).trajectories
        policy.close()
    (local,) = Runner(SaysNext(hf_policy), RunnerConfig(concurrency=1)).run([spec]).trajectories
    assert served.status == "ok" and len(served.steps) == 3 and served.tokens is not None
    assert served.tokens == local.tokens  # the same ids, masks and logprobs as a TokenPolicy gives
