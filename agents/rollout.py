"""A minimal sequential runner: one episode at a time, trajectories to JSONL as they finish.

The vectorized runner (continuous batching over many envs) replaces this in its own issue;
this one is the simple reference that the CLI's `gfcr run` uses today.
"""

from __future__ import annotations

import logging
import random
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym

from gfcr.agents.base import Policy, Request, SamplingParams
from gfcr.core import Action, Message, Provenance, Step, Trajectory
from gfcr.core.trajectory import write_jsonl

logger = logging.getLogger(__name__)


def rollout(
    env: gym.Env,
    policy: Policy,
    *,
    env_id: str,
    task_id: str | None = None,
    seed: int | None = None,
    sampling: SamplingParams | None = None,
) -> Trajectory:
    """Run one episode of `policy` in `env` to its end and return the trajectory.

    A policy that raises fails the episode (status "failed", the traceback's last line in
    `failure`); it never propagates.
    """
    obs, info = env.reset(seed=seed, options={"task_id": task_id} if task_id else None)
    task, tools = info["task"], tuple(info["tools"])
    messages: list[Message] = list(info["messages"])
    trajectory = Trajectory(
        env_id=env_id,
        task_id=task.id,
        prompt=obs,
        messages=messages,
        provenance=Provenance(policy.name, policy.version, seed),
    )
    sampling = sampling or SamplingParams(seed=seed)
    while True:
        started = time.perf_counter()
        try:
            completion = policy.generate([Request(tuple(messages), tools, sampling, env_id, task)])[0]
        except Exception as e:
            trajectory.status, trajectory.failure = "failed", f"policy error: {type(e).__name__}: {e}"
            logger.debug("policy failed:\n%s", traceback.format_exc())
            return trajectory
        trajectory.cost.policy_s += time.perf_counter() - started
        action = Action(completion.text, completion.tool_calls) if completion.tool_calls else completion.text
        started = time.perf_counter()
        obs, reward, terminated, truncated, info = env.step(action)
        trajectory.cost.env_s += time.perf_counter() - started
        messages.append(Message("assistant", completion.text, completion.tool_calls))
        messages.extend(info["messages"])
        trajectory.steps.append(Step(completion.text, obs, float(reward), terminated, truncated, info["signals"]))
        if terminated or truncated:
            return trajectory


@dataclass
class RunSummary:
    """Aggregate of a run: how many episodes, their mean reward, how many solved or failed."""

    episodes: int = 0
    total_reward: float = 0.0
    solved: int = 0
    failed: int = 0
    seconds: float = 0.0

    @property
    def mean_reward(self) -> float:
        return self.total_reward / self.episodes if self.episodes else 0.0

    def add(self, trajectory: Trajectory) -> None:
        self.episodes += 1
        self.total_reward += trajectory.total_reward
        self.solved += trajectory.total_reward >= 1.0
        self.failed += trajectory.status == "failed"


def run(
    env_id: str,
    policy: Policy,
    num_episodes: int,
    out: str | Path | None = None,
    *,
    seed: int = 0,
    env_kwargs: dict[str, Any] | None = None,
    on_episode: Callable[[Trajectory], None] | None = None,
) -> RunSummary:
    """Run `num_episodes` episodes over distinct tasks (a seeded shuffle), appending to `out`.

    Episode i resets with `seed + i`; each trajectory is written (flushed and fsynced) as soon
    as it ends, so a killed run keeps every finished episode.
    """
    env = gym.make(env_id, **(env_kwargs or {}))
    if out is not None:
        Path(out).write_text("")  # start a fresh file; appended to below
    summary = RunSummary()
    started = time.perf_counter()
    for episode, task_id in enumerate(_task_order(env, num_episodes, seed)):
        trajectory = rollout(env, policy, env_id=env_id, task_id=task_id, seed=seed + episode)
        if out is not None:
            write_jsonl([trajectory], out, append=True)
        summary.add(trajectory)
        if on_episode is not None:
            on_episode(trajectory)
    summary.seconds = time.perf_counter() - started
    env.close()
    return summary


def _task_order(env: gym.Env, num_episodes: int, seed: int) -> Iterator[str]:
    """Task ids for the episodes: a seeded shuffle of the env's tasks, repeated if needed."""
    tasks = env.unwrapped.tasks
    order = list(range(len(tasks)))
    random.Random(seed).shuffle(order)
    for episode in range(num_episodes):
        yield tasks[order[episode % len(order)]].id
