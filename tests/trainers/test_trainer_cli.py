"""`gfcr train CONFIG.toml`: runs, overrides with --set, resumes, and reports bad configs clearly."""

from __future__ import annotations

import json

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
