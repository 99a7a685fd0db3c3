"""`[judge.llm]`: a language model's verdict as a term of the judged reward.

`LLMJudgeConfig.build()` gives the term the judge stage composes (`scores(task, group)`): an
`LLMJudge` (pointwise) or a `GroupJudge` (listwise, pairwise); `weight` is the term's weight.

>>> from gfcr.core.config import from_dict
>>> config = from_dict(LLMJudgeConfig, {"model": "hf:runs/judge", "mode": "pairwise", "deadline_s": 5})
>>> config.enabled, config.mode, config.weight, LLMJudgeConfig().enabled
(True, 'pairwise', 1.0, False)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gfcr.core.admission import AdmissionConfig
from gfcr.core.config import setting
from gfcr.errors import ConfigError
from gfcr.filter.group_judge import INSTRUCTIONS as RELATIVE_INSTRUCTIONS
from gfcr.filter.group_judge import MODES, GroupJudge
from gfcr.filter.judge import INSTRUCTIONS, LLMJudge

JUDGE_MODES = ("pointwise", *MODES)


@dataclass(frozen=True)
class LLMJudgeConfig:
    """`[judge.llm]`: which model judges, how, and within which limits."""

    model: str = setting(
        "",
        "The judge's policy spec: hf:PATH, vllm:PATH, openai:MODEL@BASE_URL (a `gfcr serve` server "
        "is one: openai:NAME@http://HOST:PORT/v1); empty: no judge term.",
    )
    mode: str = setting(
        "pointwise",
        "pointwise: one verdict per response, in [0, 1]; listwise: the group's responses scored against "
        "each other in one call; pairwise: every pair of the group compared (K(K-1)/2 comparisons, "
        "one batched call), a member's score its share of wins.",
    )
    weight: float = setting(
        1.0, "The judge term's weight in the reward (the verifier's is [judge] verifier)."
    )
    instructions: str = setting(
        "", "The judge's system prompt: its rubric, what makes a response good (empty: the mode's default)."
    )
    include_gold: bool = setting(True, "Show the judge the task's gold data as the reference answer.")
    deadline_s: float | None = setting(
        60.0,
        "Seconds the judge has to answer one call (a group's verdicts); past it those members are "
        "judge failures, left out of training (None: no deadline).",
    )
    concurrency: int | None = setting(
        None, "Calls to the judge model at once, across the process; more queue (default: no limit)."
    )
    queue_timeout_s: float = setting(
        600.0, "Longest a call waits for a slot (concurrency); past it its members are judge failures."
    )
    cache_path: str | None = setting(
        None, "A SQLite file that keeps the judge's replies across runs (default: in memory, for the run)."
    )
    max_tokens: int = setting(
        512, "Tokens the judge may write per verdict (its reasoning, then the verdict)."
    )
    seed: int = setting(0, "Seeds the order a listwise or pairwise judge is shown the responses in.")

    def __post_init__(self) -> None:
        if self.mode not in JUDGE_MODES:
            raise ConfigError(f"[judge.llm] mode must be one of {', '.join(JUDGE_MODES)}, got {self.mode!r}")
        if not math.isfinite(self.weight):
            raise ConfigError(f"[judge.llm] weight must be a finite number, got {self.weight!r}")
        if self.deadline_s is not None and not self.deadline_s > 0:
            raise ConfigError(
                f"[judge.llm] deadline_s must be > 0 seconds (or unset), got {self.deadline_s!r}"
            )
        if self.max_tokens < 1:
            raise ConfigError(f"[judge.llm] max_tokens must be >= 1, got {self.max_tokens}")
        AdmissionConfig(self.concurrency, self.queue_timeout_s)  # its own checks, with their messages

    @property
    def enabled(self) -> bool:
        """Whether a judge is configured (a model spec given)."""
        return bool(self.model)

    def build(self) -> LLMJudge | GroupJudge:
        """The judge term. A spec resolves through the factory `gfcr.agents` registers (import it first)."""
        if not self.enabled:
            raise ConfigError("[judge.llm] has no model: set model = 'hf:PATH' (or vllm:, openai:) to judge")
        admission = AdmissionConfig(self.concurrency, self.queue_timeout_s)
        if self.mode == "pointwise":
            return LLMJudge(
                self.model, self.instructions or INSTRUCTIONS, self.include_gold, admission=admission,
                deadline_s=self.deadline_s, cache_path=self.cache_path, max_tokens=self.max_tokens,
            )  # fmt: skip
        return GroupJudge(
            self.model, self.mode, self.instructions or RELATIVE_INSTRUCTIONS, self.include_gold, self.seed,
            admission, deadline_s=self.deadline_s, cache_path=self.cache_path, max_tokens=self.max_tokens,
        )  # fmt: skip
