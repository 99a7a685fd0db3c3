"""The trainer logs, per step, how long its episodes queued for each shared resource."""

from __future__ import annotations

from gfcr.core import Action
from gfcr.core.admission import RESOURCES, Admission
from gfcr.envs.base import Outcome
from gfcr.envs.tooluse import ToolUseEnv
from gfcr.registry import register_env
from gfcr.trainers import Trainer

GRADER = Admission("sandbox", max_concurrency=1)  # one grader for every env of the process


class QueuedGrading(ToolUseEnv):
    """ToolUse prompts graded one at a time at a shared gate, as a sandbox pool of one would."""

    def respond(self, action: Action) -> Outcome:
        with GRADER.admit():
            reward = float(len(action.text) % 2)
        return Outcome("ok", reward=reward, terminated=True, signals={"format_ok": True})


def test_each_step_logs_the_seconds_its_episodes_queued_by_resource(make_config):
    register_env("gfcr/TestQueuedGrading-v0", QueuedGrading)
    history = Trainer(make_config(env={"id": "gfcr/TestQueuedGrading-v0"}, steps=1)).train()
    metrics = history[0]
    assert {f"rollout/wait_s/{resource}" for resource in RESOURCES} <= set(metrics)
    assert metrics["rollout/wait_s/sandbox"] > 0.0  # every episode passed the gate (an instant, alone)
    assert metrics["rollout/wait_s/env_server"] == 0.0  # no env server, no wait for one
