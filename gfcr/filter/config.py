"""`JudgeConfig`: the judge stage's settings, the `[judge]` section of a recipe.

The reward an optimizer sees is declared here (`gfcr.filter.compose`): the env's verifier at a
weight, gates, and one sub-table per term, each declared in its module. Off by default: the
reward is the env's own.

>>> config = from_dict(JudgeConfig, {"verifier": 1.0, "length": {"kind": "shorter_better", "weight": 0.001}})
>>> [w.name for w in config.stage().terms]
['verifier', 'length']
>>> [w.name for w in from_dict(JudgeConfig, {"verifier": 0.0, "majority": {"weight": 1.0}}).stage().terms]
['majority']
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gfcr.core.config import from_dict, setting
from gfcr.errors import ConfigError
from gfcr.filter.compose import (
    GATE_MODES,
    EnvReward,
    JudgeStage,
    LengthPenalty,
    MajorityVote,
    OverlongPenalty,
    RewardTerm,
    ShorterBetter,
    Weighted,
)
from gfcr.filter.judge_config import LLMJudgeConfig
from gfcr.filter.process_credit import ProcessConfig
from gfcr.filter.semantic import vote_clusters
from gfcr.filter.signals import LENGTH_TERM, OVERLONG_TERM

LENGTH_KINDS = ("none", "shorter_better", "kimi")


@dataclass(frozen=True)
class MajorityConfig:
    """`[judge.majority]`: TTRL's majority vote as a reward term (Zuo et al. 2025)."""

    weight: float = setting(
        0.0,
        "Weight of the vote: 1 for members giving the group's most common answer (clustered by the "
        "env's own equivalence check), else 0; 0 turns it off. With [judge] verifier = 0 the run is "
        "label-free (test-time RL).",
    )


@dataclass(frozen=True)
class LengthConfig:
    """`[judge.length]`: a group length term."""

    kind: str = setting(
        "none",
        "shorter_better: −|length − the group's shortest correct length| (ShorterBetter, Yi et al. 2025); "
        "kimi: Kimi k1.5's group length reward (Kimi Team 2025, §2.3.3); none: off.",
    )
    weight: float = setting(0.001, "Weight of the term: ShorterBetter's β (per token), Kimi's coefficient.")
    correct_at: float = setting(1.0, "An episode whose env reward is at least this is correct.")

    def __post_init__(self) -> None:
        if self.kind not in LENGTH_KINDS:
            kinds = ", ".join(LENGTH_KINDS)
            raise ConfigError(f"[judge.length] kind must be one of {kinds}, got {self.kind!r}")

    def term(self) -> RewardTerm | None:
        if self.kind == "shorter_better":
            return ShorterBetter(self.correct_at)
        if self.kind == "kimi":
            return LengthPenalty(self.correct_at)
        return None


@dataclass(frozen=True)
class JudgeConfig:
    """`[judge]`: the env's verifier at a weight, gates, and the terms added to it."""

    verifier: float = setting(1.0, "Weight of the env's own reward (0: not part of the reward).")
    gates: tuple[str, ...] = setting(
        (),
        "Signals an episode must carry as true (e.g. a format check); one that is false gates its reward.",
    )
    gate: str = setting("zero", "A failed gate's effect: zero (the reward is gate_reward) or cap (at most).")
    gate_reward: float = setting(0.0, "The reward of a gated episode (zero), or its ceiling (cap).")
    majority: MajorityConfig = setting(default_factory=MajorityConfig, help="TTRL's majority vote.")
    length: LengthConfig = setting(default_factory=LengthConfig, help="A group length term.")
    llm: LLMJudgeConfig = setting(
        default_factory=LLMJudgeConfig, help="An LLM judge (pointwise, listwise or pairwise) as the term llm."
    )
    process: ProcessConfig = setting(
        default_factory=ProcessConfig,
        help="Process scores per step or line, mixed into each token's advantage (not a reward term).",
    )
    envs: dict[str, dict[str, Any]] = setting(
        default_factory=dict,
        help='Per-env judge stages, by env id: a [judge] table of its own for that env\'s episodes, in '
        'place of this one (e.g. [judge.envs."gfcr/Code-v0"] gates = ["tests_ran"]).',
    )

    def __post_init__(self) -> None:
        if self.gate not in GATE_MODES:
            raise ConfigError(f"[judge] gate must be one of {', '.join(GATE_MODES)}, got {self.gate!r}")
        for env_id, table in self.envs.items():
            if "envs" in table:
                raise ConfigError(f'[judge.envs."{env_id}"] cannot hold envs of its own; move them up')
            self.for_env(env_id)  # a bad key fails when the recipe loads, not at the first step
        if self.verifier == 0.0 and not self.weighted() and not self.judged_by_llm:
            raise ConfigError(
                "[judge] verifier = 0 with no other term leaves no reward at all; give a term a weight "
                "(e.g. [judge.majority] weight = 1.0 for label-free training)"
            )

    def for_env(self, env_id: str) -> JudgeConfig:
        """The judge settings of `env_id`'s episodes: its `envs` table, else these.

        >>> config = from_dict(JudgeConfig, {"envs": {"gfcr/Code-v0": {"gates": ["tests_ran"]}}})
        >>> config.for_env("gfcr/Code-v0").gates, config.for_env("gfcr/Math-v0").gates
        (('tests_ran',), ())
        """
        if env_id not in self.envs:
            return self
        return from_dict(JudgeConfig, self.envs[env_id], f'judge.envs."{env_id}"')

    @property
    def judged_by_llm(self) -> bool:
        """Whether `[judge.llm]` adds its term (a model given, a weight not 0)."""
        return self.llm.enabled and self.llm.weight != 0.0

    def weighted(self) -> list[Weighted]:
        """The terms besides the verifier, in the order they are recorded."""
        terms = []
        if self.majority.weight:
            terms.append(Weighted("majority", MajorityVote(vote_clusters), self.majority.weight))
        length = self.length.term()
        if length is not None and self.length.weight:
            terms.append(Weighted(LENGTH_TERM, length, self.length.weight))
        return terms

    def stage(self, overlong: OverlongPenalty | None = None, extra: Sequence[Weighted] = ()) -> JudgeStage:
        """The judge stage these settings describe; `overlong` is DAPO's penalty when
        `[overlong_penalty]` is on, `extra` further terms given in Python."""
        terms = [Weighted("verifier", EnvReward(), self.verifier)] if self.verifier else []
        terms += self.weighted()
        if self.judged_by_llm:  # built here, not in weighted(): it loads (or connects to) the model
            terms.append(Weighted("llm", self.llm.build(), self.llm.weight))
        if overlong is not None:
            terms.append(Weighted(OVERLONG_TERM, overlong))
        return JudgeStage(tuple([*terms, *extra]), self.gates, self.gate, self.gate_reward)
