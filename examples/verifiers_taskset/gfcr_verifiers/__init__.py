"""The verifiers plugin `gfcr-verifiers`: gfcr's taskset and harness, for `vf-eval` and prime-rl.

verifiers resolves the taskset id `gfcr-verifiers` by importing this module and taking the
`Taskset`, `Harness` and `Env` subclasses it exports in `__all__`; which gfcr env the taskset draws from
is its config (`--env.taskset.env-id gfcr/Math-v0 --env.taskset.env-kwargs '{"split": "AIME2024"}'`).
Everything is defined in `gfcr.integrations.verifiers`.
"""

from gfcr.integrations.verifiers import GfcrEnv, GfcrHarness, GfcrTaskset, load_environment

__all__ = ["GfcrEnv", "GfcrHarness", "GfcrTaskset", "load_environment"]
