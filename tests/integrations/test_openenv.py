"""`gfcr serve-env` and `gfcr/Remote-v0` against openenv's own clients and servers, on loopback."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import gymnasium as gym
import httpx
import pytest

openenv = pytest.importorskip(
    "openenv", reason="the remote extra is not installed: pip install -e '.[remote]'"
)

import uvicorn  # noqa: E402
from openenv.core.generic_client import GenericEnvClient  # noqa: E402
from openenv.core.mcp_client import MCPToolClient  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

import gfcr  # noqa: E402
from gfcr.agents import Runner, RunnerConfig, episodes_for_env, make_policy  # noqa: E402
from gfcr.core import Message  # noqa: E402
from gfcr.envs.remote.wire import withhold_gold  # noqa: E402
from gfcr.envs.tooluse.env import LOOKUP_CALL  # noqa: E402
from gfcr.remote import GfcrEnvClient, GfcrObservation, NativeToolCall, TextAction, create_app  # noqa: E402
from gfcr.testing.openenv_echo import echo_app  # noqa: E402

TASK = "tooluse/7"  # its code is 5


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serving(app, **uvicorn_options) -> Iterator[str]:
    """`app` served by uvicorn in a thread; yields its url."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, port=port, log_level="error", **uvicorn_options))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "the test server did not start"
        time.sleep(0.02)
    try:
        yield url
    finally:
        server.should_exit = True
        thread.join(10)


@pytest.fixture(scope="module")
def server_url(tooluse_server) -> str:
    return tooluse_server[0]


AUTH = {"Authorization": "Bearer s3cret"}


def test_openenv_generic_client_plays_an_episode_with_gfcr_extras_in_metadata(server_url):
    with GenericEnvClient(base_url=server_url, headers=AUTH).sync() as env:
        first = env.reset(task_id=TASK)
        assert first.observation["text"].startswith("What is the code of locker aah")
        assert (
            first.metadata["task_id"] == TASK and first.metadata["tools"][0]["function"]["name"] == "lookup"
        )
        looked = env.step({"text": LOOKUP_CALL})
        assert looked.observation["text"] == "5" and looked.metadata["signals"]["used_tool"] is True
        answer = env.step({"text": "5"})
        assert (answer.reward, answer.done) == (1.0, True)
        assert answer.metadata["signals"]["correct"] is True and answer.metadata["terminated"] is True
        assert env.state()["task_id"] == TASK


def test_openenv_async_client_and_native_tool_calls(server_url):
    async def play() -> tuple[str, float | None]:
        async with GenericEnvClient(base_url=server_url, headers=AUTH) as env:
            await env.reset(task_id=TASK)
            looked = await env.step({"tool_calls": [{"name": "lookup", "arguments": {}}]})
            answer = await env.step({"text": looked.observation["text"]})
            return looked.metadata["messages"][0]["role"], answer.reward

    assert asyncio.run(play()) == ("tool", 1.0)


def test_mcp_tool_client_lists_real_schemas_and_calls_tools_inside_the_episode(server_url):
    with GenericEnvClient(base_url=server_url, headers=AUTH).sync() as env:
        env.reset(task_id=TASK)
        listed = env.step({"type": "list_tools"})
        assert listed.observation["tools"] == [
            {"name": "lookup", "description": "Read the code of the locker in the question.",
             "input_schema": {"type": "object", "properties": {}}}
        ]  # fmt: skip

    async def mcp() -> tuple[list[str], object, float | None]:
        async with MCPToolClient(base_url=server_url, headers=AUTH) as env:
            await env.reset(task_id=TASK)
            names = [tool.name for tool in await env.list_tools()]
            code = await env.call_tool("lookup")
            answer = await env.step(TextAction(text=str(code)))
            return names, code, answer.reward

    assert asyncio.run(mcp()) == (["lookup"], "5", 1.0)


def test_remote_env_behaves_like_the_local_env(server_url):
    remote = gym.make("gfcr/Remote-v0", url=server_url, token="s3cret")
    local = gym.make("gfcr/ToolUse-v0")
    assert (
        remote.reset(options={"task_id": TASK})[1]["tools"]
        == local.reset(options={"task_id": TASK})[1]["tools"]
    )
    results = []
    for env in (remote, local):
        obs, info = env.reset(seed=3)
        steps = [env.step(LOOKUP_CALL), env.step("nope"), env.step("after the end")]
        results.append(
            (obs, withhold_gold(info["task"]), [(o, r, t, u, i["signals"], i["messages"]) for o, r, t, u, i in steps])
        )
    assert results[0] == results[1]  # the same episode, the server keeping the gold back
    with pytest.raises(gfcr.UnknownNameError, match="did you mean"):
        remote.reset(options={"task_id": "tooluse/7x"})
    assert remote.unwrapped.tasks[7].id == TASK and len(remote.unwrapped.tasks) == 10_000
    remote.close()


