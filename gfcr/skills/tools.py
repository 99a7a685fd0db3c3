"""Skills as callable tools: a procedure runs its recorded tool calls on new arguments; a
helper function runs in a sandbox (it is model-written code).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from gfcr.core import ToolSpec
from gfcr.errors import SandboxError, ToolError
from gfcr.sandboxes import Sandbox, shared_sandbox
from gfcr.skills.skill import Skill

# Appended to a function skill's code: call it on the JSON arguments from stdin and print the
# JSON result as the last line (whatever the function itself printed comes before).
_RUNNER = (
    "\nimport json as _json, sys as _sys\n"
    "_result = {name}(**_json.loads(_sys.stdin.read()))\n"
    "print()\nprint(_json.dumps(_result))\n"
)


def skill_tool(
    skill: Skill, tools: Mapping[str, ToolSpec] | None = None, sandbox: Sandbox | None = None
) -> ToolSpec:
    """`skill` as a tool the agent may call; `tools` are the env's tools a procedure calls.

    >>> import json
    >>> from gfcr.skills.skill import Skill
    >>> steps = [{"name": "double", "arguments": {"x": {"$param": "x"}}},
    ...          {"name": "double", "arguments": {"x": {"$result": 0}}}]
    >>> skill = Skill("double+double", "tool_sequence", "quadruple", json.dumps(steps))
    >>> double = ToolSpec("double", "Double x.", {"type": "object", "properties": {"x": {"type": "integer"}}},
    ...                   lambda x: 2 * x)
    >>> tool = skill_tool(skill, {"double": double})
    >>> tool.name, tool(x=3)
    ('skill_double_double', 12)
    """
    name = "skill_" + re.sub(r"[^A-Za-z0-9_]+", "_", skill.name)
    properties = {
        p: {"description": f"e.g. {skill.example[p]!r}" if p in skill.example else p}
        for p in skill.parameters
    }
    parameters = {"type": "object", "properties": properties, "required": list(properties)}
    description = f"Reusable skill: {skill.description}"[:500]
    if skill.kind == "function":
        return ToolSpec(name, description, parameters, _function_runner(skill, sandbox))
    return ToolSpec(name, description, parameters, _procedure_runner(skill, dict(tools or {})))


def _procedure_runner(skill: Skill, tools: dict[str, ToolSpec]) -> Callable[..., Any]:
    missing = sorted({step["name"] for step in skill.steps} - set(tools))
    if missing:
        raise ToolError(
            f"skill {skill.name!r} calls tools {missing} that are not given; have {sorted(tools)}"
        )

    def run(**params: Any) -> Any:
        results: list[Any] = []
        for step in skill.steps:
            arguments = {
                arg: results[ref["$result"]] if "$result" in ref else params[ref["$param"]]
                for arg, ref in step["arguments"].items()
            }
            results.append(tools[step["name"]](**arguments))
        return results[-1]

    return run


def _function_runner(skill: Skill, sandbox: Sandbox | None) -> Callable[..., Any]:
    code = skill.body + _RUNNER.format(name=skill.name)

    def run(**params: Any) -> Any:
        try:
            result = (sandbox or shared_sandbox()).run(code, stdin=json.dumps(params))
        except SandboxError as e:
            raise ToolError(f"{skill.name}: the sandbox failed: {e}") from e
        if not result.ok:
            raise ToolError(f"{skill.name} failed ({result.status}): {result.stderr.strip()[-500:]}")
        try:
            return json.loads(result.stdout.rstrip("\n").rpartition("\n")[2])
        except json.JSONDecodeError as e:
            output = result.stdout[-300:]
            raise ToolError(f"{skill.name} returned no JSON result ({e}); its output: {output!r}") from e

    return run
