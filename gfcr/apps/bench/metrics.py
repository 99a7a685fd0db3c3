"""Scores of a set of episodes: pass@1, unbiased pass@k, pass^k, reward, tokens, time, failures.

- pass@k (Chen et al. 2021, "Evaluating Large Language Models Trained on Code", eq. 1): the
  chance that at least one of k samples of a task is solved, estimated without bias from n ≥ k
  samples with c solved as 1 - C(n-c, k) / C(n, k), averaged over tasks.
- pass^k (Yao et al. 2024, "τ-bench", §5): the chance that all k samples are solved,
  C(c, k) / C(n, k), averaged over tasks — how reliably an agent solves a task, not whether once.

An episode is solved when it ran to its end and earned total reward ≥ 1.0; an episode that
infrastructure failed counts as unsolved and is listed under its failure reason. An episode that
ran to its end but whose verdict the infrastructure failed (`NOT_THE_AGENTS`: the LLM user, or an
LLM judge, failed) is listed under that signal and left out of pass@k and pass^k.

>>> round(pass_at_k(n=10, c=3, k=1), 3), round(pass_at_k(10, 3, 5), 3), round(pass_hat_k(10, 3, 2), 3)
(0.3, 0.917, 0.067)
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from math import comb
from typing import Any

from gfcr.agents.runner.episode import episode_solved
from gfcr.core import Trajectory
from gfcr.core.admission import add_waits
from gfcr.filter.compose import JUDGE_FAILURE
from gfcr.filter.indicators import cut_turns

# Signals of a verdict that is not the agent's: the simulated user failed (gfcr/Dialogue-v0), or the
# LLM judge raised, missed its deadline or answered nothing parsable (gfcr.filter.judge).
NOT_THE_AGENTS = ("simulator_failure", JUDGE_FAILURE)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one task with `c` solved out of `n` samples (n ≥ k)."""
    return 1.0 if n - c < k else 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k of one task with `c` solved out of `n` samples (n ≥ k)."""
    return comb(c, k) / comb(n, k)


def outcome(trajectory: Trajectory) -> str:
    """ "solved", "unsolved", "truncated", the failure reason of an infrastructure failure, or the
    signal (`NOT_THE_AGENTS`) of a verdict that failed."""
    if trajectory.status == "failed":
        return (trajectory.failure or "failed").split(":", 1)[0]
    for signal in NOT_THE_AGENTS:
        if trajectory.signals.get(signal):
            return signal
    if episode_solved(trajectory):
        return "solved"
    truncated = bool(trajectory.steps) and trajectory.steps[-1].truncated
    return "truncated" if truncated else "unsolved"


@dataclass
class Scores:
    """Scores of some episodes grouped by task; `pass_at`/`pass_hat` map k to the score."""

    episodes: int = 0
    tasks: int = 0
    pass_at: dict[int, float] = field(default_factory=dict)
    pass_hat: dict[int, float] = field(default_factory=dict)
    mean_reward: float = 0.0
    mean_tokens_in: float = 0.0
    mean_tokens_out: float = 0.0
    policy_s: float = 0.0  # seconds in the policy, summed over episodes (a total, not a mean)
    env_s: float = 0.0  # seconds in the env, summed over episodes
    wait_s: dict[str, float] = field(default_factory=dict)  # of env_s, queued per resource, summed
    outcomes: dict[str, int] = field(default_factory=dict)  # solved, unsolved, truncated, failure reasons
    turns: int = 0  # policy actions, summed over episodes
    cut_turns: int = 0  # of them, cut at the token cap (`--max-tokens`)

    @property
    def pass_at_1(self) -> float:
        return self.pass_at.get(1, 0.0)

    @property
    def wait_s_per_episode(self) -> float:
        """Seconds an episode queued for shared resources (all of them), on average."""
        return sum(self.wait_s.values()) / max(self.episodes, 1)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def describe_waits(wait_s: Mapping[str, float]) -> str:
    """Queueing by resource, longest first, as one line of text.

    >>> describe_waits({"sandbox": 0.25, "env_server": 3.0})
    'env_server 3.000 s, sandbox 0.250 s'
    """
    return ", ".join(f"{resource} {seconds:.3f} s" for resource, seconds in
                     sorted(wait_s.items(), key=lambda item: -item[1]))  # fmt: skip


def score(by_task: Mapping[Any, Sequence[Trajectory]], k: int = 1) -> Scores:
    """Scores of `by_task` (task key -> its samples) for k = 1 … `k` (tasks with fewer samples skip k)."""
    everything = [t for samples in by_task.values() for t in samples]
    episodes = max(len(everything), 1)
    scores = Scores(
        episodes=len(everything),
        tasks=len(by_task),
        mean_reward=sum(t.total_reward for t in everything) / episodes,
        mean_tokens_in=sum(t.cost.tokens_in for t in everything) / episodes,
        mean_tokens_out=sum(t.cost.tokens_out for t in everything) / episodes,
        policy_s=sum(t.cost.policy_s for t in everything),
        env_s=sum(t.cost.env_s for t in everything),
        wait_s=functools.reduce(add_waits, (t.cost.wait_s for t in everything), {}),
        outcomes=dict(Counter(outcome(t) for t in everything).most_common()),
        turns=sum(len(t.steps) for t in everything),
        cut_turns=sum(cut_turns(t) for t in everything),
    )
    judged = [[t for t in samples if outcome(t) not in NOT_THE_AGENTS] for samples in by_task.values()]
    counts = [(len(samples), sum(episode_solved(t) for t in samples)) for samples in judged]
    for j in range(1, k + 1):
        eligible = [(n, c) for n, c in counts if n >= j]
        if eligible:
            scores.pass_at[j] = sum(pass_at_k(n, c, j) for n, c in eligible) / len(eligible)
            scores.pass_hat[j] = sum(pass_hat_k(n, c, j) for n, c in eligible) / len(eligible)
    return scores
