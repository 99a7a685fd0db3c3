"""Each step records why the policy's action ended (`Step.finish_reason`): a reply cut at its token
cap is marked "length", so a reader (diagnose, the report) can tell an unfinished answer apart."""

from __future__ import annotations

from gfcr.agents import OraclePolicy, Runner, RunnerConfig, episodes_for_env
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


def test_tool_calls_and_final_answers_are_told_apart():
    result = Runner(OraclePolicy(), RunnerConfig()).run(episodes_for_env("gfcr/ToolUse-v0", 2))
    for trajectory in result.trajectories:
        assert [s.finish_reason for s in trajectory.steps] == ["tool_calls", "stop"]


def test_lines_written_before_finish_reasons_existed_still_load():
    line = Trajectory(env_id="e", task_id="t", prompt="p").to_json()
    assert "finish_reason" not in line and Trajectory.from_json(line).steps == []
