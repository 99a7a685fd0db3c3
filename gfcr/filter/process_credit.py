"""Process scores into the loss: each step's (or segment's) score becomes its tokens' advantage.

The judge stage scores every unit of an episode after generation (`ProcessJudge.annotate`): a
unit is a step (a turn: one run of loss mask 1 in the token data) or, with `segments="lines"`,
each line of a turn's text. The scores go into the step's signals: `process_score` for a step,
`process_score/<k>` for its k-th line; a unit the scorer could not score gets no signal.

Credit (`ProcessCredit.token_advantages`) follows DeepSeekMath's process supervision with GRPO
(Shao et al. 2024, arXiv 2402.03300, §4.1.3): the scores of every unit of a group's episodes are
normalised together, r̃ = (r − mean(R)) / std(R), and a token's process advantage is the sum of
the normalised scores of its unit and of every later unit of its episode (the return of the step
scores). A trainer adds it to the outcome advantage at a declared weight:

    advantage(token) = outcome advantage + weight · process advantage

A unit with no score (a PRM that failed or answered nothing readable, a step a rule cannot check)
is left out of the group's mean and std and adds nothing to the returns: its tokens get the
return of the scored units after it, and an episode with no score at all keeps its outcome
advantage alone (process advantage 0 on every token), as does a group whose scores are all equal.

Segments need token→text boundaries: a line ends at the first token whose text (the policy's own
`decode` of that one token id) holds a newline once the line has some non-blank text, so the
boundaries are the tokenizer's and nothing is re-tokenized.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np

from gfcr.core import Step, Trajectory
from gfcr.core.config import setting
from gfcr.errors import ConfigError
from gfcr.filter.process import PROCESS_SCORE, Ask, PolicyPRM, ProcessScorer, step_text

SEGMENTS = ("steps", "lines")
Decode = Callable[[Sequence[int]], str]  # token ids -> text, the policy's tokenizer


class Unit(NamedTuple):
    """One scored unit of an episode: its step, its signal key and its completion tokens [start, end)."""

    step: int
    key: str
    start: int
    end: int


def sampled_runs(loss_mask: Sequence[int]) -> list[tuple[int, int]]:
    """The [start, end) runs of loss mask 1: each turn's sampled tokens.

    >>> sampled_runs([1, 1, 0, 0, 1, 0, 1, 1])
    [(0, 2), (4, 5), (6, 8)]
    """
    runs, start = [], None
    for i, mask in enumerate([*loss_mask, 0]):
        if mask and start is None:
            start = i
        elif not mask and start is not None:
            runs.append((start, i))
            start = None
    return runs


def line_spans(ids: Sequence[int], start: int, end: int, decode: Decode) -> list[tuple[int, int]]:
    """The lines of tokens ids[start:end] as [start, end) spans: a line ends with the token whose
    text holds a newline once the line has non-blank text (blank lines join the next one).

    >>> text = {1: "a", 2: " b", 3: "\\n", 4: "\\n", 5: "c", 6: ".\\n", 7: "d"}
    >>> line_spans([1, 2, 3, 4, 5, 6, 7], 0, 7, lambda ids: "".join(text[i] for i in ids))
    [(0, 3), (3, 6), (6, 7)]
    """
    spans, begin, blank = [], start, True
    for i in range(start, end):
        piece = decode([ids[i]])
        blank = blank and not piece.split("\n")[0].strip()
        if "\n" in piece and not blank:
            spans.append((begin, i + 1))
            begin, blank = i + 1, not piece.rsplit("\n", 1)[1].strip()
    if begin < end:
        spans.append((begin, end))
    return spans


def process_advantages(scores: Sequence[Sequence[float | None]]) -> list[list[float]]:
    """Each member's process advantage per unit: DeepSeekMath's §4.1.3, the sum of the group-
    normalised scores of the unit and every later one; units with no score (None) are left out of
    the normalisation and the sums.

    >>> [[round(a, 3) for a in member] for member in process_advantages([[1.0, 0.0], [0.0, None]])]
    [[0.707, -0.707], [-0.707, 0.0]]
    >>> process_advantages([[None], [0.5, 0.5]])  # no spread: no process signal
    [[0.0], [0.0, 0.0]]
    """
    scored = np.array([s for member in scores for s in member if s is not None], dtype=float)
    std = float(scored.std()) if scored.size else 0.0
    mean = float(scored.mean()) if scored.size else 0.0
    advantages = []
    for member in scores:
        normalised = [0.0 if s is None or std < 1e-8 else (s - mean) / std for s in member]
        returns = np.cumsum(normalised[::-1])[::-1]
        advantages.append([float(a) for a in returns])
    return advantages


@dataclass(frozen=True)
class ProcessCredit:
    """How an episode's tokens split into scored units, and their process advantages.

    `segments`: "steps" (each turn) or "lines" (each line of each turn; needs `decode`);
    `weight`: the process advantage's weight beside the outcome advantage.

    >>> from gfcr.core import TokenData
    >>> def episode(scores):  # two turns of two sampled tokens, an observation token between
    ...     steps = [Step("", "", 0.0, False, False, {"process_score": s} if s is not None else {})
    ...              for s in scores]
    ...     tokens = TokenData([9], [1, 2, 0, 3, 4], [1, 1, 0, 1, 1], [0.0] * 5)
    ...     return Trajectory("e", "t", "?", steps, tokens=tokens)
    >>> group = [episode([1.0, 0.0]), episode([0.0, None])]
    >>> [[round(a, 3) for a in member] for member in ProcessCredit().token_advantages(group)]
    [[0.707, 0.707, 0.0, -0.707, -0.707], [-0.707, -0.707, 0.0, 0.0, 0.0]]
    """

    weight: float = 1.0
    segments: str = "steps"
    decode: Decode | None = None

    def __post_init__(self) -> None:
        if not math.isfinite(self.weight):
            raise ConfigError(f"process weight must be a finite number, got {self.weight!r}")
        if self.segments not in SEGMENTS:
            raise ConfigError(f"process segments must be one of {', '.join(SEGMENTS)}, got {self.segments!r}")
        if self.segments == "lines" and self.decode is None:
            raise ConfigError(
                "process segments = 'lines' needs the policy's decode (token ids -> text) to find each "
                "line's tokens; use a token policy (hf:, vllm:) or segments = 'steps'"
            )

    def units(self, trajectory: Trajectory) -> list[Unit]:
        """The episode's units in order; [] when its token data does not hold one run of sampled
        tokens per step (no token data, or a turn that sampled nothing): then it gets no process credit."""
        tokens = trajectory.tokens
        runs = sampled_runs(tokens.loss_mask) if tokens is not None else []
        if tokens is None or len(runs) != len(trajectory.steps):
            return []
        if self.segments == "steps":
            return [Unit(i, PROCESS_SCORE, start, end) for i, (start, end) in enumerate(runs)]
        assert self.decode is not None  # __post_init__
        return [
            Unit(i, f"{PROCESS_SCORE}/{k}", start, end)
            for i, (run_start, run_end) in enumerate(runs)
            for k, (start, end) in enumerate(
                line_spans(tokens.completion_ids, run_start, run_end, self.decode)
            )
        ]

    def scores(self, trajectory: Trajectory) -> list[float | None]:
        """The recorded score of each unit (None: none recorded)."""
        signals = [step.signals for step in trajectory.steps]
        return [_score(signals[unit.step].get(unit.key)) for unit in self.units(trajectory)]

    def token_advantages(self, group: Sequence[Trajectory]) -> list[list[float]]:
        """Each member's process advantage per completion token (0.0 off its units)."""
        units = [self.units(t) for t in group]
        per_unit = process_advantages([self.scores(t) for t in group])
        advantages = []
        for trajectory, member_units, member in zip(group, units, per_unit, strict=True):
            tokens = [0.0] * (len(trajectory.tokens.completion_ids) if trajectory.tokens else 0)
            for unit, advantage in zip(member_units, member, strict=True):
                tokens[unit.start : unit.end] = [advantage] * (unit.end - unit.start)
            advantages.append(tokens)
        return advantages


