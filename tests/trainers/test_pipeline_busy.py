"""The generate stage's busy time per step: the wall seconds with a policy batch, and with an env
call, in flight (`generate/policy_busy_s`, `generate/env_busy_s`), synchronous and asynchronous."""

from __future__ import annotations

import pytest

from gfcr.trainers import Trainer


@pytest.mark.parametrize("max_staleness", [0, 1])
def test_each_step_reports_its_own_policy_and_env_busy_seconds(make_config, max_staleness):
    config = make_config(steps=2, **{"async": {"max_staleness": max_staleness}})
    with Trainer(config, resume=False) as trainer:
        history = trainer.train()
    assert len(history) == 2
    for metrics in history:  # each step's own, not a running sum: within its rollouts' wall time
        for busy in ("generate/policy_busy_s", "generate/env_busy_s"):
            assert 0 < metrics[busy] <= metrics["perf/rollout_s"]
