"""A sandbox pool's admission: runs beyond `pool_size` queue, their wait is recorded as "sandbox"
(and reaches an episode's cost through the code env), and a run queued past `queue_timeout_s`
fails as "sandbox queue timeout" — the sandbox's failure, not the agent's."""

from __future__ import annotations

import threading
import time

import gymnasium as gym
import pytest

from gfcr.agents import OraclePolicy, rollout
from gfcr.core.admission import collect_waits
from gfcr.errors import ConfigError, QueueTimeoutError, UnknownNameError

SLOW = "import time; time.sleep({})"


def start_slow_run(sandbox, seconds: float) -> threading.Thread:
    """A run that holds the pool's one slot for `seconds`; returns once it holds it."""
    thread = threading.Thread(target=sandbox.run, args=(SLOW.format(seconds),), daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while sandbox.admission.running < 1:
        assert time.monotonic() < deadline, "the first run was never admitted"
        time.sleep(0.005)
    return thread


def test_a_pool_of_one_runs_one_program_at_a_time_and_the_second_run_says_how_long_it_queued(new_sandbox):
    with new_sandbox("local", pool_size=1) as sandbox:
        first = start_slow_run(sandbox, 1.5)
        with collect_waits() as waits:
            second = sandbox.run("print('second')")
        first.join(30)
    assert second.stdout == "second\n"
    assert waits["sandbox"] >= 0.5  # most of the first run's 1.5 s: it could not start before it ended


def test_a_run_queued_past_the_deadline_is_a_sandbox_queue_timeout(new_sandbox):
    with new_sandbox("local", pool_size=1, queue_timeout_s=0.2) as sandbox:
        first = start_slow_run(sandbox, 2)
        with pytest.raises(QueueTimeoutError) as caught:
            sandbox.run("print('never')")
        first.join(30)
        assert sandbox.run("print('after')").stdout == "after\n"  # the queue drained: runs go on
    assert caught.value.reason == "sandbox queue timeout"


def test_code_episodes_sharing_a_busy_pool_record_their_sandbox_wait_in_their_cost(new_sandbox):
    with new_sandbox("local", pool_size=1) as sandbox:
        env = gym.make("gfcr/Code-v0", sandbox=sandbox)
        env.reset(options={"task_id": "humaneval/0"})  # its tasks loaded before the pool gets busy
        first = start_slow_run(sandbox, 1.5)  # busy when the episode's grading starts
        trajectory = rollout(env, OraclePolicy(), env_id="gfcr/Code-v0", task_id="humaneval/0")
        first.join(30)
    assert trajectory.total_reward == 1.0  # queueing costs time, never the verdict
    assert trajectory.cost.wait_s["sandbox"] >= 0.3


@pytest.mark.parametrize("backend", ["local", "docker"])
def test_a_run_that_cannot_start_is_answered_without_waiting_for_a_slot(new_sandbox, backend):
    """`SandboxBase.run` checks language, paths and text before admission, for every backend:
    with the one slot held, a bad run is refused at once, not after the slow run ends."""
    with new_sandbox(backend, pool_size=1, queue_timeout_s=5) as sandbox:
        first = start_slow_run(sandbox, 4)
        started = time.monotonic()
        assert sandbox.run("print('\ud800')").status == "error"  # a lone surrogate: not text
        with pytest.raises(ConfigError):
            sandbox.run("print(1)", files={"../escape": ""})
        with pytest.raises(UnknownNameError):
            sandbox.run("print(1)", language="rust")
        waited = time.monotonic() - started
        first.join(30)
    assert waited < 2, f"the refusals waited {waited:.1f} s for the busy slot"
