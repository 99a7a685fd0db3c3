"""gfcr envs inside the real `verifiers` 0.4, against `gfcr serve` on loopback.

verifiers lives in its own venv (.venv-verifiers, made by scripts/setup_verifiers.sh: its mcp pin
clashes with openenv), so each check runs a script there and asserts on the JSON it prints.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the serve extra is not installed (gfcr serve)")

ROOT = Path(__file__).resolve().parents[2]
VF_PYTHON = ROOT / ".venv-verifiers" / "bin" / "python"
EXAMPLE = ROOT / "examples" / "verifiers_eval.py"

if not VF_PYTHON.exists():
    reason = f"{VF_PYTHON} is missing: run `bash scripts/setup_verifiers.sh` (make setup does)"
    if os.environ.get("CI"):
        raise RuntimeError(reason)  # CI sets up everything: a missing venv is a failure there
    pytest.skip(reason, allow_module_level=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def base_url(tiny_model):
    """`gfcr serve TINY --name tiny` in its own process; its OpenAI base URL."""
    port = free_port()
    gfcr = Path(sys.executable).parent / "gfcr"
    process = subprocess.Popen([str(gfcr), "serve", str(tiny_model), "--port", str(port), "--name", "tiny"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"gfcr serve exited with {process.returncode}: {process.stderr.read()}")
            try:
                with urllib.request.urlopen(url + "/health", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"gfcr serve did not come up at {url} in 120 s") from None
                time.sleep(0.2)
        yield url + "/v1"
    finally:
        process.kill()
        process.wait(30)


def run_vf(*args: str, timeout: float = 120) -> dict:
    """Run `args` with the verifiers venv's python; the JSON its stdout ends with."""
    done = subprocess.run([str(VF_PYTHON), *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stderr[-4000:]}"
    return json.loads(done.stdout[done.stdout.index("{") :])


@pytest.mark.parametrize(
    ("env_id", "env_args", "num_tasks", "task_ids"),
    [
        ("gfcr/ToolUse-v0", [], 3, ["tooluse/0", "tooluse/1", "tooluse/2"]),
        ("gfcr/Math-v0", ["-e", "split=AIME2025"], 2, ["mmath/AIME2025/0", "mmath/AIME2025/1"]),
    ],
)
def test_the_example_evaluates_a_gfcr_env_with_verifiers(base_url, env_id, env_args, num_tasks, task_ids):
    result = run_vf(str(EXAMPLE), env_id, *env_args, "--base-url", base_url, "--model", "tiny",
                    "-n", str(num_tasks), "--max-tokens", "16")  # fmt: skip
    rollouts = result["rollouts"]
    assert [r["task_id"] for r in rollouts] == task_ids
    for r in rollouts:
        assert r["ok"] and r["errors"] == [], r
        assert r["reward"] in (0.0, 1.0) and r["reward"] == r["metrics"]["live_reward"]
        assert r["model_calls"] == r["turns"] >= 1  # one model call per env step, all intercepted
        assert {"signal/format_ok", "signal/correct"} <= set(r["metrics"])
        assert r["tools"] == (["lookup"] if env_id == "gfcr/ToolUse-v0" else [])
        if any(action["tool_calls"] for action in r["actions"][:-1]):
            assert r["turns"] >= 2  # a tool call is answered, and the model speaks again
    assert result["mean_reward"] == sum(r["reward"] for r in rollouts) / num_tasks


def test_vf_eval_runs_a_gfcr_env_through_the_installed_plugin(base_url, tmp_path):
    """verifiers' own command line: `vf-eval gfcr-verifiers` imports the installed `gfcr_verifiers`
    package (examples/verifiers_taskset), its env defaults to the local runtime (no Prime account),
    and the taskset's env id and keywords come from the command line."""
    command = [str(VF_PYTHON.parent / "vf-eval"), "gfcr-verifiers", "--env.taskset.env-id", "gfcr/Math-v0",
               "--env.taskset.env-kwargs", '{"split": "AIME2025"}', "-m", "tiny", "--client.base-url", base_url,
               "--sampling.max-tokens", "16", "-n", "2", "--no-push", "--no-rich", "-o", str(tmp_path)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=240, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-4000:]
    [traces] = tmp_path.glob("*/traces.jsonl")
    episodes = [json.loads(line) for line in traces.read_text().splitlines()]
    assert sorted(e["traces"][0]["info"]["gfcr"]["task_id"] for e in episodes) == [
        "mmath/AIME2025/0",
        "mmath/AIME2025/1",
    ]
    for episode in episodes:
        trace = episode["traces"][0]
        assert episode["ok"] and episode["errors"] == [] and trace["errors"] == [], episode
        assert trace["rewards"]["gfcr_reward"]["score"] == trace["metrics"]["live_reward"]
        assert len(trace["calls"]) == trace["metrics"]["turns"] >= 1  # every model call intercepted


MULTI_TURN = """
import asyncio, json, os, sys
sys.path.insert(0, "tests/agents")
import runner_envs  # registers test/Echo-v0: task turns-N ends with reward 1.0 at turn N
import verifiers.v1 as vf
from gfcr.integrations.verifiers import load_environment

os.environ["GFCR_VF_KEY"] = "EMPTY"
env = load_environment("test/Echo-v0")
# greedy: a sampled reply of the random tiny model sometimes holds "<tool_call>", and the echo env then
# answers an invalid tool call instead of the turn (seen twice in full runs)
ctx = vf.ModelContext(model="tiny", client=vf.EvalClientConfig(base_url=sys.argv[1], api_key_var="GFCR_VF_KEY"),
                      sampling=vf.SamplingConfig(max_tokens=8, temperature=0.0))

async def main():
    tasks = [t for t in env.taskset if t.data.task_id in ("turns-1", "turns-3")]
    async with env.serving():
        episodes = [await env.run_episode(task, ctx) for task in tasks]
    out = []
    for episode in episodes:
        trace = episode.traces[0]
        messages = trace.branches[-1].messages
        out.append({"task_id": episode.task.data.task_id, "ok": episode.ok, "reward": trace.reward,
                    "calls": len(trace.calls), "tools": [t.name for t in trace.tools] if trace.tools else [],
                    "roles": [m.role for m in messages], "texts": [str(m.content) for m in messages]})
    print(json.dumps({"episodes": out}))

asyncio.run(main())
"""


def test_multi_turn_episodes_send_each_observation_back_to_the_model(base_url):
    episodes = {e["task_id"]: e for e in run_vf("-c", MULTI_TURN, base_url)["episodes"]}
    one, three = episodes["turns-1"], episodes["turns-3"]
    assert one["ok"] and three["ok"]
    assert (one["reward"], one["calls"]) == (1.0, 1)
    assert (three["reward"], three["calls"]) == (1.0, 3)
    assert three["tools"] == ["echo"]  # the env's tools went to the model as native tools
    # The last request held the whole exchange: prompt, replies, and the env's observations.
    assert three["roles"] == ["user", "assistant"] * 3
    assert three["texts"][0].startswith("Talk to me for 3 turns.")
    assert three["texts"][2:5:2] == ["Turn 1 of 3: go on.", "Turn 2 of 3: go on."]


SCORING = """
import asyncio, doctest, json, sys
import gymnasium as gym
import verifiers.v1 as vf
import gfcr.integrations.verifiers as gv
from gfcr.core import Message
from gfcr.registry import env_class

def oracle_actions(data):
    env = gym.make(data.env_id, **data.env_kwargs)
    _, info = env.reset(options={"task_id": data.task_id})
    messages, actions, done = list(info["messages"]), [], False
    while not done:
        text = env_class(data.env_id).oracle(info.get("task") or env.unwrapped.task, messages)
        _, _, terminated, truncated, info = env.step(text)
        messages += [Message("assistant", text), *info["messages"]]
        actions.append({"text": text, "tool_calls": []})
        done = terminated or truncated
    return actions

async def score(task, actions):
    trace = vf.Trace(task=vf.TraceTask(type="GfcrTask", data=task.data), agent=vf.AgentInfo(config=vf.AgentConfig()),
                     info={"gfcr": {"actions": actions}})
    await task.score(trace)  # verifiers' own scoring path: the task's @vf.reward and @vf.metric
    return trace.reward

async def main():
    out = {}
    for env_id in ("gfcr/ToolUse-v0", "gfcr/Math-v0"):
        for task in gv.load_environment(env_id).taskset.take(2):
            oracle = oracle_actions(task.data)
            out[task.data.task_id] = {"oracle": await score(task, oracle), "oracle_turns": len(oracle),
                                      "junk": await score(task, [{"text": "junk", "tool_calls": []}])}
    doctests = doctest.testmod(gv, optionflags=doctest.ELLIPSIS)  # the main venv cannot import gv
    print(json.dumps({"scores": out, "doctests": [doctests.attempted, doctests.failed]}))

asyncio.run(main())
"""


def test_the_rubric_scores_gfcr_oracle_work_1_and_junk_0():
    result = run_vf("-c", SCORING)
    scores = result["scores"]
    assert set(scores) == {"tooluse/0", "tooluse/1", "mmath/AIME2024/0", "mmath/AIME2024/1"}
    for task_id, score in scores.items():
        assert (score["oracle"], score["junk"]) == (1.0, 0.0), task_id
    assert scores["tooluse/0"]["oracle_turns"] == 2  # look up, then answer: scored across the tool call
    attempted, failed = result["doctests"]
    assert attempted >= 8 and failed == 0


def test_a_bad_env_id_fails_with_gfcrs_message_naming_the_nearest_ids():
    done = subprocess.run(
        [str(VF_PYTHON), "-c", "from gfcr.integrations.verifiers import load_environment as l; l('gfcr/ToolUse-v9')"],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode != 0
    assert "unknown env id 'gfcr/ToolUse-v9'" in done.stderr and "gfcr/ToolUse-v0" in done.stderr
