"""Filter: which signals φ are built from a trajectory, and how they become a training signal S.

- `Verifier` (the protocol every env family's checker implements) and `Verdict`, from
  `gfcr.core`; `SignalVerifier` reads the verdict an env already put in the last step's signals.
- `Rubric`: weighted sums of verifiers (`Criterion`s), with gates (a failed format gate zeroes the reward);
  `GroupRubric`s score a whole group (`MajorityVote`, `LengthPenalty`).
- `LLMJudge`: a verifier backed by any chat model, policy or policy spec (`PolicyChat`), with a cache.
- `ProcessScorer` and `ProcessScoreHook`: step-level scores written into each step's signals
  through the runner's Filter hook.
- Training signals: `group_advantages` (GRPO, Dr. GRPO, RLOO) and `overlong_penalty` (DAPO).

>>> from gfcr.filter import group_advantages
>>> group_advantages([1.0, 0.0, 0.0, 1.0], "dr_grpo").tolist()
[0.5, -0.5, -0.5, 0.5]
"""

from gfcr.core.chat import ChatModel, PolicyChat
from gfcr.core.verdict import Verdict, Verifier
from gfcr.filter.judge import LLMJudge
from gfcr.filter.process import ProcessScoreHook, ProcessScorer
from gfcr.filter.rubric import Criterion, GroupRubric, LengthPenalty, MajorityVote, Rubric
from gfcr.filter.signals import ADVANTAGE_ESTIMATORS, group_advantages, overlong_penalty
from gfcr.filter.verifier import SignalVerifier

__all__ = [
    "ADVANTAGE_ESTIMATORS",
    "ChatModel",
    "Criterion",
    "GroupRubric",
    "LLMJudge",
    "LengthPenalty",
    "MajorityVote",
    "PolicyChat",
    "ProcessScoreHook",
    "ProcessScorer",
    "Rubric",
    "SignalVerifier",
    "Verdict",
    "Verifier",
    "group_advantages",
    "overlong_penalty",
]
