"""The CLI never hides a failure behind exit 0 and never overwrites a result file by accident."""

from __future__ import annotations

from typer.testing import CliRunner

from gfcr.apps.cli import app
from gfcr.core import read_jsonl
from gfcr.envs.base import TextEnv
from gfcr.envs.tooluse.env import ToolUseEnv
from gfcr.registry import register_env

runner = CliRunner()
MATH = ["run", "gfcr/Math-v0", "-e", "split=AIME2024", "-n", "3"]


def gfcr(*args: str):
    return runner.invoke(app, list(args), terminal_width=200)


def test_a_dead_policy_server_exits_1_with_failures_by_reason_and_resume_runs_them_again(tmp_path):
    out = tmp_path / "run.jsonl"
    dead = gfcr(*MATH, "--agent", "openai:m@http://127.0.0.1:9/v1", "--out", str(out), "--retries", "0")
    assert dead.exit_code == 1, dead.output
    assert (
        "policy unavailable" in dead.output
        and "Connection error" in dead.output
        and "--resume" in dead.output
    )
    assert [t.status for t in read_jsonl(out)] == ["failed"] * 3
    fixed = gfcr(*MATH, "--agent", "scripted:oracle", "--out", str(out), "--resume")
    assert fixed.exit_code == 0, fixed.output
    assert [t.status for t in read_jsonl(out)] == ["ok"] * 3  # each episode once, now a result


class NoOracle(ToolUseEnv):
    """ToolUse without its oracle."""

    oracle = TextEnv.oracle


def test_an_env_without_an_oracle_is_a_failure_not_a_quiet_zero():
    register_env("test/NoOracle-v0", NoOracle)
    result = gfcr("run", "test/NoOracle-v0", "--agent", "scripted:oracle", "-n", "2")
    assert result.exit_code == 1 and "has no oracle" in result.output, result.output


def test_out_is_never_overwritten_by_accident(tmp_path):
    out = tmp_path / "run.jsonl"
    assert gfcr(*MATH, "--agent", "scripted:oracle", "--out", str(out)).exit_code == 0
    again = gfcr(*MATH, "--agent", "scripted:random", "--out", str(out))
    assert (
        again.exit_code == 2
        and "exists: --resume to continue it," in again.output
        and "--force" in again.output
    )
    assert all(t.total_reward == 1.0 for t in read_jsonl(out))  # the oracle's run is intact
    assert gfcr(*MATH, "--agent", "scripted:random", "--out", str(out), "--force").exit_code == 0
    folder = gfcr(*MATH, "--agent", "scripted:oracle", "--out", str(tmp_path))
    assert folder.exit_code == 2 and "is a directory" in folder.output
    assert gfcr(*MATH[:-1], "0", "--agent", "scripted:oracle").exit_code == 2  # -n must be >= 1
