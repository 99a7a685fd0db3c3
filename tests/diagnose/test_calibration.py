"""Verifier calibration against gold (`--calibrate`) and env/policy idle time, on real runs of the
runner: a calibrated verifier comes out calibrated, a miscalibrated one is caught with its tasks
named, and idle time is measured where trajectories record their wall time."""

from __future__ import annotations

import json
import time

import gymnasium as gym
import pytest
from typer.testing import CliRunner

from gfcr.agents import OraclePolicy, RandomPolicy, Runner, RunnerConfig, episodes_for_env
from gfcr.apps.cli import app
from gfcr.apps.diagnose import diagnose, load_run
from gfcr.core import Verdict, write_jsonl
from gfcr.envs.math.env import MathEnv
from gfcr.envs.math.verifier import MathVerifier

SPLIT = {"split": "AIME2024"}


class RejectsEverything(MathVerifier):
    def verify(self, task, trajectory) -> Verdict:
        return Verdict(0.0, False, {})


class AcceptsEverything(MathVerifier):
    def verify(self, task, trajectory) -> Verdict:
        return Verdict(1.0, True, {})


class GoldBlindMath(MathEnv):
    """Math whose verifier (the one re-judging and calibration use) rejects every answer."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.verifier = RejectsEverything(self.verifier.answer_format)


class GullibleMath(MathEnv):
    """Math whose verifier accepts every answer, junk included."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.verifier = AcceptsEverything(self.verifier.answer_format)


@pytest.fixture(scope="module")
def miscalibrated_envs():
    ids = {"test/GoldBlindMath-v0": GoldBlindMath, "test/GullibleMath-v0": GullibleMath}
    for env_id, cls in ids.items():  # with Gymnasium alone: outside `gfcr.list_envs()`
        gym.register(env_id, entry_point=cls)
    yield list(ids)
    for env_id in ids:
        gym.registry.pop(env_id, None)


def run(tmp_path, env_id: str, policy, n: int = 3, config: RunnerConfig | None = None) -> str:
    """A real runner run of `policy` on `n` tasks of `env_id`, written as `gfcr run` writes it."""
    result = Runner(policy, config or RunnerConfig(concurrency=4)).run(
        episodes_for_env(env_id, n, kwargs=SPLIT)
    )
    path = tmp_path / f"{env_id.split('/')[1]}.jsonl"
    write_jsonl(result.trajectories, path)
    return str(path)


def noisy(path: str, tasks: int = 3):
    found = diagnose(load_run([path], SPLIT), calibrate_tasks=tasks)
    return found.pathology("noisy_signals"), found.criteria["reliability"]


def test_a_real_run_comes_out_calibrated(tmp_path):
    signal, reliability = noisy(run(tmp_path, "gfcr/Math-v0", RandomPolicy(), n=4), tasks=3)
    calibration = signal.evidence["gold_calibration"]
    assert calibration["by_env"]["gfcr/Math-v0"]["tasks_in_input"] == 4  # capped at 3 played
    assert (calibration["gold_judged"], calibration["junk_judged"]) == (3, 3)
    assert (calibration["gold_acceptance"], calibration["junk_rejection"]) == (1.0, 1.0)
    assert (reliability["gold_acceptance"], reliability["junk_rejection"]) == (1.0, 1.0)
    assert signal.severity == "none" and signal.levers == []


def test_a_verifier_that_rejects_gold_is_caught_with_the_tasks_named(tmp_path, miscalibrated_envs):
    path = run(tmp_path, "test/GoldBlindMath-v0", OraclePolicy())
    tasks = sorted({json.loads(line)["task_id"] for line in open(path)})
    signal, reliability = noisy(path)
    found = signal.evidence["gold_calibration"]["by_env"]["test/GoldBlindMath-v0"]
    assert found["gold_acceptance"] == 0.0 and sorted(found["gold_rejected_tasks"]) == tasks
    assert reliability["gold_acceptance"] == 0.0
    assert signal.severity == "high"
    assert "rejects gold on 3/3 tasks of test/GoldBlindMath-v0" in signal.levers[0]
    assert "gfcr check test/GoldBlindMath-v0" in signal.levers[0]


