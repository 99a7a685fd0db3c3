"""Skills as callable tools: a procedure runs its recorded tool calls on new arguments; a
helper function runs in a sandbox (it is model-written code).

`skill_tools(records, tools)` builds an episode's skill tools from skill *records* (plain dicts,
`dataclasses.asdict(skill)`), inside the env's own process: records pickle and travel as JSON,
a tool's function does not. Only procedures and functions become tools (`TOOL_KINDS`); SQL and
patch fragments are guidance only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gfcr.core import ToolSpec
from gfcr.errors import ConfigError, DataError, SandboxError, ToolError
from gfcr.sandboxes import Sandbox, shared_sandbox
from gfcr.skills.skill import Skill

# Appended to a function skill's code: call it on the JSON arguments from stdin and print the
# JSON result as the last line (whatever the function itself printed comes before).
TOOL_KINDS = ("tool_sequence", "function")  # the kinds a skill tool can run
PREFIX = "skill_"  # every skill tool's name starts with it

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
    name = tool_name(skill)
    properties = {
        p: {"description": f"e.g. {skill.example[p]!r}" if p in skill.example else p}
        for p in skill.parameters
    }
    parameters = {"type": "object", "properties": properties, "required": list(properties)}
    description = f"Reusable skill: {skill.description}"[:500]
    if skill.kind == "function":
        return ToolSpec(name, description, parameters, _function_runner(skill, sandbox))
    return ToolSpec(name, description, parameters, _procedure_runner(skill, dict(tools or {})))


def tool_name(skill: Skill) -> str:
    """The name of `skill`'s tool: its name, made an identifier, after `PREFIX`.

    >>> tool_name(Skill("price+convert", "tool_sequence", "", "[]"))
    'skill_price_convert'
    """
    return PREFIX + re.sub(r"[^A-Za-z0-9_]+", "_", skill.name)


def skill_tools(
    records: Sequence[Mapping[str, Any]], tools: Mapping[str, ToolSpec], sandbox: Sandbox | None = None
) -> dict[str, ToolSpec]:
    """An episode's skill tools, by name, from skill records in their order (best first).

    A record that cannot run here is left out: a fragment kind (SQL, patch), a procedure that
    calls a tool `tools` lacks (a skill of another env), a name already taken by one of `tools`
    or by a better skill. A procedure calls only `tools` (the env's own, never another skill); a
    function runs in `sandbox`. A record that is no skill at all is refused.

    >>> steps = '[{"name": "double", "arguments": {"x": {"$param": "x"}}}]'
    >>> schema = {"type": "object", "properties": {"x": {"type": "integer"}}}
    >>> double = ToolSpec("double", "Double x.", schema, lambda x: 2 * x)
    >>> records = [{"name": "double", "kind": "tool_sequence", "description": "twice", "body": steps},
    ...            {"name": "halve", "kind": "tool_sequence", "description": "half",
    ...             "body": '[{"name": "halve", "arguments": {}}]'}]
    >>> built = skill_tools(records, {"double": double})
    >>> list(built), built["skill_double"](x=4)
    (['skill_double'], 8)
    """
    built: dict[str, ToolSpec] = {}
    for record in records:
        try:
            skill = Skill(**record)
        except TypeError as e:
            raise ConfigError(
                f"a skill record must hold a Skill's fields (dataclasses.asdict(skill)), "
                f"got {sorted(record)}: {e}"
            ) from e
        name = tool_name(skill)
        if skill.kind not in TOOL_KINDS or name in built or name in tools:
            continue
        try:
            built[name] = skill_tool(skill, tools, sandbox)
        except (ToolError, DataError, SyntaxError):  # calls tools this env lacks; code without its def
            continue
    return built


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
