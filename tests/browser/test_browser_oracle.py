"""The verifiers accept correct work and reject junk: the scripted oracle and a random agent.

The oracle sees only what an agent sees (its `oracle(task, messages)` reads the refs off the
latest page), so these runs drive every app page and action the tasks need in the real browser.
"""

from __future__ import annotations

import pytest
from page_scripts import shows_a_task

from gfcr.agents import OraclePolicy, RandomPolicy
from gfcr.agents.runner.rollout import rollout
from gfcr.core.trajectory import Trajectory
from gfcr.envs.browser.apps import APPS
from gfcr.envs.browser.data import app_source
from gfcr.envs.browser.miniwob import miniwob_pages
from gfcr.envs.browser.miniwob_oracle import SCREENSHOT_PAGES, SOLVED_PAGES, WHY_UNSOLVED

ENV_ID = "gfcr/Browser-v0"
TIMED = ["button-delay"]  # the page times the wait between two presses, within 15%


def trajectories_of(in_threads, task_ids: list[str], policy_factory, **env_kwargs) -> dict[str, Trajectory]:
    """Each task's trajectory, each episode a rollout of a fresh policy from `policy_factory`."""

    def episode(env, task_id: str) -> Trajectory:
        trajectory = rollout(env, policy_factory(), env_id=ENV_ID, task_id=task_id, seed=0)
        assert trajectory.status != "failed", trajectory.failure
        return trajectory

    return in_threads(task_ids, episode, **env_kwargs)


def rewards_of(in_threads, task_ids: list[str], policy_factory, **env_kwargs) -> dict[str, float]:
    runs = trajectories_of(in_threads, task_ids, policy_factory, **env_kwargs)
    return {task: trajectory.total_reward for task, trajectory in runs.items()}


def first_page(trajectory: Trajectory) -> str:
    return trajectory.messages[0].content.split("\n\n", 1)[-1]  # the prompt without the instructions


def unsolved(runs: dict[str, Trajectory]) -> dict[str, str]:
    """The episodes the oracle did not solve, each with what it saw first and did last (to debug)."""
    return {
        task: f"reward {t.total_reward}; first page: {first_page(t)!r}; last: {t.messages[-1].content!r}"
        for task, t in runs.items()
        if t.total_reward != 1.0
    }


@pytest.mark.parametrize("app", sorted(APPS))
def test_oracle_solves_every_task_of_each_app(in_threads, app):
    task_ids = app_source(app).ids()
    runs = trajectories_of(in_threads, task_ids, OraclePolicy, dataset=app)
    assert len(runs) == APPS[app].num_tasks
    assert unsolved(runs) == {}


def test_oracle_solves_every_solvable_page(in_threads):
    """Three episodes at a time, as a runner's pool would; a page judged on the seconds between two
    presses runs alone, where other episodes do not slow its actions. Each page first opens with its
    goal and elements to act on (tests/browser/test_browser_env.py opens the other pages)."""
    assert len(SOLVED_PAGES) >= 100
    runs = {}
    for pages, workers in (([p for p in SOLVED_PAGES if p not in TIMED], 3), (TIMED, 1)):
        task_ids = [f"miniwob/{page}/0" for page in pages]
        kwargs = {"dataset": "solvable", "num_seeds": 1, "workers": workers}
        runs |= trajectories_of(in_threads, task_ids, OraclePolicy, **kwargs)
    assert len(runs) == len(SOLVED_PAGES)
    assert [task for task, t in runs.items() if not shows_a_task(t.messages[0].content)] == []
    assert unsolved(runs) == {}


def test_every_page_without_a_solver_says_why():
    """Each page has a text solver, or a screenshot solver (tests/browser/test_browser_screenshot.py
    runs those), or a reason for none."""
    assert sorted([*SOLVED_PAGES, *SCREENSHOT_PAGES, *WHY_UNSOLVED]) == list(miniwob_pages())
    assert all(len(reason) > 20 for reason in WHY_UNSOLVED.values())


def test_the_oracle_over_every_page_scores_the_share_with_solvers(in_threads):
    """Pages without a solver end at once with 0.0 (the oracle says it has no plan), so the oracle's
    mean over every page is the solvers' share."""
    unsolved = sorted(WHY_UNSOLVED)[:3]
    rewards = rewards_of(
        in_threads, [f"miniwob/{page}/0" for page in unsolved], OraclePolicy, dataset="miniwob"
    )
    assert rewards == dict.fromkeys((f"miniwob/{page}/0" for page in unsolved), 0.0)


def test_random_agent_scores_near_zero(in_threads):
    task_ids = [
        *(f"{app}/{i}" for app in APPS for i in range(4)),
        *(f"miniwob/{p}/0" for p in SOLVED_PAGES[:12]),
    ]
    rewards = rewards_of(
        in_threads,
        task_ids,
        lambda: RandomPolicy(seed=7),
        dataset=["apps", *SOLVED_PAGES[:12]],
        num_seeds=1,
        max_turns=3,
    )
    assert sum(rewards.values()) / len(rewards) < 0.05
