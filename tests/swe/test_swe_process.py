"""The SWE family's process rule (`SWEEnv.process_rules`) on a real project in the real sandbox: a
`run_tests` step scores its progress in the task's fail-to-pass tests passing in the agent's own
run; running them again pays nothing, and a run after changing the tests proves nothing (0)."""

from __future__ import annotations

import shlex

import gymnasium as gym
import pytest
from scripted_episodes import process_scores, scored_episode, tool_call

import gfcr  # noqa: F401  (registers the envs)
from gfcr.core import Trajectory

TASK = "swe/inflection-0"


@pytest.fixture(scope="module")
def env():
    env = gym.make("gfcr/SWE-v0", dataset="inflection", tasks_per_project=4, max_turns=8)
    yield env
    env.close()


@pytest.fixture(scope="module")
def task(env):
    return env.unwrapped.tasks.get(TASK)


def play(env, actions: list[str]) -> Trajectory:
    return scored_episode(env, actions, "gfcr/SWE-v0", TASK)


def test_the_fix_pays_once_in_the_run_after_it_and_not_again(env, task):
    failing = " ".join(shlex.quote(t) for t in task.metadata["fail_to_pass"])
    trajectory = play(env, [
        tool_call("run_tests", tests=failing),  # before the fix: they fail
        tool_call("apply_patch", patch=task.gold),  # an edit, no test run: no score
        tool_call("run_tests"),  # the task's test files: the fix shows
        tool_call("run_tests"),  # again, no edit since
        tool_call("submit"),
    ])  # fmt: skip
    assert [s.signals["fail_to_pass_run"] for s in trajectory.steps[:4]] == [0.0, 0.0, 1.0, 1.0]
    assert process_scores(trajectory) == [0.0, None, 1.0, 0.0, None]
    assert trajectory.total_reward == 1.0


def test_a_run_after_changing_the_tests_proves_nothing(env, task):
    test_path = task.metadata["fail_to_pass"][0].split("::")[0]
    trajectory = play(env, [
        tool_call("apply_patch", patch=task.gold) + tool_call("bash", command=f"echo '# x' >> {test_path}")
        + tool_call("run_tests"),  # the fix is real, but the tests were touched: no credit
        tool_call("bash", command=f"printf 'def test_nothing():\\n    pass\\n' > {test_path}")
        + tool_call("run_tests"),
        tool_call("submit"),
    ])  # fmt: skip
    assert all(s.signals["tests_run"] for s in trajectory.steps[:2])
    assert process_scores(trajectory) == [0.0, 0.0, None]
