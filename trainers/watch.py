"""The trainer's watch over its own metrics: warnings when a pathology indicator crosses its
`[diagnose]` threshold, naming the lever that treats it (`gfcr diagnose OUT_DIR` has the evidence)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from gfcr.trainers.config import DiagnoseConfig

logger = logging.getLogger(__name__)

# The indicators the trainer watches: metric key -> (its [diagnose] threshold, the lever to name).
WATCHED = {
    "rollout/zero_variance_share": (
        "zero_variance_share",
        "groups trained on with no reward spread; set [control] dynamic_sampling = true, "
        "raise [rollout] group_size, or pick prompts the model solves sometimes",
    ),
    "diagnose/wasted_token_share": (
        "wasted_token_share",
        "tokens spent on groups with no reward spread; set [control] early_stopping = true or "
        "selector = 'greso'",
    ),
    "diagnose/rewarded_incorrect_share": (
        "rewarded_incorrect_share",
        "rewarded episodes that the env's correctness signal rejects (reward hacking?); reward correctness",
    ),
    "diagnose/truncated_share": (
        "truncated_share",
        "episodes cut off by a limit; enable [overlong_penalty] or change [rollout] max_tokens / max_turns",
    ),
    "diagnose/failed_share": (
        "failed_share",
        "episodes failed by infrastructure, those a judge gave no score included (judge/failures: a "
        "judge model too weak to write its verdict line fails every episode; point [judge.llm] model "
        "at a stronger one); see the failure reasons",
    ),
    "diagnose/replay_lag": ("replay_lag", "policy versions behind, on average; lower [replay] max_staleness"),
    "diagnose/shaping_only_share": (
        "shaping_only_share",
        "groups trained on whose reward spread is length shaping alone (every answer equally right or "
        "wrong): GRPO's std normalisation scales that spread up to whole advantages, so they train "
        "length, not the task; set [control] dynamic_sampling = true (it drops them), [loss] "
        "estimator = 'dr_grpo' (no std normalisation), or lower the length term's weight",
    ),
    "diagnose/prm_unscored_share": (
        "prm_unscored_share",
        "steps (or lines) the PRM gave no score, so they carry no process advantage: a PRM that writes "
        "no readable verdict line costs its calls and changes nothing; point [judge.process] scorer at "
        "a stronger model, raise its max_tokens, or drop [judge.process]",
    ),
}


class PathologyWatch:
    """Warns (logging.warning) when a watched indicator crosses its `[diagnose]` threshold, once
    per pathology until it falls back below it; `gfcr diagnose OUT_DIR` reads the same metrics.

    >>> watch = PathologyWatch(DiagnoseConfig())
    >>> watch.check(1, {"diagnose/failed_share": 0.5}), watch.check(2, {"diagnose/failed_share": 0.5})
    (['diagnose/failed_share'], [])
    """

    def __init__(self, config: DiagnoseConfig) -> None:
        self.config = config
        self.raised: set[str] = set()

    def check(self, step: int, metrics: Mapping[str, Any]) -> list[str]:
        """The keys newly over their threshold at `step` (each warned about once)."""
        new = []
        for key, (name, lever) in WATCHED.items():
            value, threshold = metrics.get(key), getattr(self.config, name)
            if not isinstance(value, int | float) or value < threshold:
                self.raised.discard(key)
            elif key not in self.raised:
                self.raised.add(key)
                new.append(key)
                if self.config.warn:
                    logger.warning(
                        "step %d: %s = %.3g >= [diagnose] %s = %g: %s (gfcr diagnose OUT_DIR for "
                        "the evidence)",
                        step, key, value, name, threshold, lever,
                    )  # fmt: skip
        return new
