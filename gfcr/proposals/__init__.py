"""Tasks the policy proposes (Absolute Zero's proposer/solver loop), the parts that know no env.

A proposer episode's completion is read as tagged sections (`sections`); each env family turns
them into a `Task` only if it verifies by execution (`gfcr.envs.proposals`), or rejects it with a
`Rejected` reason. What is left must be new (`novelty`: n-gram Jaccard against every task known)
and learnable (`learnability`: solver success inside the band, and above the guess rate on its
answer with the question withheld by a margin: `guessing`); every proposal, kept or not, is
recorded with its provenance (`provenance`). The trainer's propose stage runs the loop
(`gfcr.trainers.propose`); `ProposeConfig` is its `[propose]` table.
"""

from gfcr.proposals.config import ProposeConfig
from gfcr.proposals.guessing import BLIND_PROMPT, blind_task, guessable
from gfcr.proposals.learnability import learnability
from gfcr.proposals.novelty import NoveltyFilter, jaccard, ngrams
from gfcr.proposals.provenance import ProvenanceRecord, ProvenanceStore
from gfcr.proposals.sections import REJECTIONS, Rejected, parse_sections

__all__ = [
    "BLIND_PROMPT",
    "REJECTIONS",
    "NoveltyFilter",
    "ProposeConfig",
    "ProvenanceRecord",
    "ProvenanceStore",
    "Rejected",
    "blind_task",
    "guessable",
    "jaccard",
    "learnability",
    "ngrams",
    "parse_sections",
]
