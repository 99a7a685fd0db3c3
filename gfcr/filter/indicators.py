"""Rollout pathology indicators: what share of a batch of trajectories carries no signal, was cut
off, was rewarded without being correct, failed, or came from an older policy.

One definition of each indicator serves both places that measure it: the trainer logs them per
RL step (`diagnose/*` metric keys) and `gfcr diagnose` grades them over a whole run. `THRESHOLDS`
holds each indicator's (low, medium, high) severity boundaries; the trainer warns at "medium".

>>> from gfcr.core import Step
>>> ok = Trajectory("e", "a", "?", [Step("\\\\boxed{1}", "", 1.0, True, False, {"correct": True})])
>>> signals = {"format_ok": True, "correct": False}
>>> hacked = Trajectory("e", "a", "?", [Step("\\\\boxed{}", "", 1.0, True, False, signals)])
>>> correctness(ok), rewarded_incorrect(hacked), format_only(hacked)
(True, True, True)
>>> batch_indicators([ok, hacked])["diagnose/rewarded_incorrect_share"]  # of the rewarded episodes
0.5
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gfcr.core import Trajectory, solved
from gfcr.filter.signals import outcome_reward
from gfcr.generate.groups import group_by_task

# The signal that says whether the work is correct, by env family: math and tool use `correct`,
# SQL `match`, code `passed`, browser `success`, dialogue `db_match`. The first one present counts.
CORRECTNESS_SIGNALS = ("correct", "match", "passed", "success", "db_match")

# Severity boundaries (low, medium, high) of each indicator: a value at or above a boundary has
# that severity. Shares are of episodes (or groups, for zero variance); lags are policy versions.
THRESHOLDS: dict[str, tuple[float, float, float]] = {
    "zero_variance_share": (0.2, 0.4, 0.7),  # groups whose rewards are all equal
    "rewarded_incorrect_share": (0.02, 0.1, 0.25),  # of rewarded episodes: rejected by correctness
    "truncated_share": (0.05, 0.15, 0.3),  # episodes cut off by a turn or token limit
    "length_growth": (1.25, 1.5, 2.0),  # last/first response length while reward does not rise
    "flake_share": (0.01, 0.05, 0.15),  # re-judged episodes whose verdicts disagree
    "wasted_token_share": (0.2, 0.4, 0.7),  # tokens spent on groups with no reward spread
    "failed_share": (0.01, 0.05, 0.2),  # infrastructure failures
    "straggler_ratio": (5.0, 10.0, 30.0),  # slowest episode's seconds over the median's
    "idle_share": (0.25, 0.5, 0.75),  # of episodes' wall time: neither in the policy nor the env
    "replay_lag": (2.0, 4.0, 8.0),  # mean policy-version lag of replayed samples
    "entropy_drop": (0.5, 0.75, 0.9),  # 1 - late / early mean token entropy over training
    "prm_unscored_share": (0.2, 0.5, 0.9),  # steps (or lines) a PRM (a model) gave no score
    "shaping_only_share": (0.1, 0.25, 0.5),  # trained groups whose reward spread is length shaping alone
}


def correctness(trajectory: Trajectory) -> bool | None:
    """The episode's correctness signal (`CORRECTNESS_SIGNALS`), or None when it has none."""
    signals = trajectory.signals
    for key in CORRECTNESS_SIGNALS:
        if key in signals:
            return bool(signals[key])
    return None


def truncated(trajectory: Trajectory) -> bool:
    """Whether the episode was cut off by a limit (turns, tokens) rather than ending itself."""
    return trajectory.status == "ok" and bool(trajectory.steps) and trajectory.steps[-1].truncated


def cut_turns(trajectory: Trajectory) -> int:
    """How many of the episode's actions were cut at the policy's token cap (`finish_reason`
    "length"): a cut answer may end an episode without being truncated (a single-turn env judges
    whatever it got)."""
    return sum(step.finish_reason == "length" for step in trajectory.steps)


def rewarded_incorrect(trajectory: Trajectory) -> bool:
    """A reward above 0 on work the env's own correctness signal calls wrong: the reward an
    optimizer sees (`Trajectory.reward`), so a judge's or a majority vote's payment for a wrong
    answer counts, not only the env's.

    >>> from gfcr.core import Step
    >>> voted = Trajectory("e", "a", "?", [Step("7", "", 0.0, True, False, {"correct": False})])
    >>> voted.reward_terms["majority"] = 1.0  # TTRL: the group's most common answer, a wrong one
    >>> rewarded_incorrect(voted)
    True
    """
    return trajectory.status == "ok" and trajectory.reward > 0 and correctness(trajectory) is False


def format_only(trajectory: Trajectory) -> bool:
    """A reward earned by the format alone: well formed (`format_ok`) but not correct."""
    return rewarded_incorrect(trajectory) and trajectory.signals.get("format_ok") is True


