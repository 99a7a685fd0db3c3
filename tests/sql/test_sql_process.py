"""The SQL family's process rule (`SQLEnv.process_rules`) on Chinook: an `execute_sql` step scores its
progress in how close its best query came to the gold result, and the ways to game it (the right
column names over wrong rows, NULLs under the gold's names, the same query again) earn nothing."""

from __future__ import annotations

import pytest
from scripted_episodes import process_scores, scored_episode, tool_call

from gfcr.core import Trajectory
from gfcr.envs.sql import SQLEnv

BRAZIL = "chinook/003"  # SELECT FirstName, LastName FROM Customer WHERE Country = 'Brazil'
GOLD = "SELECT FirstName, LastName FROM Customer WHERE Country = 'Brazil'"


@pytest.fixture(scope="module")
def env():
    return SQLEnv(dataset="chinook", max_turns=8)


def play(env: SQLEnv, queries: list[str]) -> Trajectory:
    actions = [tool_call("execute_sql", query=q) for q in queries] + [tool_call("submit_sql", query=GOLD)]
    trajectory = scored_episode(env, actions, "gfcr/SQL-v0", BRAZIL)
    assert trajectory.total_reward == 1.0
    return trajectory


def test_a_query_scores_its_progress_toward_the_gold_result(env):
    queries = [
        "SELECT FirstName, LastName FROM Customer WHERE Country = 'Brasil'",  # runs, no row of the gold's
        "SELECT FirstName, LastName FROM Customer",  # the gold's rows among others
        "SELECT LastName, FirstName FROM Customer WHERE Country = 'Brazil'",  # the result, columns swapped
    ]
    trajectory = play(env, queries)
    assert [s.signals["explored_level"] for s in trajectory.steps[:3]] == [0.0, 0.5, 1.0]
    assert process_scores(trajectory) == [0.0, 0.5, 0.5, None]  # the submission is the outcome's


def test_the_right_columns_over_wrong_rows_earn_nothing(env):
    queries = [
        "SELECT FirstName, LastName FROM Employee",  # the gold's column names, another table's rows
        "SELECT NULL AS FirstName, NULL AS LastName",  # the gold's column names, no data at all
        "SELECT FirstName, LastName FROM Customer WHERE Country = 'Brazil' LIMIT 0",
    ]
    trajectory = play(env, queries)
    assert process_scores(trajectory) == [0.0, 0.0, 0.0, None]


def test_the_same_query_again_and_failing_queries_pay_nothing(env):
    trajectory = play(env, [GOLD, GOLD, GOLD, "SELECT nope FROM nowhere"])
    assert process_scores(trajectory) == [1.0, 0.0, 0.0, 0.0, None]
    assert (
        trajectory.steps[3].signals["executed"] is False and trajectory.steps[3].signals["explored"] is True
    )