def _score(value: float | bool | None) -> float | None:
    return None if value is None or isinstance(value, bool) or not math.isfinite(value) else float(value)


@dataclass
class ProcessJudge:
    """The judge stage's process part: scores every unit of each episode into its step's signals.

    `scorer`: a `ProcessScorer` (steps: each step scored on the trajectory up to it) or a
    `PolicyPRM` (which also scores lines, each after the lines and steps before it).

    >>> from gfcr.filter.process import ProgressScorer
    >>> steps = [Step("", "", 0.0, False, False, {"level": v}) for v in (0.5, 0.25, 1.0)]
    >>> t = Trajectory("e", "t", "?", steps)
    >>> ProcessJudge(ProgressScorer(lambda s: s["level"])).annotate([t])
    (3, 0)
    >>> [s.signals["process_score"] for s in t.steps]
    [0.5, 0.0, 0.5]
    """

    scorer: ProcessScorer | PolicyPRM
    credit: ProcessCredit = ProcessCredit()

    def __post_init__(self) -> None:
        if self.credit.segments == "lines" and not isinstance(self.scorer, PolicyPRM):
            raise ConfigError(
                "process segments = 'lines' needs a policy as the scorer (scorer = a policy spec): rule "
                "scorers check a step's tool calls, not a line of its text"
            )

    def annotate(self, group: Sequence[Trajectory]) -> tuple[int, int]:
        """Score each member's units into its steps' signals (a PRM is asked about the whole group
        in one call); (units scored, units left unscored)."""
        if isinstance(self.scorer, PolicyPRM):
            pairs = [pair for t in group for pair in self._asks(t)]
            targets = [target for target, _ in pairs]
            scores = self.scorer.scores([ask for _, ask in pairs])
        else:  # a rule: each step scored on the trajectory up to it
            targets = [(step, PROCESS_SCORE) for t in group for step in t.steps]
            scores = [
                self.scorer.score(replace(t, steps=t.steps[: i + 1]))
                for t in group
                for i in range(len(t.steps))
            ]
        for (step, key), score in zip(targets, scores, strict=True):
            if score is None:
                step.signals.pop(key, None)
            else:
                step.signals[key] = score
        unscored = sum(score is None for score in scores)
        return len(scores) - unscored, unscored

    def _asks(self, trajectory: Trajectory) -> list[tuple[tuple[Step, str], Ask]]:
        """Each unit of `trajectory` (its step and signal key) and what the PRM is asked about it."""
        steps, prompt = trajectory.steps, trajectory.prompt
        earlier = [step_text(s) for s in steps]
        if self.credit.segments == "steps":
            return [
                ((step, PROCESS_SCORE), Ask(prompt, earlier[:i], step.action)) for i, step in enumerate(steps)
            ]
        assert self.credit.decode is not None  # ProcessCredit checks it for lines
        ids = trajectory.tokens.completion_ids if trajectory.tokens else []
        units = self.credit.units(trajectory)
        texts = [self.credit.decode(ids[unit.start : unit.end]) for unit in units]
        asks = []
        for unit, line in zip(units, texts, strict=True):
            before = [
                text
                for other, text in zip(units, texts, strict=True)
                if other.step == unit.step and other.start < unit.start
            ]
            # the context: the steps before the line's, then the lines before it in its own step
            asks.append(((steps[unit.step], unit.key), Ask(prompt, earlier[: unit.step] + before, line)))
        return asks


