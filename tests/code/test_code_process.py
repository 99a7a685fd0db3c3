"""The code family's process rule (`CodeInteractiveEnv.process_rules`) on real HumanEval tasks in the
real sandbox: a `run_tests` step scores its progress in the share of visible tests passing, and an
agent gaming the rule (re-running the tests, breaking and repairing a program) earns nothing more."""

from __future__ import annotations

import json

import gymnasium as gym

import gfcr  # noqa: F401  (registers the envs)
from gfcr.agents.runner.rollout import rollout
from gfcr.core import Trajectory
from gfcr.core.policy import Completion
from gfcr.envs.code import CodeInteractiveEnv
from gfcr.filter.process_credit import ProcessJudge

ADD = "humaneval/53"
GOOD = "def add(x, y):\n    return x + y"
HALF = "def add(x, y):\n    return 5 if (x, y) == (2, 3) else 0"  # 1 of the 2 visible tests
WRONG = "def add(x, y):\n    return x * y"


def call(name: str, **arguments: object) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


class Scripted:
    name, version = "test:scripted", "1"

    def __init__(self, actions: list[str]) -> None:
        self.actions = iter(actions)

    def generate(self, requests):
        return [Completion(next(self.actions)) for _ in requests]


def play(actions: list[str]) -> Trajectory:
    env = gym.make("gfcr/CodeInteractive-v0", max_turns=len(actions))
    trajectory = rollout(env, Scripted(actions), env_id="gfcr/CodeInteractive-v0", task_id=ADD)
    ProcessJudge(env.unwrapped.process_rules).annotate([trajectory])
    return trajectory


def scores(trajectory: Trajectory) -> list[float | None]:
    return [step.signals.get("process_score") for step in trajectory.steps]


def test_a_run_tests_step_scores_its_progress_in_visible_tests_and_other_steps_score_nothing():
    trajectory = play([call("run_python", code=HALF), call("run_tests"), call("run_tests", code=GOOD),
                       call("submit", code=GOOD)])  # fmt: skip
    steps = trajectory.steps
    assert [s.signals["tests_run"] for s in steps] == [False, True, True, False]
    assert [s.signals["visible_pass_fraction"] for s in steps[1:3]] == [0.5, 1.0]
    assert scores(trajectory) == [None, 0.5, 0.5, None]  # the submission is the outcome's
    assert trajectory.total_reward == 1.0


def test_re_running_the_tests_without_an_edit_pays_nothing():
    trajectory = play([call("run_tests", code=GOOD)] * 4 + [call("submit", code=GOOD)])
    assert scores(trajectory) == [1.0, 0.0, 0.0, 0.0, None]


def test_breaking_and_repairing_a_program_pays_its_progress_once():
    actions = [call("run_tests", code=code) for code in (GOOD, WRONG, GOOD, WRONG, GOOD)]
    trajectory = play([*actions, call("submit", code=GOOD)])
    assert scores(trajectory)[:5] == [1.0, 0.0, 0.0, 0.0, 0.0]
    assert sum(s or 0.0 for s in scores(trajectory)) == 1.0  # at most the best level, however many calls


def test_a_failing_run_tests_call_is_no_check_and_no_score():
    trajectory = play([call("run_tests"), call("submit", code=GOOD)])  # no code yet: the tool refuses
    assert "no code to test yet" in trajectory.steps[0].observation
    assert scores(trajectory) == [None, None]
    assert CodeInteractiveEnv.process_rules is not None
