"""The vectorized runner: continuous batching, limits, faults, JSONL output and resume, GFCR hooks."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from runner_envs import ScriptPolicy

from gfcr.agents import (
    Controller,
    Decision,
    EpisodeSpec,
    OraclePolicy,
    Runner,
    RunnerConfig,
    episodes_for_env,
)
from gfcr.agents.runner.specs import env_config
from gfcr.core import read_jsonl
from gfcr.errors import ConfigError, RunStoppedError

HERE = Path(__file__).parent


def echo_specs(turns: list[int], seed: int = 0) -> list[EpisodeSpec]:
    config = env_config("test/Echo-v0")
    return [EpisodeSpec(config, f"turns-{n}", seed=seed, sample=i) for i, n in enumerate(turns)]


def faulty(*kinds: str) -> list[EpisodeSpec]:
    config = env_config("test/Faulty-v0")
    return [EpisodeSpec(config, kind, sample=i) for i, kind in enumerate(kinds)]


def test_continuous_batching_refills_slots_without_lock_step():
    """Episodes of 1 to 8 turns share batches: a short episode's slot is refilled while long ones go on."""
    policy = ScriptPolicy(latency_s=0.01)
    specs = echo_specs([8, 1, 1, 1, 1, 1, 1, 1, 1, 1] * 2)
    result = Runner(policy, RunnerConfig(concurrency=4)).run(specs)
    assert result.episodes == 20 and result.solved == 20
    assert all(len(t.steps) == int(t.task_id.split("-")[1]) for t in result.trajectories)
    assert max(len(batch) for batch in policy.batches) == 4  # never more than the slots
    turns_in_batch = [{len(r.messages) for r in batch} for batch in policy.batches]
    assert any(len(turns) > 1 for turns in turns_in_batch), "every batch held episodes at the same turn"
    # lock-step groups of 4 ([8,1,1,1], [1,1,1,1], [1,1,8,1], ...) take 19 batches; 34 turns in 4 slots need 9
    assert len(policy.batches) <= 12


def test_a_slow_env_step_does_not_hold_back_the_other_episodes_batches():
    policy = ScriptPolicy()
    specs = faulty("slow") + echo_specs([3, 3, 3])
    result = Runner(policy, RunnerConfig(concurrency=4, batch_timeout_s=0.02)).run(specs)
    assert result.solved == 4
    # the three echo episodes finish their 3 turns while the slow step (0.5 s) is still running
    echo_turns = [b for b in policy.batches if all(r.env_id == "test/Echo-v0" for r in b)]
    assert len(echo_turns) >= 2


def test_limits_on_turns_tokens_and_wall_time():
    runner = Runner(ScriptPolicy(), RunnerConfig(max_turns=2))
    (trajectory,) = runner.run(echo_specs([5])).trajectories
    assert len(trajectory.steps) == 2 and trajectory.steps[-1].truncated and trajectory.status == "ok"

    runner = Runner(ScriptPolicy(), RunnerConfig(max_episode_tokens=7))  # 3 tokens a turn: ends after 3
    (trajectory,) = runner.run(echo_specs([8])).trajectories
    assert len(trajectory.steps) == 3 and trajectory.steps[-1].truncated and trajectory.cost.tokens_out == 9

    runner = Runner(ScriptPolicy(latency_s=0.4), RunnerConfig(episode_timeout_s=2.0))
    (trajectory,) = runner.run(echo_specs([8])).trajectories
    assert trajectory.status == "failed" and trajectory.failure.startswith("episode timeout")
    assert 1 <= len(trajectory.steps) < 8  # the steps done before the limit are kept


def test_env_failures_fail_only_their_episode_with_the_reason(tmp_path):
    config = RunnerConfig(concurrency=8, env_timeout_s=1.0)
    started = time.monotonic()
    specs = faulty("ok", "raise", "hang", "ok") + echo_specs([2])
    result = Runner(OraclePolicy(), config).run(specs, tmp_path / "t.jsonl")
    assert time.monotonic() - started < 30
    by_task = {t.task_id: t for t in result.trajectories}
    assert by_task["raise"].failure.startswith("env error: RuntimeError: the verifier broke")
    assert "Traceback" in by_task["raise"].failure and "respond" in by_task["raise"].failure
    assert by_task["hang"].failure.startswith("env timeout")
    assert by_task["ok"].status == "ok" and by_task["turns-2"].total_reward == 1.0
    statuses = sorted(t.status for t in read_jsonl(tmp_path / "t.jsonl"))
    assert statuses == ["failed", "failed", "ok", "ok", "ok"]


