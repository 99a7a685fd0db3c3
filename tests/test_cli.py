"""The `gfcr` command line, run as a user runs it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from gfcr.apps.cli import app
from gfcr.core import read_jsonl

runner = CliRunner()


def test_list_shows_envs_and_suites_with_task_counts():
    result = runner.invoke(app, ["list"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "gfcr/Math-v0" in result.output and "374" in result.output
    assert "smoke" in result.output and "math" in result.output


def test_run_writes_one_trajectory_per_episode(tmp_path):
    out = tmp_path / "t.jsonl"
    result = runner.invoke(
        app, ["run", "gfcr/Math-v0", "--agent", "scripted:oracle", "-n", "25", "--out", str(out)], terminal_width=200
    )
    assert result.exit_code == 0, result.output
    trajectories = list(read_jsonl(out))
    assert len(trajectories) == 25 and len({t.task_id for t in trajectories}) == 25
    assert all(t.total_reward == 1.0 and t.provenance.policy == "scripted:oracle" for t in trajectories)
    assert "1.000" in result.output


def test_run_passes_env_arguments(tmp_path):
    out = tmp_path / "t.jsonl"
    args = ["run", "gfcr/Math-v0", "-a", "scripted:random", "-n", "5", "-o", str(out), "-e", "dataset=champ",
            "-e", 'tools=["calculator"]', "-e", "max_turns=3"]  # fmt: skip
    result = runner.invoke(app, args, terminal_width=200)
    assert result.exit_code == 0, result.output
    assert all(t.task_id.startswith("champ/") and len(t.steps) <= 3 for t in read_jsonl(out))


def test_bad_input_gets_a_clear_error_and_exit_code_2():
    result = runner.invoke(app, ["run", "gfcr/Math-v0", "--agent", "scripted:orcale", "-n", "1"], terminal_width=200)
    assert result.exit_code == 2 and "did you mean 'oracle'" in result.output
    result = runner.invoke(app, ["run", "gfcr/Math-v0", "-a", "scripted:oracle", "-e", "dataset"], terminal_width=200)
    assert result.exit_code == 2 and "KEY=VALUE" in result.output
    result = runner.invoke(app, ["run", "gfcr/Math-v0", "-a", "scripted:oracle", "-e", "dataset=mmaht"])
    assert result.exit_code == 2 and "did you mean 'mmath'" in result.output


def test_the_installed_console_script_works(tmp_path):
    gfcr = Path(sys.executable).parent / "gfcr"
    result = subprocess.run([str(gfcr), "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "run" in result.stdout and "list" in result.stdout


def test_run_and_bench_offer_every_runner_setting_with_its_declared_help():
    from gfcr.agents import RunnerConfig
    from gfcr.core.config import settings

    for command in ("run", "bench"):
        result = runner.invoke(app, [command, "--help"], terminal_width=200)
        assert result.exit_code == 0, result.output
        text = " ".join(result.output.replace("│", " ").split())  # the help as one line, boxes removed
        for s in settings(RunnerConfig):
            assert f"--{s.name.replace('_', '-')}" in text and " ".join(s.help.split()) in text, s.name


def test_runner_options_reach_the_runner_and_bad_values_are_usage_errors(tmp_path):
    out = tmp_path / "t.jsonl"
    args = ["run", "gfcr/ToolUse-v0", "-a", "scripted:oracle", "-n", "3", "-o", str(out)]
    options = ["--max-turns", "1", "--concurrency", "2", "--stop", "</answer>", "--episode-tokens", "64"]
    result = runner.invoke(app, [*args, *options])  # --episode-tokens: --max-episode-tokens's older name
    assert result.exit_code == 0, result.output
    # the oracle looks the code up with a tool, then answers: cut after that first turn
    assert all(len(t.steps) == 1 and t.steps[-1].truncated for t in read_jsonl(out))
    result = runner.invoke(app, [*args, "--env-workers", "procss"], terminal_width=200)
    assert result.exit_code == 2 and "env_workers must be 'thread' or 'process'" in result.output
