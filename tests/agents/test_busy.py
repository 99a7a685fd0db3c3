"""Busy time: `BusyClock` counts overlapping calls once; the runner reports its envs' and policy's."""

from __future__ import annotations

import time

import pytest
from runner_envs import ScriptPolicy

from gfcr.agents import EpisodeSpec, Runner, RunnerConfig
from gfcr.agents.runner.busy import BusyClock
from gfcr.agents.runner.specs import env_config


def test_overlapping_calls_count_once_and_idle_gaps_not_at_all():
    clock, marks = BusyClock(), {}

    def mark(name: str, action) -> None:  # the clock reads its time between `before` and `after`
        before = time.perf_counter()
        action()
        marks[name] = (before, time.perf_counter())

    mark("a begins", clock.enter)
    time.sleep(0.05)
    mark("b begins", clock.enter)  # b overlaps a
    time.sleep(0.05)
    mark("a ends", clock.exit)
    assert clock.in_flight == 1
    time.sleep(0.05)
    mark("b ends", clock.exit)
    time.sleep(0.1)  # idle
    mark("c begins", clock.enter)
    time.sleep(0.05)
    mark("c ends", clock.exit)
    spells = [("a begins", "b ends"), ("c begins", "c ends")]
    shortest = sum(marks[end][0] - marks[begin][1] for begin, end in spells)
    longest = sum(marks[end][1] - marks[begin][0] for begin, end in spells)
    assert clock.in_flight == 0
    assert shortest <= clock.busy_s <= longest  # 0.2 s: a and b's 0.05 s of overlap counted once


def test_busy_time_includes_the_spell_in_flight():
    clock = BusyClock()
    with clock:
        time.sleep(0.02)
        assert clock.busy_s >= 0.02
    with pytest.raises(RuntimeError, match="without a call in flight"):
        clock.exit()


def test_runner_reports_env_and_policy_busy_seconds():
    """Two episodes whose env steps take 0.5 s side by side, after one policy batch of 0.2 s: the
    envs were busy about 0.5 s (not 1 s), and the two spells do not overlap the batch."""
    policy = ScriptPolicy(latency_s=0.2)
    slow = [EpisodeSpec(env_config("test/Faulty-v0"), "slow", sample=i) for i in range(2)]
    result = Runner(policy, RunnerConfig(concurrency=2)).run(slow)
    assert result.solved == 2 and len(policy.batches) == 1
    assert result.env_busy_s >= 0.5 and result.policy_busy_s >= 0.2
    assert result.env_busy_s + result.policy_busy_s <= result.seconds
