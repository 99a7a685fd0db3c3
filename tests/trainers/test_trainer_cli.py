"""`gfcr train CONFIG.toml`: runs, overrides with --set, resumes, and reports bad configs clearly."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from gfcr.apps.cli import app


def test_train_command_runs_and_resumes(tiny_model, tmp_path):
    config = tmp_path / "c.toml"
    config.write_text(
        f"""steps = 1
out_dir = "{tmp_path / "run"}"
[model]
path = "{tiny_model}"
[env]
id = "gfcr/ToolUse-v0"
num_tasks = 8
[rollout]
prompts_per_step = 2
group_size = 2
max_tokens = 6
[log]
tensorboard = false
progress = false
"""
    )
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
