"""The SWE family's process rule (`SWEEnv.process_rules`) on a real project in the real sandbox: a
`run_tests` step scores its progress in the task's fail-to-pass tests passing in the agent's own
run; running them again pays nothing, and a run after changing the tests proves nothing (0)."""

from __future__ import annotations

import json
import shlex

import gymnasium as gym
import pytest

import gfcr  # noqa: F401  (registers the envs)
from gfcr.agents.runner.rollout import rollout
from gfcr.core import Trajectory
from gfcr.core.policy import Completion
from gfcr.filter.process_credit import ProcessJudge

TASK = "swe/inflection-0"


def call(name: str, **arguments: object) -> dict:
    return {"name": name, "arguments": arguments}


def message(*calls: dict) -> str:
    return "".join(f"<tool_call>{json.dumps(c)}</tool_call>" for c in calls)


class Scripted:
    name, version = "test:scripted", "1"

    def __init__(self, actions: list[str]) -> None:
        self.actions = iter(actions)

    def generate(self, requests):
        return [Completion(next(self.actions)) for _ in requests]


@pytest.fixture(scope="module")
def env():
    env = gym.make("gfcr/SWE-v0", dataset="inflection", tasks_per_project=4, max_turns=8)
    yield env
    env.close()


@pytest.fixture(scope="module")
def task(env):
    return env.unwrapped.tasks.get(TASK)


def play(env, actions: list[str]) -> Trajectory:
    trajectory = rollout(env, Scripted(actions), env_id="gfcr/SWE-v0", task_id=TASK)
    ProcessJudge(env.unwrapped.process_rules).annotate([trajectory])
    return trajectory


def scores(trajectory: Trajectory) -> list[float | None]:
    return [step.signals.get("process_score") for step in trajectory.steps]


def test_the_fix_pays_once_in_the_run_after_it_and_not_again(env, task):
    failing = " ".join(shlex.quote(t) for t in task.metadata["fail_to_pass"])
    trajectory = play(env, [
        message(call("run_tests", tests=failing)),  # before the fix: they fail
        message(call("apply_patch", patch=task.gold)),  # an edit, no test run: no score
        message(call("run_tests")),  # the task's test files: the fix shows
        message(call("run_tests")),  # again, no edit since
        message(call("submit")),
    ])  # fmt: skip
    assert [s.signals["fail_to_pass_run"] for s in trajectory.steps[:4]] == [0.0, 0.0, 1.0, 1.0]
    assert scores(trajectory) == [0.0, None, 1.0, 0.0, None]
    assert trajectory.total_reward == 1.0


def test_a_run_after_changing_the_tests_proves_nothing(env, task):
    test_path = task.metadata["fail_to_pass"][0].split("::")[0]
    trajectory = play(env, [
        message(call("apply_patch", patch=task.gold), call("bash", command=f"echo '# x' >> {test_path}"),
                call("run_tests")),  # the fix is real, but the tests were touched: no credit
        message(call("bash", command=f"printf 'def test_nothing():\\n    pass\\n' > {test_path}"),
                call("run_tests")),
        message(call("submit")),
    ])  # fmt: skip
    assert all(s.signals["tests_run"] for s in trajectory.steps[:2])
    assert scores(trajectory) == [0.0, 0.0, None]
