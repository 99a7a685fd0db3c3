"""Policies: what turns a batch of conversations into completions, built from a spec string.

`make_policy(spec)` builds one from `scripted:oracle`, `scripted:random`, `hf:PATH`, `vllm:PATH` or
`openai:MODEL@BASE_URL`. Backends import their heavy dependencies (torch, vllm, openai) only
when built. The protocol they implement (`Policy`, `Request`, `Completion`) is `gfcr.core`'s.
Importing this package registers `make_policy` as the core's policy factory
(`gfcr.registry.register_policy_factory`), which builds the policies that an LLM judge or an
LLM user is given by spec.

>>> make_policy("scripted:oracle").name
'scripted:oracle'
>>> make_policy("openai:gpt-x")
Traceback (most recent call last):
...
gfcr.errors.ConfigError: openai: specs are openai:MODEL@BASE_URL, e.g. ...
"""

from __future__ import annotations

from gfcr.agents.policies.scripted import OraclePolicy, RandomPolicy
from gfcr.core.policy import Policy
from gfcr.errors import ConfigError, UnknownNameError
from gfcr.registry import register_policy_factory

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
        from gfcr.agents.policies.hf import HFPolicy

        return HFPolicy(argument)
    if backend == "vllm":
        from gfcr.agents.policies.vllm import VLLMPolicy

        return VLLMPolicy(argument)
    if backend == "openai":
        model, at, base_url = argument.rpartition("@")
        if not (model and at and base_url):
            raise ConfigError(
                "openai: specs are openai:MODEL@BASE_URL, e.g. openai:qwen@http://127.0.0.1:8000/v1; "
                f"got {spec!r}"
            )
        from gfcr.agents.policies.openai_api import OpenAIPolicy

        return OpenAIPolicy(model, base_url)
    raise UnknownNameError("policy backend", backend, BACKENDS, hint="write e.g. scripted:oracle or hf:PATH")


register_policy_factory(make_policy)

__all__ = ["BACKENDS", "OraclePolicy", "RandomPolicy", "make_policy"]