def test_typed_client_plays_an_episode_with_gfcrs_own_action_and_observation_classes(server_url):
    with GfcrEnvClient(base_url=server_url, headers=AUTH).sync() as env:
        first = env.reset(task_id=TASK)
        obs = first.observation
        assert isinstance(obs, GfcrObservation) and obs.text.startswith("What is the code of locker aah")
        assert (obs.env_id, obs.task_id, obs.task.id, obs.task.gold) == ("gfcr/ToolUse-v0", TASK, TASK, None)
        assert obs.tools[0]["function"]["name"] == "lookup" and obs.messages == [Message("user", obs.text)]
        looked = env.step(TextAction(tool_calls=[NativeToolCall(name="lookup", id="c1")]))  # a native tool call
        assert looked.observation.text == "5" and looked.observation.signals["used_tool"] is True
        assert looked.observation.messages[0].role == "tool" and looked.observation.messages[0].tool_call_id == "c1"
        answer = env.step("5")  # plain text is a TextAction too
        assert (answer.reward, answer.done, answer.observation.terminated, answer.observation.truncated) == (
            1.0, True, True, False)  # fmt: skip
        assert answer.observation.signals["correct"] is True
        state = env.state()
        assert (state.episode_id, state.step_count, state.task_id) == (obs.episode_id, 2, TASK)
        assert env.served["env_id"] == "gfcr/ToolUse-v0"
        with pytest.raises(gfcr.UnknownNameError, match="did you mean"):  # the server's own error, raised here
            env.reset(task_id="tooluse/7x")
        with pytest.raises(gfcr.ConfigError, match="MCPToolClient"):
            env.step(TextAction(type="list_tools"))
    env.close()  # closed twice: nothing left to close


def test_typed_client_refuses_a_server_that_is_not_gfcrs_and_says_what_to_use(server_url):
    with serving(echo_app()) as url:
        with pytest.raises(gfcr.GfcrError, match="not a gfcr env server.*GenericEnvClient.*gfcr/Remote-v0"):
            GfcrEnvClient(base_url=url).sync().connect()
    with pytest.raises(gfcr.ConfigError, match="bearer token"):
        GfcrEnvClient(base_url=server_url).sync().connect()


def test_token_is_required_and_health_stays_open(server_url):
    assert httpx.get(f"{server_url}/health").status_code == 200
    assert httpx.post(f"{server_url}/reset", json={}).status_code == 401
    with pytest.raises(gfcr.ConfigError, match="bearer token"):
        gym.make("gfcr/Remote-v0", url=server_url)
    with pytest.raises(Exception), GenericEnvClient(base_url=server_url).sync() as env:  # noqa: B017
        env.reset()


def test_sessions_are_limited_and_idle_sessions_expire():
    app = create_app("gfcr/ToolUse-v0", max_sessions=1, idle_timeout_s=1.0)
    with serving(app) as url:
        first = gym.make("gfcr/Remote-v0", url=url, retries=0)
        first.reset(options={"task_id": TASK})
        second = gym.make("gfcr/Remote-v0", url=url, retries=0)
        with pytest.raises(gfcr.GfcrError, match="CAPACITY_REACHED"):
            second.reset(seed=0)
        time.sleep(2.5)  # past the idle timeout: the server closes the first session
        obs, reward, terminated, truncated, _ = first.step(LOOKUP_CALL)
        assert truncated and reward == 0.0 and "failed during this step" in obs
        assert second.reset(options={"task_id": TASK})[1]["task"].id == TASK  # the slot is free again
        first.close(), second.close()


def test_oversized_requests_are_refused_and_the_episode_says_so():
    app = create_app("gfcr/ToolUse-v0", max_request_bytes=4096)
    with serving(app, ws_max_size=4096) as url:
        assert httpx.post(f"{url}/step", json={"action": {"text": "x" * 10_000}}).status_code == 413
        env = gym.make("gfcr/Remote-v0", url=url)
        env.reset(options={"task_id": TASK})
        obs, reward, _, truncated, _ = env.step("x" * 10_000)
        assert truncated and reward == 0.0 and "failed during this step" in obs
        assert env.reset(options={"task_id": TASK})[1]["task"].id == TASK  # a new session works
        env.close()


