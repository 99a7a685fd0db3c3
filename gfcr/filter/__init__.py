"""Filter: which signals φ are built from a trajectory, and how they become a training signal S.

- `Verifier` (the protocol every env family's checker implements) and `Verdict`, from
  `gfcr.core`; `SignalVerifier` reads the verdict an env already put in the last step's signals.
- `Rubric`: weighted sums of verifiers (`Criterion`s), with gates (a failed format gate zeroes the reward).
- The judge stage (`JudgeStage`, `[judge]` = `JudgeConfig`): the training reward composed of
  `RewardTerm`s scored over each group (`EnvReward`, `MajorityVote`, `ShorterBetter`,
  `LengthPenalty`, `OverlongPenalty`, judges), weighted and gated, recorded per term.
- `LLMJudge`: a pointwise grader backed by any chat model, policy or policy spec (`PolicyChat`:
  cached, deadlined, concurrency-limited); `GroupJudge` ranks a group's responses against each
  other (listwise, pairwise); a judge that fails gives no score (`judge_failure`), never 0.
- Process scores (`[judge.process]` = `ProcessConfig`): a `ProcessScorer` per step, a policy as
  the PRM (`PolicyPRM`) or a family's rule (`ProgressScorer`); `ProcessJudge` writes them into the
  steps' signals and `ProcessCredit` makes them per-token advantages; `ProcessScoreHook` writes
  them during a rollout through the runner's Filter hook.
- Training signals: `group_advantages` (GRPO, Dr. GRPO, RLOO), `overlong_penalty` (DAPO) and
  `outcome_reward` (a reward without that penalty: what dynamic sampling filters on).

>>> from gfcr.filter import group_advantages
>>> group_advantages([1.0, 0.0, 0.0, 1.0], "dr_grpo").tolist()
[0.5, -0.5, -0.5, 0.5]
"""

from gfcr.core.chat import ChatModel, PolicyChat
from gfcr.core.verdict import Verdict, Verifier
from gfcr.filter.compose import (
    EnvReward,
    JudgeStage,
    LengthPenalty,
    MajorityVote,
    OverlongPenalty,
    RewardTerm,
    ShorterBetter,
    Weighted,
)
from gfcr.filter.config import JudgeConfig
from gfcr.filter.group_judge import GroupJudge
from gfcr.filter.judge import LLMJudge
from gfcr.filter.process import PolicyPRM, ProcessScoreHook, ProcessScorer, ProgressScorer
from gfcr.filter.process_credit import ProcessConfig, ProcessCredit, ProcessJudge
from gfcr.filter.rubric import Criterion, Rubric
from gfcr.filter.signals import ADVANTAGE_ESTIMATORS, group_advantages, outcome_reward, overlong_penalty
from gfcr.filter.verifier import SignalVerifier

__all__ = [
    "ADVANTAGE_ESTIMATORS",
    "ChatModel",
    "Criterion",
    "EnvReward",
    "GroupJudge",
    "JudgeConfig",
    "JudgeStage",
    "LLMJudge",
    "LengthPenalty",
    "MajorityVote",
    "PolicyChat",
    "PolicyPRM",
    "ProcessConfig",
    "ProcessCredit",
    "ProcessJudge",
    "ProcessScoreHook",
    "OverlongPenalty",
    "ProcessScorer",
    "ProgressScorer",
    "RewardTerm",
    "Rubric",
    "ShorterBetter",
    "SignalVerifier",
    "Verdict",
    "Verifier",
    "Weighted",
    "group_advantages",
    "outcome_reward",
    "overlong_penalty",
]
