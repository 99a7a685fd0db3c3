"""The code family's process rule (`CodeInteractiveEnv.process_rules`) on real HumanEval tasks in the
real sandbox: a `run_tests` step scores its progress in the share of visible tests passing, and an
agent gaming the rule (re-running the tests, breaking and repairing a program) earns nothing more."""

from __future__ import annotations

import gymnasium as gym
from scripted_episodes import process_scores, scored_episode, tool_call

import gfcr  # noqa: F401  (registers the envs)
from gfcr.core import Trajectory
from gfcr.envs.code import CodeInteractiveEnv

ADD = "humaneval/53"
GOOD = "def add(x, y):\n    return x + y"
HALF = "def add(x, y):\n    return 5 if (x, y) == (2, 3) else 0"  # 1 of the 2 visible tests
WRONG = "def add(x, y):\n    return x * y"


def play(actions: list[str]) -> Trajectory:
    env = gym.make("gfcr/CodeInteractive-v0", max_turns=len(actions))
    return scored_episode(env, actions, "gfcr/CodeInteractive-v0", ADD)


def test_a_run_tests_step_scores_its_progress_in_visible_tests_and_other_steps_score_nothing():
    trajectory = play([tool_call("run_python", code=HALF), tool_call("run_tests"),
                       tool_call("run_tests", code=GOOD), tool_call("submit", code=GOOD)])  # fmt: skip
    steps = trajectory.steps
    assert [s.signals["tests_run"] for s in steps] == [False, True, True, False]
    assert [s.signals["visible_pass_fraction"] for s in steps[1:3]] == [0.5, 1.0]
    assert process_scores(trajectory) == [None, 0.5, 0.5, None]  # the submission is the outcome's
    assert trajectory.total_reward == 1.0


def test_re_running_the_tests_without_an_edit_pays_nothing():
    trajectory = play([tool_call("run_tests", code=GOOD)] * 4 + [tool_call("submit", code=GOOD)])
    assert process_scores(trajectory) == [1.0, 0.0, 0.0, 0.0, None]


def test_breaking_and_repairing_a_program_pays_its_progress_once():
    actions = [tool_call("run_tests", code=code) for code in (GOOD, WRONG, GOOD, WRONG, GOOD)]
    trajectory = play([*actions, tool_call("submit", code=GOOD)])
    assert process_scores(trajectory)[:5] == [1.0, 0.0, 0.0, 0.0, 0.0]
    assert sum(s or 0.0 for s in process_scores(trajectory)) == 1.0  # at most the best level, however many calls


def test_a_failing_run_tests_call_is_no_check_and_no_score():
    trajectory = play([tool_call("run_tests"), tool_call("submit", code=GOOD)])  # no code yet: the tool refuses
    assert "no code to test yet" in trajectory.steps[0].observation
    assert process_scores(trajectory) == [None, None]
    assert CodeInteractiveEnv.process_rules is not None