@pytest.mark.timeout(180)
def test_process_workers_survive_crashes_and_hangs():
    """A crash kills only its worker: that episode is retried, then recorded; the others finish."""
    config = RunnerConfig(concurrency=6, env_workers="process", num_env_workers=2, env_timeout_s=5.0)
    specs = faulty("ok", "crash", "hang", "raise", "ok") + echo_specs([3])
    result = Runner(OraclePolicy(), config).run(specs)
    by_task = {}
    for t in result.trajectories:
        by_task.setdefault(t.task_id, []).append(t)
    assert by_task["crash"][0].failure.startswith("env worker died: exit code 3")
    assert by_task["hang"][0].failure.startswith("env timeout")
    assert by_task["raise"][0].failure.startswith("env error: RuntimeError")
    assert [t.status for t in by_task["ok"]] == ["ok", "ok"] and by_task["turns-3"][0].total_reward == 1.0
    assert result.episodes == 6


def test_policy_failures_and_hangs_fail_their_episodes():
    policy = ScriptPolicy(fail_on="turns-2")
    result = Runner(policy, RunnerConfig(max_batch_size=1)).run(echo_specs([1, 2, 3]))
    by_task = {t.task_id: t for t in result.trajectories}
    assert by_task["turns-2"].failure == "policy error: RuntimeError: the policy cannot answer turns-2"
    assert by_task["turns-1"].status == by_task["turns-3"].status == "ok"

    result = Runner(ScriptPolicy(latency_s=2.0), RunnerConfig(policy_timeout_s=0.3)).run(echo_specs([1]))
    assert result.trajectories[0].failure.startswith("policy timeout")


@pytest.mark.timeout(60)
def test_a_policy_raising_stop_iteration_fails_its_episodes_instead_of_hanging_the_run():
    """Regression: asyncio cannot raise StopIteration into a Future, so a policy whose generate let
    one escape (an exhausted iterator) left its batch unanswered and the run waiting forever."""

    class Exhausted(ScriptPolicy):
        def generate(self, requests):
            return [next(iter(()))]

    result = Runner(Exhausted()).run(echo_specs([1, 2]))
    assert [t.status for t in result.trajectories] == ["failed", "failed"]
    assert all("raised StopIteration" in t.failure for t in result.trajectories)


def test_a_policy_that_keeps_failing_stops_the_run_early_and_resume_finishes_it(tmp_path):
    out = tmp_path / "run.jsonl"
    specs = echo_specs([1] * 20)
    config = RunnerConfig(concurrency=1, max_consecutive_failures=3)
    with pytest.raises(RunStoppedError) as stopped:
        Runner(ScriptPolicy(fail_on="turns-1"), config).run(specs, out)  # every batch fails
    assert "policy script:next failed 3 batches in a row (last: policy error: RuntimeError: " in str(stopped.value)
    assert [t.status for t in read_jsonl(out)] == ["failed", "failed"]  # the third stopped the run
    again = Runner(ScriptPolicy(), config).run(specs, out, resume=True)
    assert again.episodes == 20 and again.solved == 20 and len(list(read_jsonl(out))) == 20


def test_failures_of_the_episodes_own_never_stop_a_run():
    """Env errors here and truncations are the episodes' own, and a failed batch between good ones
    starts no count: however many, the run goes on."""
    config = RunnerConfig(concurrency=2, max_consecutive_failures=2, max_turns=1)
    result = Runner(OraclePolicy(), config).run(faulty(*["raise"] * 6) + echo_specs([3] * 4))
    assert result.failed == 6 and all(t.steps[-1].truncated for t in result.trajectories if t.status == "ok")
    policy = ScriptPolicy(fail_on="turns-2")  # every other batch fails
    result = Runner(policy, RunnerConfig(concurrency=1, max_consecutive_failures=2)).run(echo_specs([1, 2] * 4))
    assert result.failed == 4 and result.solved == 4


def test_mixed_envs_in_one_run_write_jsonl_and_resume_skips_written_episodes(tmp_path):
    out = tmp_path / "run.jsonl"
    specs = episodes_for_env("gfcr/Math-v0", 6, kwargs={"split": "AIME2024"}) + echo_specs([2, 3])
    first = Runner(OraclePolicy(), RunnerConfig(flush_every=1)).run(specs[:5], out)
    assert first.episodes == 5
    again = Runner(OraclePolicy()).run(specs, out, resume=True)
    assert again.resumed == 5 and again.episodes == 8 and again.solved == 8
    ids = [t.id for t in read_jsonl(out)]
    assert sorted(ids) == sorted(s.id for s in specs)
    assert {t.env_id for t in read_jsonl(out)} == {"gfcr/Math-v0", "test/Echo-v0"}


