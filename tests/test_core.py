"""The rollout types: JSON round-trip, JSONL safety, tool specs from functions, tool-call parsing."""

from __future__ import annotations

import json
from typing import Literal

import pytest

from gfcr.core import (
    Action,
    Cost,
    Message,
    Provenance,
    Step,
    TokenData,
    ToolCall,
    ToolSpec,
    Trajectory,
    parse_action,
    read_jsonl,
    write_jsonl,
)
from gfcr.errors import DataError, ToolError


def full_trajectory() -> Trajectory:
    return Trajectory(
        env_id="gfcr/Math-v0",
        task_id="mmath/AIME2024/0",
        prompt="Find the number of minutes. ∑ 中文 😀",
        steps=[
            Step('<tool_call>{"name": "calculator", "arguments": {"expression": "9/4"}}</tool_call>',
                 "9/4 ≈ 2.25", 0.0, False, False, {"format_ok": True}),
            Step("\\boxed{204}", "correct", 1.0, True, False, {"format_ok": True, "correct": True}),
        ],  # fmt: skip
        messages=[
            Message("user", "Find…"),
            Message("assistant", "", (ToolCall("calculator", {"expression": "9/4"}, "call_0"),)),
            Message("tool", "9/4 ≈ 2.25", tool_call_id="call_0", name="calculator"),
        ],
        tokens=TokenData([1, 2, 3], [4, 5, 6, 7], [1, 1, 0, 1], [-0.5, -0.1, 0.0, -0.2]),
        cost=Cost(tokens_in=3, tokens_out=3, policy_s=0.25, env_s=0.01),
        provenance=Provenance("hf:tiny", "step-3", seed=7),
    )


def test_trajectory_round_trips_through_json_with_every_field():
    trajectory = full_trajectory()
    line = trajectory.to_json()
    data = json.loads(line)
    assert data["total_reward"] == 1.0
    assert {"id", "env_id", "task_id", "prompt", "steps", "tokens", "cost", "provenance"} <= set(data)
    assert data["provenance"]["gfcr_version"] and data["provenance"]["time"]
    assert Trajectory.from_json(line) == trajectory


def test_a_recorded_final_state_round_trips_and_lines_without_one_still_load():
    trajectory = full_trajectory()
    trajectory.steps[-1].state = {"site": "shop", "answer": None, "site_state": {"orders": [["a", 1]]}}
    data = json.loads(trajectory.to_json())
    assert "state" not in data["steps"][0]  # steps without a state are written as before
    assert Trajectory.from_json(trajectory.to_json()) == trajectory
    old_line = full_trajectory().to_dict()
    assert all("state" not in step for step in old_line["steps"])
    assert all(step.state is None for step in Trajectory.from_dict(old_line).steps)


def test_token_data_with_mismatched_lengths_is_rejected():
    with pytest.raises(DataError, match="lengths differ"):
        TokenData([1], [2, 3], [1], [0.0, 0.0])


def test_unknown_keys_are_a_clear_error():
    with pytest.raises(DataError, match="not a gfcr trajectory"):
        Trajectory.from_dict({"env_id": "x", "task_id": "y", "prompt": "", "bogus": 1})


def test_jsonl_keeps_every_finished_line_when_the_last_one_is_torn(tmp_path):
    path = tmp_path / "t.jsonl"
    first, second = full_trajectory(), full_trajectory()
    assert write_jsonl([first, second], path) == 2
    with open(path, "a", encoding="utf-8") as f:  # a writer killed mid-line
        f.write(first.to_json()[:50])
    assert [t.id for t in read_jsonl(path)] == [first.id, second.id]


def test_jsonl_corruption_in_the_middle_is_an_error(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(full_trajectory().to_json() + "\n{oops\n" + full_trajectory().to_json() + "\n")
    with pytest.raises(DataError, match=":2: not valid JSON"):
        list(read_jsonl(path))


def lookup(city: str, units: Literal["metric", "imperial"] = "metric", days: list[int] | None = None) -> str:
    """Look up the weather.

    Args:
        city: Name of
            the city.
        units: Unit system.
        days (list[int]): Days ahead.
    """
    return f"{city}:{units}:{days}"


def test_tool_spec_from_function_gives_an_openai_schema():
    spec = ToolSpec.from_function(lookup)
    assert spec.to_openai() == {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Look up the weather.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "Name of the city."},
                    "units": {"type": "string", "enum": ["metric", "imperial"], "description": "Unit system."},
                    "days": {"type": "array", "items": {"type": "integer"}, "description": "Days ahead."},
                },
                "required": ["city"],
            },
        },
    }
    assert spec(city="Oslo") == "Oslo:metric:None"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [({}, "missing \\['city'\\]"), ({"city": "Oslo", "zone": 1}, "unexpected \\['zone'\\]"), ({"city": 3}, "must be string")],
)
def test_tool_arguments_are_checked_against_the_schema(arguments, message):
    with pytest.raises(ToolError, match=message):
        ToolSpec.from_function(lookup)(**arguments)


@pytest.mark.parametrize(
    "text",
    [
        'Thinking... <tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>',
        '{"name": "add", "arguments": {"a": 1, "b": 2}}',
        '[{"name": "add", "arguments": "{\\"a\\": 1, \\"b\\": 2}"}]',
        '{"tool_calls": [{"type": "function", "function": {"name": "add", "arguments": "{\\"a\\": 1, \\"b\\": 2}"}}]}',
    ],
)
def test_tool_calls_are_parsed_from_hermes_and_openai_forms(text):
    action, errors = parse_action(text)
    assert errors == []
    assert action.tool_calls == (ToolCall("add", {"a": 1, "b": 2}, "call_0"),)
    assert action.text == text


def test_several_hermes_calls_get_distinct_ids():
    text = '<tool_call>{"name": "a", "arguments": {}}</tool_call><tool_call>{"name": "b"}</tool_call>'
    action, errors = parse_action(text)
    assert [(c.name, c.id) for c in action.tool_calls] == [("a", "call_0"), ("b", "call_1")] and not errors


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("<tool_call>{not json}</tool_call>", "not valid JSON"),
        ('<tool_call>{"name": "a", "arguments": {}}', "no closing </tool_call>"),
        ('<tool_call>{"arguments": {}}</tool_call>', 'needs a string "name"'),
        ('<tool_call>{"name": "a", "arguments": [1]}</tool_call>', '"arguments" must be an object'),
        ('{"name": "a", "arguments": "{bad"}', "arguments are not valid JSON"),
        ('{"name": "a", ', "the JSON tool call is not valid JSON"),
    ],
)
def test_malformed_tool_calls_give_a_clear_problem(text, problem):
    _, errors = parse_action(text)
    assert len(errors) == 1 and problem in errors[0]


def test_plain_prose_and_json_data_are_not_tool_calls():
    assert parse_action("The answer is {1, 2}.") == (Action("The answer is {1, 2}."), [])
    assert parse_action('{"x": 1}') == (Action('{"x": 1}'), [])
