"""The judge stage: the reward an optimizer sees, composed of terms scored over each group.

    reward = gate( Σ_i weight_i · score_i )

A term (`RewardTerm`) scores every member of one task's group: the env's own verdict
(`EnvReward`), a judge model (pointwise or relative), a group rubric (TTRL's majority vote,
ShorterBetter's and Kimi's length terms), DAPO's overlong penalty; a term's scale is its weight
(Kimi's coefficient, ShorterBetter's β). A gate is a signal the episode must carry (a format
check): when it is false the reward is zeroed (`gate_reward`) or capped.
Each episode's reward is recorded term by term in `Trajectory.reward_terms` (each term's weighted
part, the gate's cut as `"gate"`), and `Trajectory.reward` is their sum, so the criteria report and
`gfcr diagnose` can show which term moved it.

A term that cannot score a member (a judge that raised, missed its deadline or answered nothing
parsable) gives None: that episode is a `judge_failure`, failed by the infrastructure and left
out of training like any failed episode, never scored 0.

>>> from gfcr.core import Step, Task
>>> def episode(length, reward):
...     return Trajectory("e", "t", "?", [Step("x" * length, "", reward, True, False)])
>>> group = [episode(4, 1.0), episode(8, 1.0), episode(2, 0.0)]
>>> stage = JudgeStage((Weighted("verifier", EnvReward()), Weighted("length", ShorterBetter(), 0.1)))
>>> stage.judge(Task("t", "?"), group)
0
>>> [t.reward_terms for t in group]  # the shortest correct response is 4 characters long
[{'verifier': 1.0, 'length': 0.0}, {'verifier': 1.0, 'length': -0.4}, {'verifier': 0.0, 'length': -0.2}]
>>> [round(t.reward, 2) for t in group]
[1.0, 0.6, -0.2]
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from gfcr.core import Task, Trajectory
from gfcr.errors import ConfigError
from gfcr.filter.signals import overlong_penalty, response_length

GATE_MODES = ("zero", "cap")
JUDGE_FAILURE = "judge_failure"  # the signal, and the start of the failure reason


@runtime_checkable
class RewardTerm(Protocol):
    """One term of the judged reward, scored over one task's group (the samples of a prompt)."""

    def scores(self, task: Task, group: Sequence[Trajectory]) -> list[float | None]:
        """One score per member, in order; None where this term could not score that member."""
        ...


@dataclass(frozen=True)
class EnvReward:
    """The env's own verdict: each episode's `total_reward` (its verifier's reward)."""

    def scores(self, task: Task, group: Sequence[Trajectory]) -> list[float | None]:
        return [t.total_reward for t in group]


@dataclass(frozen=True)
class MajorityVote:
    """TTRL's label-free reward (Zuo et al. 2025): 1.0 for members whose answer is the group's most
    common one, 0.0 for the others and for members with no answer. `clusters` labels each member's
    answer (members with equal labels gave equivalent answers; None: no answer).

    >>> from gfcr.core import Step
    >>> group = [Trajectory("e", "t", "?", [Step(a, "", 0.0, True, False)]) for a in ("4", "4", "5")]
    >>> MajorityVote(lambda g: [t.steps[-1].action for t in g]).scores(Task("t", "?"), group)
    [1.0, 1.0, 0.0]
    """

    clusters: Callable[[Sequence[Trajectory]], Sequence[object | None]]

    def scores(self, task: Task, group: Sequence[Trajectory]) -> list[float | None]:
        labels = list(self.clusters(group))
        counts = Counter(label for label in labels if label is not None)
        if not counts:
            return [0.0] * len(group)
        majority = counts.most_common(1)[0][0]  # a tie goes to the answer seen first
        return [1.0 if label == majority else 0.0 for label in labels]


@dataclass(frozen=True)
class ShorterBetter:
    """ShorterBetter's length term (Yi et al. 2025, "ShorterBetter", eq. 2): −|ℓ_i − ℓ_SOL|, where
    the sample-optimal length ℓ_SOL is the group's shortest correct response (env reward >=
    `correct_at`), or the group's mean length when none is correct. Weight it by β (the paper's
    0.001 per token) beside the verifier's α. Lengths are `response_length` (the policy's tokens, or
    characters for text-only policies).
    """

    correct_at: float = 1.0

    def scores(self, task: Task, group: Sequence[Trajectory]) -> list[float | None]:
        lengths = [response_length(t) for t in group]
        correct = [n for n, t in zip(lengths, group, strict=True) if t.total_reward >= self.correct_at]
        optimal = min(correct) if correct else float(np.mean(lengths))
        return [0.0 - abs(n - optimal) for n in lengths]  # 0.0 - : no "-0.0" at the optimum


