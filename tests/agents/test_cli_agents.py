"""The agent commands as a user types them: tiny-model, then run with the model, killed and resumed."""

from __future__ import annotations

from typer.testing import CliRunner

from gfcr.apps.cli import app
from gfcr.core import read_jsonl

cli = CliRunner()


def test_tiny_model_then_run_it_and_resume_the_run(tmp_path):
    model = tmp_path / "tiny"
    result = cli.invoke(app, ["tiny-model", str(model), "--vocab-size", "400"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert f"hf:{model}" in result.output and (model / "model.safetensors").exists()

    out = tmp_path / "run.jsonl"
    args = ["run", "gfcr/Math-v0", "-a", f"hf:{model}", "-n", "4", "--max-tokens", "6"]
    args += ["-e", "split=AIME2024", "--out", str(out)]
    result = cli.invoke(app, args, terminal_width=200)
    assert result.exit_code == 0, result.output
    first = list(read_jsonl(out))
    assert len(first) == 4 and all(t.tokens and 1 <= t.cost.tokens_out <= 6 for t in first)
    out.write_text("".join(out.read_text().splitlines(keepends=True)[:2]))  # as if killed after two

    result = cli.invoke(app, [*args[:-2], "-n", "4", "--out", str(out), "--resume"], terminal_width=200)
    assert result.exit_code == 0, result.output
    again = list(read_jsonl(out))
    assert [t.id for t in again[:2]] == [t.id for t in first[:2]] and sorted(t.id for t in again) == sorted(
        t.id for t in first
    )


def test_bad_agent_input_gets_a_clear_error_and_exit_code_2(tmp_path):
    result = cli.invoke(app, ["tiny-model", str(tmp_path), "--vocab-size", "10"], terminal_width=200)
    assert result.exit_code == 2 and "vocab_size must be over" in result.output
    result = cli.invoke(app, ["run", "gfcr/Math-v0", "-a", "openai:model-without-url"], terminal_width=200)
    assert result.exit_code == 2 and "openai:MODEL@BASE_URL" in result.output
    result = cli.invoke(app, ["run", "gfcr/Math-v0", "-a", "scripted:oracle", "--resume"], terminal_width=200)
    assert result.exit_code == 2 and "--resume needs --out" in result.output