@pytest.mark.timeout(120)
def test_a_run_killed_with_sigkill_loses_only_what_was_in_flight(tmp_path):
    out = tmp_path / "run.jsonl"
    script = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "from runner_envs import ScriptPolicy\n"
        "from gfcr.agents import Runner, RunnerConfig\n"
        "from test_runner import echo_specs\n"
        "Runner(ScriptPolicy(latency_s=0.05), RunnerConfig(concurrency=4, flush_every=1))"
        ".run(echo_specs([2] * 60), sys.argv[2])\n"
    )
    process = subprocess.Popen([sys.executable, "-c", script, str(HERE), str(out)])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not out.exists() or out.read_text().count("\n") < 8):
        time.sleep(0.05)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    written = out.read_bytes()
    lines = written.split(b"\n")
    whole = [json.loads(line) for line in lines[:-1]]  # every complete line is a whole trajectory
    assert 8 <= len(whole) < 60
    result = Runner(ScriptPolicy(), RunnerConfig(concurrency=8)).run(echo_specs([2] * 60), out, resume=True)
    assert result.resumed == len(whole) and result.episodes == 60
    final = list(read_jsonl(out))
    assert len(final) == 60 and len({t.id for t in final}) == 60
    assert out.read_bytes().startswith(b"\n".join(lines[:-1]))  # what was written stays as it was


@pytest.mark.timeout(60)
def test_a_run_with_hung_calls_still_exits_and_later_calls_get_a_thread():
    """Hung env and policy calls are abandoned: later episodes still run and the process exits."""
    script = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "from runner_envs import ScriptPolicy\n"
        "from gfcr.agents import Runner, RunnerConfig\n"
        "from test_runner import echo_specs, faulty\n"
        "config = RunnerConfig(concurrency=4, num_env_workers=1, env_timeout_s=0.5)\n"
        "envs = Runner(ScriptPolicy(), config).run(faulty('hang', 'hang', 'ok', 'ok'))\n"
        "policy = Runner(ScriptPolicy(latency_s=3600), RunnerConfig(policy_timeout_s=0.3)).run(echo_specs([1]))\n"
        "print(sorted(t.status for t in envs.trajectories), policy.trajectories[0].failure[:14])\n"
    )
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", script, str(HERE)], capture_output=True, text=True, timeout=50)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['failed', 'failed', 'ok', 'ok'] policy timeout"
    assert time.monotonic() - started < 40


class StopAndBranch(Controller):
    """Keeps 2 of 3 scheduled episodes, branches turns-4 twice after its first step, stops it after 2."""

    def __init__(self) -> None:
        self.seen: list[int] = []

    def schedule(self, episodes):
        return episodes[:2]

    def after_step(self, trajectory):
        steps = len(trajectory.steps)
        if trajectory.task_id == "turns-4" and "." not in trajectory.id:
            return Decision(stop=steps == 2, branches=2 if steps == 1 else 0)
        return Decision()


class Recorder:
    def __init__(self) -> None:
        self.steps: list[tuple[str, dict]] = []
        self.stored: list[str] = []

    def on_step(self, trajectory, step):
        self.steps.append((trajectory.id, step.signals))

    def store(self, trajectory):
        self.stored.append(trajectory.id)


def test_gfcr_hooks_schedule_stop_branch_read_signals_and_store():
    recorder = Recorder()
    runner = Runner(ScriptPolicy(), controller=StopAndBranch(), filters=[recorder], replay=recorder)
    result = runner.run(echo_specs([4, 1, 1]))
    by_id = {t.id: t for t in result.trajectories}
    parent = next(t for t in result.trajectories if t.task_id == "turns-4" and "." not in t.id)
    branches = [t for t in result.trajectories if "." in t.id]
    assert len(result.trajectories) == 4 and len(branches) == 2
    assert len(parent.steps) == 2 and parent.steps[-1].truncated  # stopped by Control
    for branch in branches:  # the copies continue from the parent's first step to the end
        assert branch.steps[0] == parent.steps[0] and len(branch.steps) == 4 and branch.total_reward == 1.0
    assert sorted(recorder.stored) == sorted(by_id)
    # every step is read once: a branch's copied first step is not read again
    assert len(recorder.steps) == sum(len(t.steps) for t in result.trajectories) - 2
    assert all("format_ok" in signals for _, signals in recorder.steps)


def test_bad_config_is_an_error_naming_the_field():
    with pytest.raises(ConfigError, match="concurrency must be >= 1, got 0"):
        RunnerConfig(concurrency=0)
    with pytest.raises(ConfigError, match="env_workers must be 'thread' or 'process'"):
        RunnerConfig(env_workers="fiber")
