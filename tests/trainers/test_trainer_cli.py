"""`gfcr train CONFIG.toml`: runs, overrides with --set, resumes, and reports bad configs clearly."""

from __future__ import annotations

import json
import re

from typer.testing import CliRunner

from gfcr.apps.cli import app


def test_train_command_runs_and_resumes(train_toml, tmp_path):
    config = train_toml(steps=1)
    result = CliRunner().invoke(app, ["train", str(config)])
    assert result.exit_code == 0, result.output
    assert "trained to step 1" in result.output
    again = CliRunner().invoke(app, ["train", str(config), "--set", "steps=2"])
    assert again.exit_code == 0, again.output
    steps = [
        json.loads(line)["step"] for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    ]
    assert steps == [1, 2]  # step 1 kept, step 2 added after resuming


def test_bad_config_is_a_clear_error_not_a_traceback(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text('[model]\npath = "m"\n[env]\nid = "gfcr/ToolUse-v0"\n[loss]\nname = "gpro"\n')
    result = CliRunner().invoke(app, ["train", str(config)])
    assert result.exit_code == 2
    assert "unknown loss 'gpro'" in result.output and "grpo" in result.output


STEP_LINE = re.compile(
    r"gfcr progress · train: (?P<step>\d)/2 steps \(\d+%\), elapsed \S+, ETA (?P<eta>\S+), "
    r"reward [\d.e-]+, loss [\d.e+-]+"
)


def test_train_writes_a_progress_line_per_step_with_eta_reward_and_loss(train_toml, parity_env):
    # parity rewards differ within a group, so each step updates the policy and logs a loss
    config = train_toml(steps=2)
    result = CliRunner().invoke(
        app, ["train", str(config), "--set", f'env.id="{parity_env}"', "--set", "log.progress=true"]
    )
    assert result.exit_code == 0, result.output
    lines = [m for m in map(STEP_LINE.match, result.output.splitlines()) if m]
    assert [m["step"] for m in lines[:2]] == ["1", "2"], result.output  # then the closing line
    assert re.fullmatch(r"\d+s|\d+m\d\ds|\d+h\d\dm", lines[0]["eta"]), lines[0]["eta"]  # 1 of 2 done
    assert lines[-1]["eta"] == "–"
