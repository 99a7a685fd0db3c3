"""Policies, and the vectorized runner that drives them through envs.

- `gfcr.agents.policies`: `make_policy(spec)` and the backends (`scripted:`, `hf:`, `vllm:`, `openai:`);
- `gfcr.agents.runner`: `Runner`, `RunnerConfig`, episode builders and `rollout`.

The contracts they implement and call (`Policy`, `Request`, `SamplingParams`, `Completion`, the
runner's hooks `Controller` and `Decision`, `EpisodeSpec`) live in `gfcr.core` and are
re-exported here.

>>> make_policy("scripted:oracle").name
'scripted:oracle'
"""

from __future__ import annotations

from gfcr.agents.policies import BACKENDS, OraclePolicy, RandomPolicy, make_policy
from gfcr.agents.runner import Runner, RunnerConfig, RunResult, episodes_for_env, episodes_for_suite, rollout
from gfcr.core.episode import EpisodeSpec
from gfcr.core.hooks import Controller, Decision
from gfcr.core.policy import AsyncPolicy, Completion, Policy, Request, SamplingParams, TokenPolicy

__all__ = [
    "BACKENDS",
    "AsyncPolicy",
    "Completion",
    "Controller",
    "Decision",
    "EpisodeSpec",
    "OraclePolicy",
    "Policy",
    "RandomPolicy",
    "Request",
    "RunResult",
    "Runner",
    "RunnerConfig",
    "SamplingParams",
    "TokenPolicy",
    "episodes_for_env",
    "episodes_for_suite",
    "make_policy",
    "rollout",
]