def test_a_dead_server_is_a_step_result_then_a_clear_reset_error():
    with serving(create_app("gfcr/ToolUse-v0")) as url:
        env = gym.make("gfcr/Remote-v0", url=url, retries=1)
        env.reset(options={"task_id": TASK})
    obs, reward, terminated, truncated, info = env.step(LOOKUP_CALL)
    assert (reward, terminated, truncated) == (0.0, False, True) and url in obs and "remote_error" in info
    with pytest.raises(gfcr.GfcrError, match="failed to reset"):
        env.reset(seed=0)


def test_remote_env_wraps_a_server_written_with_openenv_alone():
    with serving(echo_app()) as url:
        env = gym.make("gfcr/Remote-v0", url=url)
        assert env.unwrapped.action_field == "message"  # read from /schema
        obs, info = env.reset(seed=0)
        assert obs == "ready" and info["messages"][0].content == "ready"
        assert env.step("hello")[:4] == ("hello", 0.5, False, False)
        assert env.step("bye")[2] is True
        env.close()


def test_runner_spreads_episodes_over_env_servers():
    apps = [create_app("gfcr/ToolUse-v0", send_gold=True) for _ in range(2)]  # the oracle plays from gold
    with serving(apps[0]) as a, serving(apps[1]) as b:
        config = RunnerConfig(env_urls=(a, b), concurrency=4)
        result = Runner(make_policy("scripted:oracle"), config).run(episodes_for_env("gfcr/ToolUse-v0", 8))
        assert [t.total_reward for t in result.trajectories] == [1.0] * 8
        assert all(t.env_id == "gfcr/ToolUse-v0" for t in result.trajectories)
        started = [httpx.get(f"{url}/gfcr").json()["sessions_started"] for url in (a, b)]
        assert all(n >= 1 for n in started), started
    with pytest.raises(gfcr.ConfigError, match="does not say what it serves"):
        Runner(make_policy("scripted:oracle"), RunnerConfig(env_urls=(a,))).run(
            episodes_for_env("gfcr/ToolUse-v0", 1)
        )


