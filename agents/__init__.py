"""Policies, and the vectorized runner that drives them through envs.

`make_policy(spec)` builds a policy from a spec string: `scripted:oracle`, `scripted:random`,
`hf:PATH`, `vllm:PATH` or `openai:MODEL@BASE_URL`. Backends import their heavy dependencies
(torch, vllm, openai) only when built.

>>> make_policy("scripted:oracle").name
'scripted:oracle'
>>> make_policy("openai:gpt-x")
Traceback (most recent call last):
...
gfcr.errors.ConfigError: openai: specs are openai:MODEL@BASE_URL, e.g. ...
"""

from __future__ import annotations

from gfcr.agents.base import AsyncPolicy, Completion, Policy, Request, SamplingParams, TokenPolicy
from gfcr.agents.hooks import Controller, Decision
from gfcr.agents.rollout import rollout
from gfcr.agents.runner import Runner, RunnerConfig, RunResult
from gfcr.agents.scripted import OraclePolicy, RandomPolicy
from gfcr.agents.specs import EpisodeSpec, episodes_for_env, episodes_for_suite

from gfcr.errors import ConfigError, UnknownNameError

_SCRIPTED = {"oracle": OraclePolicy, "random": RandomPolicy}
BACKENDS = ("scripted", "hf", "vllm", "openai")


def make_policy(spec: str) -> Policy:
    """Build a policy from `BACKEND:ARGUMENT` (see the module docstring for the backends)."""
    backend, _, argument = spec.partition(":")
    if backend == "scripted":
        if argument not in _SCRIPTED:
            raise UnknownNameError("scripted policy", argument, _SCRIPTED, hint="write e.g. scripted:oracle")
        return _SCRIPTED[argument]()
    if backend in ("hf", "vllm") and not argument:
        raise ConfigError(
            f"{backend}: specs name a model directory, e.g. {backend}:runs/tiny-model; got {spec!r}"
        )
    if backend == "hf":
        from gfcr.agents.hf import HFPolicy

        return HFPolicy(argument)
    if backend == "vllm":
        from gfcr.agents.vllm import VLLMPolicy

        return VLLMPolicy(argument)
    if backend == "openai":
        model, at, base_url = argument.rpartition("@")
        if not (model and at and base_url):
            raise ConfigError(
                "openai: specs are openai:MODEL@BASE_URL, e.g. openai:qwen@http://127.0.0.1:8000/v1; "
                f"got {spec!r}"
            )
        from gfcr.agents.openai_api import OpenAIPolicy

        return OpenAIPolicy(model, base_url)
    raise UnknownNameError("policy backend", backend, BACKENDS, hint="write e.g. scripted:oracle or hf:PATH")


__all__ = [
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
