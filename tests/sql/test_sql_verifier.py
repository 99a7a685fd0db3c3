"""`SQLVerifier` re-judges saved `gfcr/SQL-v0` trajectories to the reward the env gave, by
re-executing their submitted SQL: the oracle's pass, junk and forged trajectories do not."""

from __future__ import annotations

import copy
import json

import gymnasium as gym
import pytest

import gfcr  # noqa: F401  (registers the envs)
from gfcr.agents import OraclePolicy, RandomPolicy, Runner, episodes_for_env
from gfcr.core import Message, Step, Task, Trajectory, Verifier, read_jsonl, write_jsonl
from gfcr.envs.sql import SQLVerifier, submitted_sql

ENV_ID = "gfcr/SQL-v0"


def call(name: str, query: object) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': {'query': query}})}</tool_call>"


def saved_runs(tmp_path, policy, kwargs: dict, n: int) -> list[Trajectory]:
    """`n` episodes of `policy`, written to JSONL and read back."""
    result = Runner(policy).run(episodes_for_env(ENV_ID, n, kwargs=kwargs, seed=5))
    path = tmp_path / f"{policy.name.replace(':', '_')}.jsonl"
    write_jsonl(result.trajectories, path)
    return list(read_jsonl(path))


def tasks_of(**kwargs) -> dict[str, Task]:
    env = gym.make(ENV_ID, **kwargs)
    tasks = env.unwrapped.tasks
    env.close()
    return {task_id: tasks.get(task_id) for task_id in tasks.ids()}


@pytest.mark.parametrize(("mode", "engine"), [("multi_turn", "sqlite"), ("single_turn", "duckdb")])
def test_saved_oracle_and_random_episodes_get_the_env_s_reward_again(tmp_path, mode, engine):
    kwargs = {"dataset": "all", "mode": mode, "engine": engine}
    tasks = tasks_of(**kwargs)
    verifier = SQLVerifier()  # each task runs on the engine it was made for
    assert isinstance(verifier, Verifier)
    for policy, expected in ((OraclePolicy(), 1.0), (RandomPolicy(seed=3), 0.0)):
        trajectories = saved_runs(tmp_path, policy, kwargs, 5)
        assert len(trajectories) == 5
        for trajectory in trajectories:
            verdict = verifier.verify(tasks[trajectory.task_id], trajectory)
            assert verdict.reward == trajectory.total_reward == expected, trajectory.task_id
            assert verdict.passed is (expected == 1.0)
            last = trajectory.steps[-1]
            if last.terminated:  # the env graded a submission: the same signals
                episode_only = ("turns", "explored", "explored_level")  # what only the episode knows
                assert verdict.signals == {k: v for k, v in last.signals.items() if k not in episode_only}


def test_a_wrong_query_forged_into_the_final_action_is_rejected(tmp_path):
    tasks = tasks_of(dataset="chinook")
    (trajectory,) = saved_runs(tmp_path, OraclePolicy(), {"dataset": "chinook"}, 1)
    verifier = SQLVerifier()
    task = tasks[trajectory.task_id]
    assert verifier.verify(task, trajectory).reward == 1.0
    for query, executed in (("SELECT 1 WHERE 1 = 0", True), ("SELECT * FROM NoSuchTable", False)):
        forged = copy.deepcopy(trajectory)  # the recorded reward (1.0) stays: only the SQL changes
        forged.steps[-1].action = call("submit_sql", query)
        forged.messages = [
            Message("assistant", call("submit_sql", query)) if m.role == "assistant" else m
            for m in forged.messages
        ]
        assert submitted_sql(forged) == query and forged.total_reward == 1.0
        verdict = verifier.verify(task, forged)
        assert (verdict.reward, verdict.passed) == (0.0, False)
        assert verdict.signals == {"format_ok": True, "executed": executed, "match": False}


@pytest.mark.parametrize(
    "steps",
    [
        [],
        [Step("", "", 0.0, False, True)],
        [Step("I would count the tracks.", "", 0.0, False, True)],
        [Step(call("submit_sql", 42), "", 0.0, False, True)],  # refused by the env: not a string
        [Step(call("execute_sql", "SELECT COUNT(*) FROM Track"), "", 0.0, False, True)],  # never submitted
        [Step('<tool_call>{"name": "submit_sql", "arguments": {"query": "SELECT', "", 0.0, False, True)],
        [Step(call("submit_sql", "SELECT COUNT(*) FROM Track") + "<tool_call>{", "", 0.0, False, True)],
        [Step(None, "", 0.0, False, True)],  # type: ignore[arg-type]  # a corrupt line
    ],
)
def test_malformed_or_empty_trajectories_get_a_zero_verdict_never_an_exception(steps):
    task = tasks_of(dataset="chinook")["chinook/001"]  # how many tracks? (the right query is in two steps)
    verdict = SQLVerifier().verify(task, Trajectory(ENV_ID, task.id, "?", steps))
    assert (verdict.reward, verdict.passed) == (0.0, False)
    assert verdict.signals["match"] is False