@dataclass(frozen=True)
class LengthPenalty:
    """Kimi k1.5's group length reward (Kimi Team 2025, §2.3.3): λ_i = 0.5 − (ℓ_i − ℓ_min)/(ℓ_max −
    ℓ_min) for a correct member (env reward >= `correct_at`), min(0, λ_i) for a wrong one; all lengths
    equal: 0. Short correct answers gain, long wrong ones lose.

    >>> from gfcr.core import Step
    >>> def episode(length, reward):
    ...     return Trajectory("e", "t", "?", [Step("x" * length, "", reward, True, False)])
    >>> group = [episode(10, 1.0), episode(20, 1.0), episode(30, 0.0)]
    >>> LengthPenalty().scores(Task("t", "?"), group)
    [0.5, 0.0, -0.5]
    """

    correct_at: float = 1.0

    def scores(self, task: Task, group: Sequence[Trajectory]) -> list[float | None]:
        lengths = [response_length(t) for t in group]
        shortest, longest = min(lengths), max(lengths)
        if longest == shortest:
            return [0.0] * len(group)
        out: list[float | None] = []
        for t, length in zip(group, lengths, strict=True):
            lam = 0.5 - (length - shortest) / (longest - shortest)
            out.append(lam if t.total_reward >= self.correct_at else min(0.0, lam))
        return out


@dataclass(frozen=True)
class OverlongPenalty:
    """DAPO's soft overlong punishment (Yu et al. 2025, §3.4, eq. 13) of each episode, on the policy's
    own tokens (`response_length`: every turn's sampled tokens; prompt and observations excluded).

    >>> from gfcr.core import TokenData
    >>> t = Trajectory("e", "t", "?", tokens=TokenData([1], [2] * 9, [1] * 9, [0.0] * 9))
    >>> OverlongPenalty(max_length=10, cache_length=4).scores(Task("t", "?"), [t])  # 3 into the ramp
    [-0.75]
    """

    max_length: int
    cache_length: int

    def penalty(self, trajectory: Trajectory) -> float:
        return overlong_penalty(response_length(trajectory), self.max_length, self.cache_length)

    def scores(self, task: Task, group: Sequence[Trajectory]) -> list[float | None]:
        return [self.penalty(t) for t in group]


@dataclass(frozen=True)
class Weighted:
    """A term of the stage: its name in `reward_terms`, the term and its weight."""

    name: str
    term: RewardTerm
    weight: float = 1.0


@dataclass(frozen=True)
class JudgeStage:
    """The judge stage of the rollout pipeline: composes `terms` over each group, then gates.

    `gates` are signals of the episode's last step that must be truthy (e.g. a format check); an
    episode failing one gets `gate_reward` ("zero") or at most `gate_reward` ("cap"), the difference
    recorded as the term "gate" (present exactly when a gate failed, 0.0 when it cut nothing). A
    gate signal the env does not emit is a `ConfigError`: silently gating every episode would train
    on nothing.
    """

    terms: tuple[Weighted, ...] = (Weighted("verifier", EnvReward()),)
    gates: tuple[str, ...] = ()
    gate: str = "zero"
    gate_reward: float = 0.0

    def __post_init__(self) -> None:
        names = [w.name for w in self.terms]
        if len(set(names)) != len(names) or "gate" in names:
            raise ConfigError(f"judge terms need distinct names other than 'gate', got {names}")
        if self.gate not in GATE_MODES:
            raise ConfigError(f"[judge] gate must be one of {', '.join(GATE_MODES)}, got {self.gate!r}")

    @property
    def needs_task(self) -> bool:
        """Whether a term reads the task (its gold data): only the env's own terms do not."""
        return any(not isinstance(w.term, EnvReward | OverlongPenalty) for w in self.terms)

    def judge(self, task: Task, group: Sequence[Trajectory]) -> int:
        """Score `group` (episodes of `task`): writes each ok member's `reward_terms`, and marks a
        member some term could not score as a judge failure. Returns how many failed."""
        members = [t for t in group if t.status == "ok"]
        if not members:
            return 0
        scored = {w.name: w.term.scores(task, members) for w in self.terms}
        failures = 0
        for i, trajectory in enumerate(members):
            missing = [name for name, scores in scored.items() if scores[i] is None]
            if missing:
                failures += 1
                mark_judge_failure(trajectory, missing)
                continue
            terms = {w.name: w.weight * float(scored[w.name][i] or 0.0) for w in self.terms}
            if not self._passes_gates(trajectory):  # the gate's cut is a term: the sum is the reward
                total = sum(terms.values())
                cut = self.gate_reward if self.gate == "zero" else min(total, self.gate_reward)
                terms["gate"] = cut - total
            trajectory.reward_terms = terms
        return failures

    def _passes_gates(self, trajectory: Trajectory) -> bool:
        signals = trajectory.signals
        for gate in self.gates:
            if gate not in signals:
                raise ConfigError(
                    f"[judge] gates names the signal {gate!r}, which {trajectory.env_id} does not emit "
                    f"(its signals: {', '.join(sorted(signals)) or 'none'}); gate on one of those"
                )
        return all(signals[gate] for gate in self.gates)


def mark_judge_failure(trajectory: Trajectory, terms: Sequence[str]) -> None:
    """A judge that could not score an episode fails it as infrastructure (status "failed"), with
    the signal `judge_failure`: it is left out of training and of pass rates, never scored 0."""
    trajectory.status = "failed"
    trajectory.failure = f"{JUDGE_FAILURE}: no score from {', '.join(terms)}"
    trajectory.reward_terms = {}
    if trajectory.steps:
        trajectory.steps[-1].signals[JUDGE_FAILURE] = True
