"""Proposals in the env layer: the proposer's episode (`ProposeEnv`), and each family's verifier
that turns a proposal into a `Task` only if it verifies by execution (`family_of`), and the task
rebuilt from a proposal's provenance (`restored_task`)."""

from gfcr.envs.proposals.base import ProposalFamily, Verified
from gfcr.envs.proposals.env import PROPOSE_ENV, ProposeEnv
from gfcr.envs.proposals.families import FAMILIES, family_of, proposer_prompt, restored_task

__all__ = [
    "FAMILIES",
    "PROPOSE_ENV",
    "ProposalFamily",
    "ProposeEnv",
    "Verified",
    "family_of",
    "proposer_prompt",
    "restored_task",
]
