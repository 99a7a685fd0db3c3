"""Policies and the code that runs them through envs.

`make_policy(spec)` builds a policy from a spec string:

>>> make_policy("scripted:oracle").name
'scripted:oracle'
"""

from __future__ import annotations

from gfcr.agents.base import Completion, Policy, Request, SamplingParams
from gfcr.agents.scripted import OraclePolicy, RandomPolicy
from gfcr.errors import UnknownNameError

_SCRIPTED = {"oracle": OraclePolicy, "random": RandomPolicy}


def make_policy(spec: str) -> Policy:
    """Build a policy from `BACKEND:ARGUMENT`, e.g. `scripted:oracle` or `scripted:random`."""
    backend, _, argument = spec.partition(":")
    if backend == "scripted" and argument in _SCRIPTED:
        return _SCRIPTED[argument]()
    if backend == "scripted":
        raise UnknownNameError("scripted policy", argument, _SCRIPTED, hint="write e.g. scripted:oracle")
    raise UnknownNameError("policy backend", backend, ["scripted"], hint="write e.g. scripted:oracle")


__all__ = ["Completion", "OraclePolicy", "Policy", "RandomPolicy", "Request", "SamplingParams", "make_policy"]
