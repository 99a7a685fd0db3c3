"""Each step records why the policy's action ended (`Step.finish_reason`): a reply cut at its token
cap is marked "length", so a reader (diagnose, the report) can tell an unfinished answer apart."""

from __future__ import annotations

from gfcr.agents import OraclePolicy, Runner, RunnerConfig, episodes_for_env
from gfcr.apps.diagnose import diagnose, load_run
from gfcr.core import SamplingParams, Trajectory


def test_a_reply_cut_at_max_tokens_is_marked_length_and_the_mark_survives_jsonl(hf_policy, tmp_path):
    out = tmp_path / "t.jsonl"
    config = RunnerConfig(concurrency=2, sampling=SamplingParams(max_tokens=3, temperature=1.0))
    result = Runner(hf_policy, config).run(episodes_for_env("gfcr/Math-v0", 2), out)
    steps = [step for t in result.trajectories for step in t.steps]
    # 3 tokens of a random model never end in its stop token, so every reply was cut
    assert steps and {step.finish_reason for step in steps} == {"length"}
    again = [Trajectory.from_json(line) for line in out.read_text().splitlines()]
    assert [s.finish_reason for t in again for s in t.steps] == ["length"] * len(steps)
    # Math-v0 ends such an episode (no answer found): not truncated, so only the mark tells
    assert not any(step.truncated for step in steps)
    found = {p.name: p for p in diagnose(load_run([out])).pathologies}["length_inflation"]
    assert found.severity != "none" and found.evidence["turns_cut_share"] == 1.0
    assert found.evidence["episodes_cut_at_max_tokens"] == 2 and found.evidence["truncated_share"] == 0.0


def test_tool_calls_and_final_answers_are_told_apart():
    result = Runner(OraclePolicy(), RunnerConfig()).run(episodes_for_env("gfcr/ToolUse-v0", 2))
    for trajectory in result.trajectories:
        assert [s.finish_reason for s in trajectory.steps] == ["tool_calls", "stop"]


def test_lines_written_before_finish_reasons_existed_still_load():
    line = Trajectory(env_id="e", task_id="t", prompt="p").to_json()
    assert "finish_reason" not in line and Trajectory.from_json(line).steps == []


def test_bench_says_how_many_turns_were_cut_and_the_viewer_marks_them(tiny_model, tmp_path):
    from typer.testing import CliRunner

    from gfcr.apps.cli import app

    report = tmp_path / "report"
    result = CliRunner().invoke(
        app,
        ["bench", "gfcr/Math-v0", "--agent", f"hf:{tiny_model}", "--num-tasks", "2", "--max-tokens", "3",
         "--report", str(report)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "2 of 2 turns were cut at --max-tokens" in " ".join(result.output.split())
    pages = [p.read_text() for p in report.rglob("*.html") if "cut at max_tokens" in p.read_text()]
    assert len(pages) == 2  # each episode's page marks its cut turn