def test_serve_env_refuses_an_unknown_env_with_a_clear_message():
    result = subprocess.run(
        [sys.executable, "-m", "gfcr", "serve-env", "gfcr/Nope-v0"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2 and "unknown env id 'gfcr/Nope-v0'" in result.stdout


def every_route(url: str, task_id: str) -> list[str]:
    """What a client reads from every route of a gfcr server, after a reset to `task_id` and a wrong answer."""
    name = "gfcr-SQL-v0"
    rpc = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
           "params": {"name": "submit_sql", "arguments": {"query": "SELECT 1"}}}  # fmt: skip
    texts = []
    with httpx.Client(base_url=url, timeout=60) as client:
        texts += [client.post("/reset", json={"task_id": task_id}).text]
        texts += [client.post("/step", json={"action": {"text": "SELECT 1"}}).text]
        texts += [client.get(path).text for path in ("/state", "/metadata", "/schema", "/gfcr", "/health")]
        texts += [client.get("/list_environments").text, client.get(f"/{name}/splits").text]
        texts += [client.post(f"/{name}/task", json={"split": "all", "index": i}).text for i in range(3)]
        texts += [client.post(f"/{name}/task_range", json={"split": "all", "start": 0, "stop": 64}).text]
        texts += [client.post("/mcp", json={**rpc, "method": "tools/list", "params": {}}).text]
        texts += [client.post("/mcp", json=rpc).text]
    with connect(url.replace("http://", "ws://") + "/ws", proxy=None) as ws:
        for message in ({"type": "reset", "data": {"task_id": task_id}}, {"type": "step", "data": {"text": "x"}},
                        {"type": "step", "data": {"text": "```sql\nSELECT 1\n```"}}, {"type": "state"},
                        {"type": "mcp", "data": rpc}):  # fmt: skip
            ws.send(json.dumps(message))
            texts.append(str(ws.recv(timeout=60)))
    return texts


def leaked(texts: list[str], golds: list[str]) -> list[str]:
    """The gold strings that appear in `texts` (raw or JSON-escaped)."""
    joined = "\n".join(texts)
    return [g for g in golds if g in joined or json.dumps(g)[1:-1] in joined]


@pytest.fixture(scope="module")
def sql_tasks():
    env = gym.make("gfcr/SQL-v0")
    tasks = [env.unwrapped.tasks[i] for i in range(64)]
    env.close()
    return tasks


def test_a_default_server_sends_no_gold_and_no_task_metadata_on_any_route(sql_tasks):
    golds = [str(t.gold) for t in sql_tasks]
    with serving(create_app("gfcr/SQL-v0")) as url:
        texts = every_route(url, sql_tasks[0].id)
        assert leaked(texts, golds) == []
        first = json.loads(texts[0])["metadata"]["task"]
        assert (first["id"], first["gold"], first["metadata"]) == (sql_tasks[0].id, None, {"gold_withheld": True})
        assert json.loads(texts[-1])["data"]["result"]["reward"] == 0.0  # grading happens on the server
        remote = gym.make("gfcr/Remote-v0", url=url)
        _, info = remote.reset(options={"task_id": sql_tasks[0].id})
        assert info["task"].gold is None and remote.unwrapped.tasks[0].gold is None
        oracle = gym.make("gfcr/SQL-v0").unwrapped.oracle(sql_tasks[0], [])  # the right answer, played here
        assert remote.step(oracle)[1] == 1.0  # the remote env's reward needs no gold on this side
        with pytest.raises(gfcr.ConfigError, match="--send-gold"):
            remote.unwrapped.oracle(info["task"], [])
        remote.close()
    with serving(create_app("gfcr/SQL-v0", send_gold=True)) as url:  # the opt-in: trusted clients only
        assert leaked(every_route(url, sql_tasks[0].id), golds[:1]) == golds[:1]
        assert httpx.get(f"{url}/gfcr").json()["sends_gold"] is True


def test_the_oracle_over_a_default_server_fails_saying_it_needs_send_gold():
    with serving(create_app("gfcr/ToolUse-v0")) as url:
        result = Runner(make_policy("scripted:oracle"), RunnerConfig(env_urls=(url,))).run(
            episodes_for_env("gfcr/ToolUse-v0", 2)
        )
    assert [t.status for t in result.trajectories] == ["failed", "failed"]
    assert all("--send-gold" in t.failure for t in result.trajectories), result.trajectories[0].failure


def test_credentials_in_env_keywords_are_masked_and_the_runner_still_finds_its_server(pg_url):
    secret_url = pg_url.replace("postgres@", "postgres:hunter2@", 1)  # trust authentication ignores it
    kwargs = {"engine": secret_url}
    with serving(create_app("gfcr/SQL-v0", kwargs)) as url:
        shown = [httpx.get(f"{url}{path}").text for path in ("/gfcr", "/metadata")]
        assert all("hunter2" not in text and "postgres:***@" in text for text in shown), shown
        result = Runner(make_policy("scripted:random"), RunnerConfig(env_urls=(url,))).run(
            episodes_for_env("gfcr/SQL-v0", 2, kwargs=kwargs)
        )
        assert all(t.status == "ok" for t in result.trajectories)
        assert httpx.get(f"{url}/gfcr").json()["sessions_started"] >= 1  # matched with the password masked


def test_a_bench_report_masks_the_env_servers_token(tooluse_server, tmp_path):
    from gfcr.apps.bench.bench import BenchConfig, bench
    from gfcr.apps.bench.report import write_report

    url, token = tooluse_server
    config = BenchConfig(("gfcr/Remote-v0",), ("scripted:random",), num_tasks=2, report=tmp_path,
                         env_kwargs={"url": url, "token": token})  # fmt: skip
    write_report(config, bench(config))
    kinds = (".json", ".jsonl", ".html")
    written = {path: path.read_text() for path in tmp_path.rglob("*") if path.suffix in kinds}
    assert written and not [path for path, text in written.items() if token in text]
    assert 'token=\\"***\\"' in written[tmp_path / "results.json"]


GUESS = '''
from gfcr.core import Task
from gfcr.envs.base import Outcome, TextEnv
from gfcr.envs.tasks import TaskSource


class GuessEnv(TextEnv):
    """Say the secret number; reward 1.0 for it."""

    signal_defaults = {"correct": False}

    def __init__(self, render_mode=None):
        tasks = [Task(f"guess/{i}", "Say my secret number.", str(i * 37 % 1000)) for i in range(3)]
        super().__init__(TaskSource.from_tasks("guess", tasks), render_mode=render_mode)

    def respond(self, action):
        correct = action.text.strip() == self.task.gold
        return Outcome("Correct." if correct else "Wrong.", float(correct), terminated=True,
                       signals={"correct": correct})

    @classmethod
    def oracle(cls, task, messages):
        return task.gold
'''


@pytest.fixture
def guess_servers(installed_distribution, serve_env, monkeypatch, tmp_path):
    """`gfcr serve-env acme/Guess-v0`, a plugin installed beside the servers only: (gold url, url)."""
    installed_distribution("acme-envs", "[gfcr.envs]\nacme/Guess-v0 = acme_envs.guess:GuessEnv\n",
                           {"acme_envs/__init__.py": "", "acme_envs/guess.py": GUESS})  # fmt: skip
    with contextlib.ExitStack() as stack:
        with monkeypatch.context() as patch:  # the servers' sys.path only: this process lacks the plugin
            patch.setenv("PYTHONPATH", str(tmp_path))
            gold, _ = stack.enter_context(serve_env("acme/Guess-v0", "--token", "s3cret", "--send-gold"))
            plain, _ = stack.enter_context(serve_env("acme/Guess-v0", "--token", "s3cret"))
        yield gold, plain


def test_the_oracle_plays_a_served_plugin_env_over_the_wire_and_trajectories_name_that_env(guess_servers, tmp_path):
    from typer.testing import CliRunner

    from gfcr.apps.cli import app
    from gfcr.core import read_jsonl

    gold, plain = guess_servers
    assert "acme/Guess-v0" not in gym.registry  # the client has only gfcr/Remote-v0 and a url
    out = tmp_path / "gold.jsonl"
    run = ["run", "gfcr/Remote-v0", "-a", "scripted:oracle", "-n", "3", "-e", "token=s3cret", "--out", str(out)]
    result = CliRunner().invoke(app, [*run, "-e", f"url={gold}"], terminal_width=200)
    assert result.exit_code == 0, result.output
    trajectories = list(read_jsonl(out))
    assert [t.total_reward for t in trajectories] == [1.0, 1.0, 1.0]
    assert {t.env_id for t in trajectories} == {"acme/Guess-v0"}  # the served env's id, not Remote-v0
    assert all(t.remote == {"url": gold, "kwargs": {}} for t in trajectories)
    result = CliRunner().invoke(app, [*run, "-e", f"url={gold}", "--resume"], terminal_width=200)
    assert result.exit_code == 0 and len(list(read_jsonl(out))) == 3, result.output  # resumed: nothing run again

    out = tmp_path / "plain.jsonl"
    run[-1] = str(out)
    result = CliRunner().invoke(app, [*run, "-e", f"url={plain}"], terminal_width=200)
    failures = [t.failure for t in read_jsonl(out)]
    assert len(failures) == 3 and all("--send-gold" in f for f in failures), (result.output, failures)
    # The attack: a client that forges a task with its gold gets no oracle from a server without the opt-in.
    forged = {"task": {"id": "guess/1", "prompt": "Say my secret number.", "gold": "37"}, "messages": []}
    headers = {"Authorization": "Bearer s3cret"}
    reply = httpx.post(f"{plain}/gfcr/oracle", json=forged, headers=headers)
    assert reply.status_code == 403 and "--send-gold" in reply.json()["detail"]
    assert httpx.post(f"{gold}/gfcr/oracle", json=forged, headers=headers).json() == {"text": "37"}
    assert httpx.post(f"{gold}/gfcr/oracle", json=forged).status_code == 401  # the token still guards it


def test_remote_episodes_are_rejudged_here_by_the_served_env_with_its_own_keywords(serve_env):
    from gfcr.apps.diagnose.reverify import reverify

    with serve_env("gfcr/Math-v0", "-e", "split=AIME2024", "--send-gold") as (url, _):
        client = {"url": url}  # what a bench report records as the episodes' keywords
        specs = episodes_for_env("gfcr/Remote-v0", 3, kwargs=client)
        trajectories = Runner(make_policy("scripted:oracle"), RunnerConfig()).run(specs).trajectories
    assert {t.env_id for t in trajectories} == {"gfcr/Math-v0"} and all(t.total_reward == 1.0 for t in trajectories)
    assert all(t.remote == {"url": url, "kwargs": {"split": "AIME2024"}} for t in trajectories)
    # Judged by gfcr/Math-v0 made here with the served keywords, not with the client's `url`.
    judged = reverify({"run": trajectories}, repeats=1, episode_kwargs={t.id: client for t in trajectories})
    assert judged.skipped == {} and len(judged.verdicts) == 3
    assert [judged.verdicts[("run", t.id)] for t in trajectories] == [[1.0]] * 3
