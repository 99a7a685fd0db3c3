"""The `gfcr` command line, run as a user runs it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest
from typer.testing import CliRunner

import gfcr
from gfcr.apps.cli import app
from gfcr.core import read_jsonl
from gfcr.trainers.config import EnvSection

runner = CliRunner()
DOCS = Path(__file__).parents[1] / "docs"


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


PLUGIN_ID = "gfcr/ReverseImport-v0"


@pytest.fixture
def plugin_module(tmp_path, monkeypatch):
    """The docs' own env (docs/add-your-own-environment.md) as ./reverse_import_env.py in the current
    folder, under an id of its own; `forget()` unregisters it and drops the module, as in a new process."""
    code = re.search(r"```python\n(.*?)```", (DOCS / "add-your-own-environment.md").read_text(), re.DOTALL)
    module = code.group(1).split("\nenv = gym.make")[0].replace("gfcr/Reverse-v0", PLUGIN_ID)
    (tmp_path / "reverse_import_env.py").write_text(module)
    monkeypatch.chdir(tmp_path)

    def forget() -> None:
        sys.modules.pop("reverse_import_env", None)
        gym.registry.pop(PLUGIN_ID, None)
        gfcr.registry._registered.discard(PLUGIN_ID)

    forget()
    yield forget
    forget()


def test_import_lets_run_bench_serve_env_suites_and_trainer_configs_use_your_own_env(plugin_module, serve_env, tmp_path):
    oracle = ["-a", "scripted:oracle"]
    result = runner.invoke(app, ["run", PLUGIN_ID, *oracle, "-n", "3"], terminal_width=200)
    assert result.exit_code == 2 and "unknown" in result.output  # what the docs' command did before --import
    # Env workers in other processes get the env too: its configuration carries its entry point.
    result = runner.invoke(app, ["run", PLUGIN_ID, *oracle, "-n", "3", "--import", "reverse_import_env",
                                 "--env-workers", "process", "--out", "run.jsonl"], terminal_width=200)  # fmt: skip
    assert result.exit_code == 0, result.output
    assert [t.total_reward for t in read_jsonl(tmp_path / "run.jsonl")] == [1.0, 1.0, 1.0]
    plugin_module()
    suite = f'imports = ["reverse_import_env"]\n[[entries]]\nenv_id = "{PLUGIN_ID}"\nnum_tasks = 3\n'
    (tmp_path / "mine.toml").write_text(suite)
    result = runner.invoke(app, ["bench", "mine.toml", *oracle, "--report", "report"], terminal_width=200)
    assert result.exit_code == 0, result.output
    results = json.loads((tmp_path / "report" / "results.json").read_text())
    assert results["agents"]["scripted:oracle"]["overall"]["pass_at"] == {"1": 1.0}
    plugin_module()
    assert EnvSection(id=PLUGIN_ID, imports=["reverse_import_env"]) and PLUGIN_ID in gym.registry  # [env] imports
    with serve_env(PLUGIN_ID, "--import", "reverse_import_env") as (url, _):  # `gfcr serve-env`, its own process
        env = gym.make("gfcr/Remote-v0", url=url)
        _, info = env.reset(options={"task_id": "reverse/rollout"})
        assert info["task"].id == "reverse/rollout" and env.step("tuollor")[1] == 1.0
        env.close()