RULES = "rules"


@dataclass(frozen=True)
class ProcessConfig:
    """`[judge.process]`: process scores that reach the loss (off while `weight` is 0).

    >>> from gfcr.core.config import from_dict
    >>> config = from_dict(ProcessConfig, {"weight": 0.5})
    >>> config.scorer, config.segments, config.enabled
    ('rules', 'steps', True)
    """

    scorer: str = setting(
        RULES,
        "rules: the env family's own rule scorer (code: visible tests after run_tests; SQL: explored "
        "queries against the gold result; SWE: fail-to-pass tests after an edit); or a policy spec "
        "(hf:PATH, vllm:PATH, openai:MODEL@URL) asked to grade each step or line, as a PRM.",
    )
    weight: float = setting(
        0.0, "advantage = outcome advantage + weight · process advantage, per token (0: off)."
    )
    segments: str = setting(
        "steps", "What is scored: steps (each turn) | lines (each line of each turn; a policy scorer only)."
    )
    max_tokens: int = setting(256, "A policy scorer's reply budget, in tokens.")
    deadline_s: float | None = setting(
        None, "A policy scorer's deadline per call; past it the steps asked are left unscored."
    )
    cache_path: str | None = setting(None, "A SQLite file of a policy scorer's replies, kept across runs.")

    def __post_init__(self) -> None:
        if self.segments not in SEGMENTS:
            raise ConfigError(
                f"[judge.process] segments must be one of {', '.join(SEGMENTS)}, got {self.segments!r}"
            )
        if self.segments == "lines" and self.scorer == RULES:
            raise ConfigError(
                "[judge.process] segments = 'lines' needs a policy scorer (scorer = 'hf:PATH' …): rule "
                "scorers check a step's tool calls, not a line of its text"
            )
        if not math.isfinite(self.weight) or self.max_tokens < 1:
            raise ConfigError(
                f"[judge.process] needs a finite weight and max_tokens >= 1, got {self.weight} and "
                f"{self.max_tokens}"
            )

    @property
    def enabled(self) -> bool:
        return self.weight != 0.0

    def build(
        self, rules: ProcessScorer | None, decode: Decode | None = None, env: str = "the env"
    ) -> ProcessJudge:
        """The judge stage's process part: `rules` are the env's (`TextEnv.process_rules`, `env` its
        name) when the scorer is "rules"; `decode` is the policy's (token ids -> text), for lines."""
        if self.scorer == RULES:
            if rules is None:
                raise ConfigError(
                    f"[judge.process] scorer = 'rules', but {env} has no process rules (gfcr/SQL-v0, "
                    "gfcr/SWE-v0 and gfcr/CodeInteractive-v0 do); give a policy spec as the scorer (a "
                    "PRM), e.g. scorer = 'hf:PATH'"
                )
            scorer: ProcessScorer | PolicyPRM = rules
        else:
            scorer = PolicyPRM(self.scorer, max_tokens=self.max_tokens, deadline_s=self.deadline_s,
                               cache_path=self.cache_path)  # fmt: skip
        return ProcessJudge(scorer, ProcessCredit(self.weight, self.segments, decode))
