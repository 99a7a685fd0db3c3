"""Common mistakes get one error that names the bad value and the fix (issue 18's list)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import gymnasium as gym
import pytest
from typer.testing import CliRunner

import gfcr
from gfcr.agents import Runner, episodes_for_env, make_policy
from gfcr.agents.runner.rollout import rollout
from gfcr.apps.cli import app
from gfcr.core import Completion
from gfcr.errors import ConfigError, MissingExtraError, PolicyError

runner = CliRunner()


def test_a_misspelt_math_keyword_is_named_with_the_nearest_valid_one():
    with pytest.raises(gfcr.UnknownNameError, match="'datset'; did you mean 'dataset'"):
        gym.make("gfcr/Math-v0", datset="champ")
    with pytest.raises(gfcr.UnknownNameError, match="'sise'; did you mean 'size'.*takes generator_config"):
        gym.make("gfcr/Math-v0", dataset="reasoning_gym", sise=3)


def test_the_cli_shows_the_same_message():
    result = runner.invoke(app, ["run", "gfcr/Math-v0", "-a", "scripted:oracle", "-e", "datset=champ"])
    assert result.exit_code == 2 and "did you mean 'dataset'" in result.output


def test_tools_may_be_one_name_and_a_bad_one_says_a_list_works():
    env = gym.make("gfcr/Math-v0", dataset="champ", tools="calculator")
    assert list(env.unwrapped.tools) == ["calculator"]
    with pytest.raises(gfcr.UnknownNameError, match=r"unknown math tool 'calc'.*tools=\[\"calculator\"\]"):
        gym.make("gfcr/Math-v0", tools=["calc"])


@pytest.mark.parametrize("spec", ["hf:runs/nope", "hf:/no/such/model", "hf:Org/not-cached"])
def test_a_model_folder_that_does_not_exist_is_said_so_at_once(spec):
    started = time.perf_counter()
    with pytest.raises(PolicyError, match="does not exist.*gfcr tiny-model"):
        make_policy(spec)
    assert time.perf_counter() - started < 2  # no hub lookup


def test_a_missing_transformers_names_the_hf_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "transformers", None)  # as if not installed
    with pytest.raises(
        MissingExtraError, match=r"hf: backend needs `transformers`.*pip install -e '\.\[hf\]'"
    ):
        make_policy(f"hf:{tmp_path}")


def test_a_missing_fastapi_names_the_serve_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "fastapi", None)
    monkeypatch.delitem(sys.modules, "gfcr.apps.serve", raising=False)  # import it again, without fastapi
    result = runner.invoke(app, ["serve", str(tmp_path)], terminal_width=200)
    assert result.exit_code == 2, result.output
    assert "gfcr serve needs `fastapi`" in result.output and "pip install -e '.[serve]'" in result.output


class NamelessPolicy:
    def generate(self, requests):
        return [Completion("\\boxed{1}") for _ in requests]


def test_a_policy_without_name_and_version_fails_once_saying_what_the_protocol_needs():
    with pytest.raises(
        ConfigError, match=r"lacks name, version: a Policy needs `name: str` and `version: str`"
    ):
        Runner(NamelessPolicy()).run(episodes_for_env("gfcr/Math-v0", 5))
    with pytest.raises(ConfigError, match="lacks name, version"):
        rollout(gym.make("gfcr/Math-v0"), NamelessPolicy(), env_id="gfcr/Math-v0")


def test_process_workers_without_a_main_guard_say_how_to_fix_it(tmp_path):
    script = tmp_path / "no_guard.py"
    script.write_text(
        textwrap.dedent("""
        from gfcr.agents import Runner, RunnerConfig, episodes_for_env, make_policy
        config = RunnerConfig(env_workers="process", num_env_workers=1)
        Runner(make_policy("scripted:oracle"), config).run(episodes_for_env("gfcr/Math-v0", 2))
        """)
    )
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=180)
    assert result.returncode != 0
    last_line = result.stderr.strip().splitlines()[-1]
    assert last_line.startswith("gfcr.errors.ConfigError") and 'if __name__ == "__main__":' in last_line
    assert "Task exception was never retrieved" not in result.stderr


def test_a_config_error_keeps_its_table_name_in_the_cli(tmp_path):
    """Rich read `[top level]` as markup and printed "error: : unknown key"."""
    result = runner.invoke(
        app, ["train", "examples/tooluse_tiny_cpu.toml", "--set", "nope=3"], terminal_width=200
    )
    assert result.exit_code == 2
    assert "error: [top level]: unknown key 'nope'" in result.output


def test_a_plain_function_is_a_process_scorer_and_a_failing_filter_fails_only_its_episode():
    from gfcr.filter import ProcessScoreHook

    def length_score(trajectory):
        return 1.0 / (1 + len(trajectory.steps[-1].action))

    result = Runner(make_policy("scripted:oracle"), filters=[ProcessScoreHook(length_score)]).run(
        episodes_for_env("gfcr/Math-v0", 3)
    )
    assert result.failed == 0 and all("process_score" in t.steps[-1].signals for t in result.trajectories)

    def fails_on_one_task(trajectory):
        if trajectory.task_id == result.trajectories[0].task_id:
            raise ValueError("scorer bug")
        return 0.5

    again = Runner(make_policy("scripted:oracle"), filters=[ProcessScoreHook(fails_on_one_task)]).run(
        episodes_for_env("gfcr/Math-v0", 3)
    )
    failed = [t for t in again.trajectories if t.status == "failed"]
    assert len(failed) == 1 and failed[0].failure.startswith(
        "filter error: ProcessScoreHook: ValueError: scorer bug"
    )
    with pytest.raises(ConfigError, match="needs a scorer"):
        ProcessScoreHook(42)


def test_unknown_name_errors_cross_processes_intact():
    """A worker's error (an env given a bad keyword under Ray or in a process) is read back whole."""
    import pickle

    error = pickle.loads(pickle.dumps(gfcr.UnknownNameError("dataset", "mmth", ["mmath"], hint="see docs")))
    assert str(error) == "unknown dataset 'mmth'; did you mean 'mmath'? Known: mmath. see docs"


def test_a_missing_psycopg_names_the_postgres_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "psycopg", None)
    env = gym.make("gfcr/SQL-v0", engine="postgresql://nobody@127.0.0.1:1/none")
    with pytest.raises(MissingExtraError, match=r"PostgreSQL engine needs `psycopg`.*'\.\[postgres\]'"):
        env.reset(seed=0)