def replayed(trajectory: Trajectory) -> bool:
    """Whether the sample was injected from a replay buffer (its `replayed` signal)."""
    return trajectory.signals.get("replayed") is True


def episode_length(trajectory: Trajectory) -> int:
    """The policy's own output length: sampled tokens (token data, else the cost's tokens out),
    else characters for policies that report no tokens."""
    if trajectory.tokens is not None and trajectory.tokens.loss_mask:
        return sum(trajectory.tokens.loss_mask)
    if trajectory.cost.tokens_out:
        return trajectory.cost.tokens_out
    return sum(len(step.action) for step in trajectory.steps)


def zero_variance(rewards: Sequence[float]) -> bool:
    """Whether a group's rewards are all equal: its advantages are all 0, no signal."""
    return float(np.ptp(rewards)) == 0.0 if len(rewards) else True


def shaping_only(group: Sequence[Trajectory]) -> bool:
    """Whether a group's reward spread is all length shaping: its rewards differ while its outcomes
    (`outcome_reward`: the reward without `SHAPING_TERMS`) do not, e.g. every answer wrong and
    ShorterBetter's length term telling them apart. GRPO's std normalisation scales that spread up
    to whole-unit advantages, so such a group trains length, not the task.

    >>> from gfcr.core import Step
    >>> from gfcr.filter.signals import LENGTH_TERM
    >>> def wrong(length_term):
    ...     t = Trajectory("e", "t", "?", [Step("x", "", 0.0, True, False)])
    ...     t.reward_terms = {"verifier": 0.0, LENGTH_TERM: length_term}
    ...     return t
    >>> shaping_only([wrong(-0.002), wrong(-0.005)]), shaping_only([wrong(-0.002), wrong(-0.002)])
    (True, False)
    """
    return not zero_variance([t.reward for t in group]) and zero_variance([outcome_reward(t) for t in group])


def lag(trajectory: Trajectory, current_version: int) -> int | None:
    """How many policy versions behind `current_version` the trajectory's policy was (None when
    its version is not a number)."""
    version = trajectory.provenance.policy_version
    return current_version - int(version) if version.lstrip("-").isdigit() else None


def batch_indicators(trajectories: Sequence[Trajectory]) -> dict[str, float]:
    """The indicators of one batch (e.g. one RL step's generated episodes), as `diagnose/*` metrics.

    Groups are the batch's episodes sharing a task id (infrastructure failures left out); a group
    of one sample has no spread to measure and is not counted.
    """
    ok = [t for t in trajectories if t.status == "ok"]
    rewarded = [t for t in ok if t.reward > 0]  # paid: the judge stage's reward where one ran
    n = max(len(ok), 1)
    groups = [g for g in group_by_task(trajectories).values() if len(g) >= 2]
    flat = [g for g in groups if zero_variance([t.total_reward for t in g])]
    tokens = sum(episode_length(t) for t in ok)
    wasted = sum(episode_length(t) for g in flat for t in g)
    metrics = {  # the zero-variance share itself is the trainer's `rollout/zero_variance_share`
        "diagnose/wasted_token_share": wasted / tokens if tokens else 0.0,
        "diagnose/rewarded_incorrect_share": sum(map(rewarded_incorrect, rewarded)) / max(len(rewarded), 1),
        "diagnose/truncated_share": sum(truncated(t) for t in ok) / n,
        "diagnose/failed_share": sum(t.status == "failed" for t in trajectories) / max(len(trajectories), 1),
        "diagnose/solved_share": sum(solved(t.total_reward) for t in ok) / n,
    }
    return metrics


def replay_indicators(trajectories: Sequence[Trajectory], *, current_version: int) -> dict[str, float]:
    """The off-policy share of a batch trained on, and its replayed samples' mean version lag.

    >>> from gfcr.core import Provenance, Step
    >>> step = Step("x", "", 1.0, True, False, {"replayed": True})
    >>> old = Trajectory("e", "a", "?", [step], provenance=Provenance("p", "3"))
    >>> replay_indicators([old, Trajectory("e", "a", "?")], current_version=7)
    {'diagnose/replayed_share': 0.5, 'diagnose/replay_lag': 4.0}
    """
    used = [t for t in trajectories if t.status == "ok"]
    lags = [v for t in used if replayed(t) and (v := lag(t, current_version)) is not None]
    return {
        "diagnose/replayed_share": sum(map(replayed, used)) / max(len(used), 1),
        "diagnose/replay_lag": float(np.mean(lags)) if lags else 0.0,
    }


def severity(indicator: str, value: float) -> str:
    """ "none", "low", "medium" or "high": where `value` falls among `THRESHOLDS[indicator]`.

    >>> severity("zero_variance_share", 0.1), severity("zero_variance_share", 0.45)
    ('none', 'medium')
    """
    low, medium, high = THRESHOLDS[indicator]
    return "high" if value >= high else "medium" if value >= medium else "low" if value >= low else "none"
