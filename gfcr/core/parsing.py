"""Tool calls from model text: Hermes/Qwen `<tool_call>` blocks and OpenAI-style JSON.

Models emit tool calls as text in one of two common shapes:

- Hermes/Qwen chat templates: one or more `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`
  blocks, possibly after some reasoning text;
- OpenAI-style JSON as the whole message: `{"name": ..., "arguments": ...}`, a list of those, or
  `{"tool_calls": [{"type": "function", "function": {"name": ..., "arguments": "<json>"}}]}`.

`parse_action` never raises: a call it cannot read comes back as a message in `errors`, which
envs show to the model as an observation so it can correct itself.

>>> action, errors = parse_action('I will add. <tool_call>{"name": "add", "arguments": {"a": 1}}</tool_call>')
>>> action.tool_calls, errors
((ToolCall(name='add', arguments={'a': 1}, id='call_0'),), [])
>>> print(parse_action('<tool_call>{"name": "add", </tool_call>')[1][0])
tool call 1 is not valid JSON (Expecting property name enclosed in double quotes at char 16);
write <tool_call>{"name": "<tool>", "arguments": {...}}</tool_call>
"""

from __future__ import annotations

import json
import re
from typing import Any

from gfcr.core.messages import Action, ToolCall

_BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL)
_EXPECTED = 'write <tool_call>{"name": "<tool>", "arguments": {...}}</tool_call>'


def parse_action(text: str) -> tuple[Action, list[str]]:
    """Parse the tool calls in `text`; returns the action and the problems found (empty if none)."""
    if "<tool_call>" in text:
        return _parse_blocks(text)
    stripped = text.strip()
    if stripped.startswith(("{", "[")) and ('"name"' in stripped or '"tool_calls"' in stripped):
        return _parse_json_message(text, stripped)
    return Action(text), []


def _parse_blocks(text: str) -> tuple[Action, list[str]]:
    calls: list[ToolCall] = []
    errors: list[str] = []
    for number, match in enumerate(_BLOCK.finditer(text), 1):
        if not match.group(0).endswith("</tool_call>"):
            errors.append(f"tool call {number} has no closing </tool_call>; {_EXPECTED}")
            continue
        try:
            payload = json.loads(match.group(1))
        except json.JSONDecodeError as e:
            errors.append(f"tool call {number} is not valid JSON ({e.msg} at char {e.pos}); {_EXPECTED}")
            continue
        _collect(payload, number, calls, errors)
    return Action(text, _with_ids(calls)), errors


def _parse_json_message(text: str, stripped: str) -> tuple[Action, list[str]]:
    try:
        payload = json.loads(stripped)
    except json.JSONDecodeError as e:
        return Action(text), [f"the JSON tool call is not valid JSON ({e.msg} at char {e.pos}); {_EXPECTED}"]
    if isinstance(payload, dict) and "tool_calls" in payload:
        payload = payload["tool_calls"]
    calls: list[ToolCall] = []
    errors: list[str] = []
    for number, item in enumerate(payload if isinstance(payload, list) else [payload], 1):
        _collect(item, number, calls, errors)
    return Action(text, _with_ids(calls)), errors


def _collect(payload: Any, number: int, calls: list[ToolCall], errors: list[str]) -> None:
    """Append the call in `payload` (plain or OpenAI `{"function": {...}}` form) or an error."""
    if isinstance(payload, dict) and isinstance(payload.get("function"), dict):
        payload = payload["function"]
    if not isinstance(payload, dict) or not isinstance(payload.get("name"), str):
        errors.append(f'tool call {number} needs a string "name"; {_EXPECTED}')
        return
    arguments = payload.get("arguments", payload.get("parameters", {}))
    if isinstance(arguments, str):  # OpenAI encodes arguments as a JSON string
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as e:
            errors.append(f"tool call {number} ({payload['name']}): arguments are not valid JSON ({e.msg})")
            return
    if not isinstance(arguments, dict):
        errors.append(f'tool call {number} ({payload["name"]}): "arguments" must be an object')
        return
    calls.append(ToolCall(payload["name"], arguments))


def _with_ids(calls: list[ToolCall]) -> tuple[ToolCall, ...]:
    return tuple(ToolCall(c.name, c.arguments, f"call_{i}") for i, c in enumerate(calls))
