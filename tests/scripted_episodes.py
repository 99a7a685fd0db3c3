"""Scripted episodes for the env tests: tool calls written as the envs parse them, a policy that says
given actions in order, and the process scores an env's own rules give such an episode.

Test modules import it by name (`from scripted_episodes import ...`): tests/ is on `sys.path`
because tests/conftest.py lives there.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import gymnasium as gym

from gfcr.agents.runner.rollout import rollout
from gfcr.core import Trajectory
from gfcr.core.policy import Completion, Request
from gfcr.filter.process_credit import ProcessJudge


def tool_call(name: str, **arguments: object) -> str:
    """One tool call in the text form the envs parse."""
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


class Scripted:
    """A policy that says `actions` in order, one per request."""

    name, version = "test:scripted", "1"

    def __init__(self, actions: Sequence[str]) -> None:
        self.actions = iter(actions)

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        return [Completion(next(self.actions)) for _ in requests]


def scored_episode(env: gym.Env, actions: Sequence[str], env_id: str, task_id: str) -> Trajectory:
    """The episode of `actions` on `task_id`, each step scored by the env's own process rules
    (`TextEnv.process_rules`) into its signals, as the judge stage scores it."""
    trajectory = rollout(env, Scripted(actions), env_id=env_id, task_id=task_id)
    ProcessJudge(env.unwrapped.process_rules).annotate([trajectory])
    return trajectory


def process_scores(trajectory: Trajectory) -> list[float | None]:
    """Each step's process score (None: the rule left it unscored)."""
    return [step.signals.get("process_score") for step in trajectory.steps]
