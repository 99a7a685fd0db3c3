"""The env-author kit: `gfcr check` on a bundled env, on broken envs, and on the `gfcr new-env` skeleton."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import gymnasium as gym
import pytest
from typer.testing import CliRunner

from gfcr.apps.cli import app
from gfcr.core import Action, Task
from gfcr.envs.base import Outcome, TextEnv
from gfcr.envs.tasks import TaskSource
from gfcr.testing import check_contract

runner = CliRunner()
TASKS = [Task(f"echo/{i}", f"Say {i}.", str(i)) for i in range(3)]


class EchoEnv(TextEnv):
    """A correct env: say the number; broken variants below each break one rule."""

    signal_defaults = {"format_ok": False, "correct": False}

    def __init__(self, render_mode: str | None = None) -> None:
        super().__init__(TaskSource.from_tasks("echo", TASKS), render_mode=render_mode)

    def respond(self, action: Action) -> Outcome:
        correct = self.task is not None and action.text.strip() == self.task.gold
        return Outcome("ok", float(correct), True, signals={"format_ok": True, "correct": correct})

    @classmethod
    def oracle(cls, task, messages):
        return task.gold


class RaisesOnBrokenToolCallEnv(EchoEnv):
    def respond(self, action: Action) -> Outcome:
        if "{" in action.text:
            raise ValueError("cannot read braces")
        return super().respond(action)


class UndeclaredSignalEnv(EchoEnv):
    def respond(self, action: Action) -> Outcome:
        outcome = super().respond(action)
        return Outcome(outcome.observation, outcome.reward, True, signals={**outcome.signals, "length": 3.0})


class UnpicklableEnv(EchoEnv):
    def __init__(self, render_mode: str | None = None) -> None:
        super().__init__(render_mode)
        self.lock = threading.Lock()  # e.g. a client or a lock held by the env


class NoOracleEnv(EchoEnv):
    oracle = classmethod(TextEnv.oracle.__func__)  # the base's, which says "has no oracle"


class AcceptsJunkEnv(EchoEnv):
    def respond(self, action: Action) -> Outcome:
        return Outcome("ok", 1.0, True, signals={"format_ok": True, "correct": True})


@pytest.fixture(scope="module", autouse=True)
def kit_envs():
    """Registered with Gymnasium alone, while the tests run: outside `gfcr.list_envs()`, so the
    contract tests of every listed env never collect these broken ones."""
    for cls in (
        EchoEnv,
        RaisesOnBrokenToolCallEnv,
        UndeclaredSignalEnv,
        UnpicklableEnv,
        AcceptsJunkEnv,
        NoOracleEnv,
    ):
        gym.register(f"kit/{cls.__name__}-v0", entry_point=f"{__name__}:{cls.__name__}")
    yield
    for env_id in [env_id for env_id in gym.registry if env_id.startswith("kit/")]:
        del gym.registry[env_id]


def check(env_id: str, *extra: str):
    return runner.invoke(app, ["check", env_id, "--examples", "10", *extra], terminal_width=200)


def test_gfcr_check_passes_a_bundled_env_and_prints_every_check():
    result = check("gfcr/ToolUse-v0")
    assert result.exit_code == 0, result.output
    for name in ("gymnasium check_env", "hostile actions", "sync and async vector envs", "pickling"):
        assert name in result.output
    assert "oracle 1.00, random 0.00" in result.output and "passes the env contract" in result.output


def test_gfcr_check_json_report_takes_env_arguments():
    result = check("gfcr/Math-v0", "-e", "dataset=champ", "--json", "--episodes", "2")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["passed"] and report["kwargs"] == {"dataset": "champ"}
    assert {c["status"] for c in report["checks"]} == {"passed"}


@pytest.mark.parametrize(
    ("env", "check_name", "reason"),
    [
        ("RaisesOnBrokenToolCallEnv", "hostile actions", "raised ValueError: cannot read braces"),
        ("UndeclaredSignalEnv", "hostile actions", "['length']"),
        ("UnpicklableEnv", "pickling", "does not pickle"),
        ("AcceptsJunkEnv", "oracle and random agents", "the verifier accepts junk"),
    ],
)
def test_gfcr_check_fails_a_broken_env_naming_the_check_and_the_reason(env, check_name, reason):
    result = check(f"kit/{env}-v0", "--json")
    assert result.exit_code == 1, result.output
    failed = {c["name"]: c["detail"] for c in json.loads(result.output)["checks"] if c["status"] == "failed"}
    assert check_name in failed and reason in failed[check_name], failed


def test_an_undeclared_signal_says_where_to_declare_it():
    report = check_contract("kit/UndeclaredSignalEnv-v0", examples=0)
    assert "add them to UndeclaredSignalEnv.signal_defaults" in report.summary()


def test_the_table_shows_a_failure_readably():
    result = check("kit/UnpicklableEnv-v0")
    assert result.exit_code == 1
    assert "failed" in result.output and "breaks the env contract" in result.output
    assert "cannot pickle" in result.output and "functools.partial" in result.output


def test_an_env_that_cannot_be_made_fails_the_make_check():
    result = check("kit/NoSuchEnv-v0", "--json")
    assert result.exit_code == 1
    (only,) = json.loads(result.output)["checks"]
    assert only["name"] == "make" and only["status"] == "failed" and "NoSuchEnv" in only["detail"]


def test_new_env_writes_a_package_that_installs_and_passes_gfcr_check(tmp_path):
    result = runner.invoke(app, ["new-env", "letter-count", "--dir", str(tmp_path)], terminal_width=200)
    assert result.exit_code == 0, result.output
    root = tmp_path / "letter-count"
    assert "letter_count/LetterCount-v0" in result.output
    source = (root / "letter_count" / "env.py").read_text()  # it teaches respond plus hooks
    assert "def respond" in source and "def begin_episode" in source and "def reset" not in source
    site = tmp_path / "site"  # a real install: the wheel built from the generated pyproject
    install = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
               "--no-index", "--target", str(site), str(root)]  # fmt: skip
    subprocess.run(install, check=True, capture_output=True, timeout=300)
    env = {**os.environ, "PYTHONPATH": str(site)}
    gfcr_cli = Path(sys.executable).parent / "gfcr"
    checked = subprocess.run([str(gfcr_cli), "check", "letter_count/LetterCount-v0"], env=env,
                             capture_output=True, text=True, timeout=300)  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "passes the env contract" in checked.stdout
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "tests"], cwd=root,
                           env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert tests.returncode == 0, tests.stdout + tests.stderr


def test_new_env_refuses_a_name_that_is_no_package_and_an_existing_folder(tmp_path):
    result = runner.invoke(app, ["new-env", "9lives", "--dir", str(tmp_path)])
    assert result.exit_code == 2 and "must make a Python package name" in result.output
    runner.invoke(app, ["new-env", "twice", "--dir", str(tmp_path)])
    result = runner.invoke(app, ["new-env", "twice", "--dir", str(tmp_path)])
    assert result.exit_code == 2 and "exists" in result.output


def test_gfcr_check_imports_the_module_that_registers_the_env(tmp_path, monkeypatch):
    (tmp_path / "my_kit_envs.py").write_text(
        f'import gfcr\nfrom {__name__} import EchoEnv\ngfcr.register_env("mine/Echo-v0", EchoEnv)\n'
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(Path(__file__).parent))  # this test module, for EchoEnv
    result = runner.invoke(app, ["check", "mine/Echo-v0", "--import", "my_kit_envs", "--examples", "5"])
    assert result.exit_code == 0, result.output
    assert "mine/Echo-v0 passes the env contract" in result.output
    result = runner.invoke(app, ["check", "mine/Echo-v0", "--import", "no_such_module_here"])
    assert result.exit_code == 2 and "cannot import no_such_module_here (No module named" in result.output


def test_an_env_without_an_oracle_skips_that_check_and_passes():
    result = check("kit/NoOracleEnv-v0", "--json")
    assert result.exit_code == 0, result.output
    statuses = {c["name"]: (c["status"], c["detail"]) for c in json.loads(result.output)["checks"]}
    assert statuses["oracle and random agents"][0] == "skipped"
    assert "has no oracle" in statuses["oracle and random agents"][1]
