"""Each step's budget for tool calls (`max_tool_calls`, `step_time_s`): an agent that stalls is
truncated, never failed.

Before the budget, six slow calls in one reply pushed a step past the runner's `env_timeout_s`,
and the episode became an infrastructure failure (`failed`): re-run by `--resume`, left out of
comparisons, GRPO groups and the mean reward — a stall hid a failure. Each family's test plays
such a reply through the real Runner (real sandbox, SQLite, Chromium, env server) with budgets
small enough to take seconds, and an `env_timeout_s` that the stall would pass without them.
"""

from __future__ import annotations

import inspect
import json
import logging
import re
import threading
from collections.abc import Sequence

import gymnasium as gym
import pytest

import gfcr
from gfcr.agents import OraclePolicy, Runner, RunnerConfig, episodes_for_env
from gfcr.core import Completion, Request, Trajectory
from gfcr.envs.budget import DEFAULT_STEP_TIME_S
from gfcr.errors import ConfigError, SandboxUnavailableError
from gfcr.registry import env_class
from gfcr.sandboxes.bwrap import check_local_backend

STEP_TIME_S = 3.0
SLOW_S = 4.0  # each slow call alone would take longer than the step's whole budget
CALLS = 6  # 6 x 4 s = 24 s: past ENV_TIMEOUT_S without a budget
ENV_TIMEOUT_S = 20.0  # over twice STEP_TIME_S (no warning), far over what a budgeted step takes


class Stall:
    """A policy that sends the same reply every turn: the stall under test."""

    version = "1"

    def __init__(self, reply: str) -> None:
        self.name, self.reply = "script:stall", reply

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        return [Completion(self.reply, completion_tokens=1) for _ in requests]


