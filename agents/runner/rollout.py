"""One episode, in order, in an env you hold: the simplest way to run a policy.

For many episodes at once (batching, limits, faults, JSONL output) use `gfcr.agents.Runner`.

>>> import gymnasium as gym
>>> from gfcr.agents import OraclePolicy
>>> env = gym.make("gfcr/Math-v0", dataset="mmath", split="AIME2024")
>>> rollout(env, OraclePolicy(), env_id="gfcr/Math-v0", task_id="mmath/AIME2024/0").total_reward
1.0
"""

from __future__ import annotations

import logging
import time

import gymnasium as gym

from gfcr.agents.runner.episode import Episode
from gfcr.core import Trajectory
from gfcr.core.policy import Policy, SamplingParams, check_policy

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

    A policy that raises fails the episode (status "failed", the reason in `failure`); it never
    propagates. The env's own exceptions do propagate: here you hold the env.
    """
    check_policy(policy)
    started = time.perf_counter()
    episode = Episode(
        policy,
        env_id,
        env.reset(seed=seed, options={"task_id": task_id} if task_id else None),
        seed=seed,
        started=started,
    )
    episode.trajectory.cost.env_s += time.perf_counter() - started
    sampling = sampling or SamplingParams(seed=seed)
    while not episode.done:
        started = time.perf_counter()
        try:
            completion = policy.generate([episode.request(sampling)])[0]
        except Exception as e:
            logger.debug("policy failed", exc_info=True)
            episode.trajectory.status, episode.trajectory.failure = (
                "failed",
                f"policy error: {type(e).__name__}: {e}",
            )
            break
        policy_s = time.perf_counter() - started
        started = time.perf_counter()
        obs, reward, terminated, truncated, info = env.step(episode.action(completion))
        result = (obs, float(reward), terminated, truncated, info)
        episode.record(completion, result, policy_s=policy_s, env_s=time.perf_counter() - started)
    return episode.finish()
