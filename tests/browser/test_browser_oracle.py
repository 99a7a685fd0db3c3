"""The verifiers accept correct work and reject junk: the scripted oracle and a random agent.

The oracle sees only what an agent sees (its `oracle(task, messages)` reads the refs off the
latest page), so these runs drive every app page and action the tasks need in the real browser.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import gymnasium as gym
import pytest

import gfcr  # noqa: F401  (registers the envs)
from gfcr.agents import OraclePolicy, RandomPolicy
from gfcr.agents.rollout import rollout
from gfcr.envs.browser.apps import APPS
from gfcr.envs.browser.data import app_source
from gfcr.envs.browser.miniwob_oracle import SOLVED_PAGES

ENV_ID = "gfcr/Browser-v0"


def run_episodes(task_ids: list[str], policy_factory, workers: int = 3, **env_kwargs) -> dict[str, float]:
    """Reward per task, episodes spread over `workers` threads with an env each (one shared browser)."""
    local = threading.local()
    envs = []

    def run(task_id: str) -> tuple[str, float]:
        if not hasattr(local, "env"):
            local.env = gym.make(ENV_ID, **env_kwargs)
            envs.append(local.env)
        trajectory = rollout(local.env, policy_factory(), env_id=ENV_ID, task_id=task_id, seed=0)
        assert trajectory.status != "failed", trajectory.failure
        return task_id, trajectory.total_reward

    try:
        with ThreadPoolExecutor(workers) as pool:
            return dict(pool.map(run, task_ids))
    finally:
        for env in envs:
            env.close()


@pytest.mark.parametrize("app", sorted(APPS))
def test_oracle_solves_every_task_of_each_app(app):
    task_ids = app_source(app).ids()
    rewards = run_episodes(task_ids, OraclePolicy, dataset=app)
    assert len(rewards) == APPS[app].num_tasks
    assert {task: reward for task, reward in rewards.items() if reward != 1.0} == {}


def test_oracle_solves_at_least_twenty_miniwob_pages():
    assert len(SOLVED_PAGES) >= 20
    task_ids = [f"miniwob/{page}/0" for page in SOLVED_PAGES]
    rewards = run_episodes(task_ids, OraclePolicy, dataset=list(SOLVED_PAGES), num_seeds=1)
    assert {task: reward for task, reward in rewards.items() if reward != 1.0} == {}


def test_random_agent_scores_near_zero():
    task_ids = [
        *(f"{app}/{i}" for app in APPS for i in range(4)),
        *(f"miniwob/{p}/0" for p in SOLVED_PAGES[:12]),
    ]
    rewards = run_episodes(
        task_ids, lambda: RandomPolicy(seed=7), dataset=["apps", *SOLVED_PAGES[:12]], num_seeds=1, max_turns=3
    )
    assert sum(rewards.values()) / len(rewards) < 0.05