def calls(name: str, arguments: dict, times: int = CALLS) -> str:
    return "".join(f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>" for _ in range(times))


def play(env_id: str, reply: str, **kwargs) -> Trajectory:
    """One episode of `reply` through the Runner, as `gfcr run` plays it."""
    config = RunnerConfig(concurrency=1, env_timeout_s=ENV_TIMEOUT_S, retries=0)
    result = Runner(Stall(reply), config).run(episodes_for_env(env_id, 1, kwargs=kwargs))
    return result.trajectories[0]


def assert_truncated_by_budget(trajectory: Trajectory, keyword: str) -> str:
    """The episode ran (not failed), its first step was truncated for `keyword`, reward 0; the
    step's observation."""
    assert trajectory.status == "ok", trajectory.failure
    assert len(trajectory.steps) == 1
    step = trajectory.steps[0]
    assert step.truncated and not step.terminated and trajectory.total_reward == 0.0
    assert f"the episode is truncated. Raise {keyword}" in step.observation
    assert "Error: not run:" in step.observation  # the calls past the budget
    return step.observation


@pytest.fixture
def sandbox():
    try:
        check_local_backend()
    except SandboxUnavailableError as e:
        pytest.skip(f"no local sandbox: {e}")


# -- the budget itself ---------------------------------------------------------------------------


def test_every_family_takes_the_budget_keywords_and_its_default_sits_inside_the_runners_timeout():
    for env_id in gfcr.list_envs():
        if env_id == "gfcr/Remote-v0":  # the served env's budget applies, on its server
            continue
        if not str(gym.spec(env_id).entry_point).startswith("gfcr.envs."):
            continue  # an env another test registered: its own signature, not a bundled family's
        env = gym.make(env_id, max_tool_calls=1, step_time_s=7)
        assert (env.unwrapped.budget.max_tool_calls, env.unwrapped.budget.step_time_s) == (1, 7), env_id
        env.close()
        declared = next(c for c in env_class(env_id).__mro__ if "step_time_s" in inspect.signature(c).parameters)
        default = inspect.signature(declared).parameters["step_time_s"].default
        assert default <= RunnerConfig().env_timeout_s / 2, env_id


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"max_tool_calls": 0}, "max_tool_calls must be an integer >= 1, got 0"),
        ({"max_tool_calls": True}, "max_tool_calls must be an integer >= 1, got True"),
        ({"step_time_s": 0}, "step_time_s must be a number of seconds > 0, got 0"),
        ({"step_time_s": "5"}, "step_time_s must be a number of seconds > 0, got '5'"),
    ],
)
def test_a_bad_budget_is_a_config_error_naming_the_value(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        gym.make("gfcr/ToolUse-v0", **kwargs)


def test_the_runner_warns_when_env_timeout_leaves_too_little_beyond_the_step_budget(caplog):
    specs = episodes_for_env("gfcr/ToolUse-v0", 1)
    with caplog.at_level(logging.WARNING):
        Runner(OraclePolicy(), RunnerConfig(env_timeout_s=DEFAULT_STEP_TIME_S)).run(specs)
    assert f"step_time_s={DEFAULT_STEP_TIME_S:g} is over half of env_timeout_s" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        Runner(OraclePolicy(), RunnerConfig()).run(specs)  # the defaults: no warning
    assert "step_time_s" not in caplog.text


def test_a_step_within_budget_goes_on():
    env = gym.make("gfcr/ToolUse-v0", max_tool_calls=2)
    env.reset(options={"task_id": "tooluse/3"})
    _, _, terminated, truncated, info = env.step(calls("lookup", {}, times=2))
    assert not (terminated or truncated) and [m.content for m in info["messages"]] == ["3", "3"]


def test_time_queued_for_a_shared_resource_is_not_charged_to_the_agent():
    """A call that waits for a sandbox slot held elsewhere moves the step's deadline back: the
    infrastructure's delay never truncates the agent (nor fails it, within the queue's deadline)."""
    from gfcr.core import Task, ToolSpec
    from gfcr.core.admission import Admission
    from gfcr.envs.base import TextEnv
    from gfcr.envs.tasks import TaskSource

    gate = Admission("sandbox", max_concurrency=1, queue_timeout_s=30.0)

    def compute() -> str:
        """Run something on the shared sandbox."""
        with gate.admit():
            return "done"

    class Queued(TextEnv):
        def __init__(self) -> None:
            tasks = TaskSource.from_tasks("q", [Task("q/0", "Compute twice.", "")])
            super().__init__(tasks, tools=[ToolSpec.from_function(compute)], max_turns=2, step_time_s=0.5)

        def respond(self, action):
            return self.run_tools(action)

    env = Queued()
    env.reset()
    held, release = threading.Event(), threading.Event()

    def hold() -> None:  # another episode's sandbox run, holding the one slot for 1.5 s
        with gate.admit():
            held.set()
            release.wait(1.5)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(5)
    _, _, _, truncated, info = env.step(calls("compute", {}, times=2))
    holder.join()
    assert [m.content for m in info["messages"]] == ["done", "done"] and not truncated
    assert info["wait_s"]["sandbox"] > 0.5  # it queued past the whole step budget, and was not charged


# -- one test per family ---------------------------------------------------------------------------


def test_tooluse_calls_past_max_tool_calls_are_not_run():
    trajectory = play("gfcr/ToolUse-v0", calls("lookup", {}), max_tool_calls=3)
    observation = assert_truncated_by_budget(trajectory, "max_tool_calls")
    assert observation.count("Error: not run: the message has more than max_tool_calls=3") == CALLS - 3


def test_math_python_calls_past_the_step_time_are_not_run_and_the_one_running_is_stopped(sandbox):
    reply = calls("python", {"code": f"import time\ntime.sleep({SLOW_S})\nprint('woke')"})
    trajectory = play("gfcr/Math-v0", reply, tools=["python"], step_time_s=STEP_TIME_S, split="AIME2024")
    observation = assert_truncated_by_budget(trajectory, "step_time_s")
    assert "woke" not in observation and "[status: timeout" in observation  # stopped at the deadline
    assert "Error: not run: the step's tool calls used up step_time_s=3 s" in observation


def test_code_interactive_run_python_stalls_are_truncated(sandbox):
    reply = calls("run_python", {"code": f"import time; time.sleep({SLOW_S})"})
    trajectory = play("gfcr/CodeInteractive-v0", reply, step_time_s=STEP_TIME_S)
    observation = assert_truncated_by_budget(trajectory, "step_time_s")
    assert "[status: timeout" in observation and "Error: not run:" in observation


def test_swe_bash_stalls_are_truncated_without_a_verdict(sandbox):
    reply = calls("bash", {"command": f"sleep {SLOW_S}"}) + calls("submit", {}, times=1)
    trajectory = play(
        "gfcr/SWE-v0", reply, dataset="inflection", tasks_per_project=1, step_time_s=STEP_TIME_S
    )
    observation = assert_truncated_by_budget(trajectory, "step_time_s")
    assert "Judged by the project's tests" not in observation  # the submit after the overrun is not judged
    assert trajectory.steps[0].state is None


def test_sql_slow_queries_are_stopped_at_the_step_deadline():
    slow = "SELECT COUNT(*) FROM Track a, Track b, Track c WHERE a.Milliseconds + b.Milliseconds > c.Milliseconds"
    reply = calls("execute_sql", {"query": slow}) + calls("submit_sql", {"query": "SELECT 1"}, times=1)
    trajectory = play("gfcr/SQL-v0", reply, dataset="chinook", engine="sqlite", step_time_s=STEP_TIME_S)
    observation = assert_truncated_by_budget(trajectory, "step_time_s")
    limit = re.search(r"stopped after the time limit of ([\d.]+) s", observation)
    assert limit and float(limit[1]) <= STEP_TIME_S  # the first query: at the step's deadline, not its own 5 s
    assert not trajectory.signals["match"]  # the submission after the overrun is not graded


def test_browser_waits_past_the_step_time_are_not_run():
    pytest.importorskip("playwright")
    env = gym.make("gfcr/Browser-v0", dataset="click-test")
    env.reset(seed=0)  # starts the process's browser, which the runner's env shares, outside the timed run
    env.close()
    reply = "\n".join(["noop(3000)"] * CALLS)
    trajectory = play("gfcr/Browser-v0", reply, dataset="click-test", step_time_s=1.0)
    observation = assert_truncated_by_budget(trajectory, "step_time_s")
    assert "Waited 3000 ms" not in observation  # the first wait ends at the step's deadline


def test_dialogue_tool_calls_past_max_tool_calls_are_not_run():
    reply = calls("find_user_id_by_email", {"email": "noah.brown7922@example.com"})
    trajectory = play("gfcr/Dialogue-v0", reply, domain="retail", max_tool_calls=2)
    observation = assert_truncated_by_budget(trajectory, "max_tool_calls")
    assert observation.count("noah_brown_6181") == 2
    assert not trajectory.signals["simulator_failure"]  # the agent's doing, not the infrastructure's


def test_remote_env_carries_the_served_envs_truncation(tooluse_server):
    url, token = tooluse_server
    reply = calls("lookup", {}, times=60)  # the served ToolUse-v0 keeps its default, 50 a message
    trajectory = play("gfcr/Remote-v0", reply, url=url, token=token)
    observation = assert_truncated_by_budget(trajectory, "max_tool_calls")
    assert observation.count("Error: not run:") == 10