def test_a_verifier_that_accepts_junk_is_caught_with_the_tasks_named(tmp_path, miscalibrated_envs):
    path = run(tmp_path, "test/GullibleMath-v0", RandomPolicy())
    signal, reliability = noisy(path)
    found = signal.evidence["gold_calibration"]["by_env"]["test/GullibleMath-v0"]
    assert found["gold_acceptance"] == 1.0  # gold passes: only the false positives are wrong
    assert found["junk_rejection"] == 0.0 and len(found["junk_accepted_tasks"]) == 3
    assert reliability["junk_rejection"] == 0.0 and signal.severity == "high"
    assert any("accepts junk (scripted:random) on 3/3 tasks" in lever for lever in signal.levers)


def test_an_env_that_cannot_be_made_is_skipped_and_counted(tmp_path, episode, write):
    path = write([episode("t0", 0.0, env="gfcr/NoSuch-v0")])
    signal, reliability = noisy(path)
    assert signal.severity == "not_measurable"
    assert "gfcr/NoSuch-v0: no offline verifier" in signal.evidence["not_measurable"]
    assert reliability["gold_acceptance"].startswith(
        "not measurable from this input: nothing could be played"
    )


class SlowOracle(OraclePolicy):
    """The oracle, 50 ms a turn: with one slot, episodes reset ahead wait for it."""

    def generate(self, requests):
        time.sleep(0.05)
        return super().generate(requests)


def test_idle_time_is_measured_on_a_real_run(tmp_path):
    config = RunnerConfig(concurrency=1, prefetch=4)
    path = run(tmp_path, "gfcr/Math-v0", SlowOracle(), n=10, config=config)
    trajectories = load_run([path]).trajectories
    assert all(t.cost.wall_s >= t.cost.policy_s + t.cost.env_s for t in trajectories)
    wasted = diagnose(load_run([path])).pathology("wasted_compute")
    idle = wasted.evidence["idle_time"]
    assert idle["episodes_timed"] == 10
    assert idle["idle_seconds"] >= 1.0 and idle["idle_share"] >= 0.5  # 30 turns of 50 ms waited in all
    assert idle["worst"][0]["idle_s"] >= 0.15
    assert wasted.severity in ("medium", "high")
    assert any("raise `[rollout] concurrency`" in lever for lever in wasted.levers)


def test_a_fast_run_has_no_idle_alarm_and_old_jsonl_without_wall_time_still_loads(tmp_path):
    path = run(tmp_path, "gfcr/Math-v0", OraclePolicy(), n=4)
    fast = diagnose(load_run([path])).pathology("wasted_compute")
    assert fast.evidence["idle_time"]["episodes_timed"] == 4 and fast.severity == "none"
    old = tmp_path / "old.jsonl"
    lines = [json.loads(line) for line in open(path)]
    for line in lines:  # as gfcr wrote trajectories before the wall time existed
        del line["cost"]["wall_s"]
    old.write_text("".join(json.dumps(line) + "\n" for line in lines))
    data = load_run([old])
    assert len(data.trajectories) == 4 and all(t.cost.wall_s is None for t in data.trajectories)
    idle = diagnose(data).pathology("wasted_compute").evidence["idle_time"]
    assert idle.startswith("not measurable from this input")


def test_cli_calibrate_prints_the_calibration_in_json(tmp_path):
    path = run(tmp_path, "gfcr/Math-v0", RandomPolicy(), n=2)
    args = ["diagnose", path, "--json", "--calibrate", "--calibrate-tasks", "1", "-e", "split=AIME2024"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    noisy_found = next(p for p in report["pathologies"] if p["name"] == "noisy_signals")
    assert noisy_found["evidence"]["gold_calibration"]["gold_judged"] == 1
    assert report["criteria"]["reliability"]["junk_rejection"] == 1.0
