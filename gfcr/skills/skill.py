"""A skill, and how skills are extracted from successful trajectories.

Four kinds:
- "tool_sequence": the tool calls that solved a task, in order, as a procedure. Arguments that
  repeat an earlier call's result become references to it (`{"$result": i}`), the others
  parameters (`{"$param": name}`, with the value seen as the example), so the procedure runs
  again on a new task's arguments.
- "function": a helper function the policy wrote in a response that passed its tests, with
  the imports of the code it came from;
- "sql_query": a SQL query that executed on a task's database (`gfcr.skills.fragments`);
- "patch": a diff that passed a repository's tests (`gfcr.skills.fragments`).

Each skill records the verification that admitted it (`verification`: the episode's reward and
the env's signals, and what was verified, e.g. "tests passed") and its usage statistics.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from gfcr.core import Message, ToolCall, Trajectory
from gfcr.core.parsing import parse_action
from gfcr.core.python_ast import parse_python
from gfcr.errors import ConfigError, DataError

KINDS = ("tool_sequence", "function", "sql_query", "patch")
_CODE_BLOCK = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.DOTALL)


@dataclass
class Skill:
    """A reusable piece of solved work, with its provenance and success statistics.

    `body` is the JSON procedure of a tool sequence, a function's source code, a SQL query or a
    diff. `uses` and `successes` count the episodes that used the skill and the ones that then
    succeeded. `category` is the source task's category (what its usefulness is measured
    against), `verification` what admitted it ({"verified": "tests passed", "reward": 1.0,
    "signals": {...}}), `extracted_at` and `last_used` the library's step counts when it was
    found and when an episode last carried it (for staleness).
    """

    name: str
    kind: str
    description: str
    body: str
    source_task: str = ""
    source_trajectory: str = ""
    policy_version: str = ""
    uses: int = 0
    successes: int = 0
    example: dict[str, Any] = field(default_factory=dict)  # the parameters' values where it was found
    category: str = ""
    verification: dict[str, Any] = field(default_factory=dict)
    extracted_at: int = 0
    last_used: int = 0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ConfigError(f"skill kind must be one of {KINDS}, got {self.kind!r}")

    @property
    def id(self) -> str:
        """Equal procedures (or code) are one skill, whichever task they came from."""
        return hashlib.sha256(f"{self.kind}\n{self.body}".encode()).hexdigest()[:32]

    @property
    def success_rate(self) -> float:
        """Laplace-smoothed success rate of episodes that used the skill."""
        return (self.successes + 1) / (self.uses + 2)

    @property
    def steps(self) -> list[dict[str, Any]]:
        """A tool sequence's calls: `{"name": ..., "arguments": {arg: {"$param"|"$result": ...}}}`."""
        return json.loads(self.body) if self.kind == "tool_sequence" else []

    @property
    def parameters(self) -> list[str]:
        """The parameters a caller supplies: a procedure's `$param`s, or a function's arguments."""
        if self.kind == "function":
            body = parse_python(self.body).body
            defs = [n for n in body if isinstance(n, ast.FunctionDef) and n.name == self.name]
            if not defs:
                raise DataError(f"function skill {self.name!r} holds no definition of {self.name}()")
            return [a.arg for a in defs[0].args.args]
        names = [
            ref["$param"] for step in self.steps for ref in step["arguments"].values() if "$param" in ref
        ]
        return list(dict.fromkeys(names))

    def render(self) -> str:
        """The skill as prompt text."""
        if self.kind == "function":
            return f"Helper `{self.name}` (passed its tests):\n```python\n{self.body}\n```"
        if self.kind == "sql_query":
            return f"SQL `{self.name}` (executed; for {self.description!r}):\n```sql\n{self.body}\n```"
        if self.kind == "patch":
            return f"Patch `{self.name}` (tests passed; for {self.description!r}):\n```diff\n{self.body}\n```"
        lines = []
        for number, step in enumerate(self.steps, 1):
            args = ", ".join(
                f"{arg}=<result of step {ref['$result'] + 1}>"
                if "$result" in ref
                else f"{arg}=<{ref['$param']}>"
                for arg, ref in step["arguments"].items()
            )
            lines.append(f"{number}. {step['name']}({args})")
        example = ", ".join(f"{k}={v!r}" for k, v in self.example.items())
        return f"Procedure `{self.name}` (solved: {self.description!r}; with {example}):\n" + "\n".join(lines)


def extract_tool_sequence(trajectory: Trajectory) -> Skill | None:
    """The tool-call procedure of a trajectory (None if it called no tool).

    >>> from gfcr.core import Message, ToolCall
    >>> t = Trajectory("e", "t1", "Price of a pear in EUR?", messages=[
    ...     Message("user", "Price of a pear in EUR?"),
    ...     Message("assistant", "", (ToolCall("price", {"item": "pear"}),)),
    ...     Message("tool", "2.0", name="price"),
    ...     Message("assistant", "", (ToolCall("convert", {"amount": 2.0, "currency": "EUR"}),)),
    ...     Message("tool", "1.84", name="convert")])
    >>> print(extract_tool_sequence(t).render())
    Procedure `price+convert` (solved: 'Price of a <item> in <currency>?'; with item='pear', currency='EUR'):
    1. price(item=<item>)
    2. convert(amount=<result of step 1>, currency=<currency>)
    """
    steps: list[dict[str, Any]] = []
    results: list[str] = []
    example: dict[str, Any] = {}
    pending: list[int] = []  # calls still waiting for their tool result, in order
    for message in trajectory.messages:
        if message.role == "assistant":
            for call in tool_calls(message):
                arguments: dict[str, dict[str, Any]] = {}
                for arg, value in call.arguments.items():
                    earlier = [i for i, result in enumerate(results) if result == str(value).strip()]
                    if earlier:
                        arguments[arg] = {"$result": earlier[-1]}
                    else:
                        arguments[arg] = {"$param": arg}
                        example.setdefault(arg, value)
                steps.append({"name": call.name, "arguments": arguments})
                pending.append(len(steps) - 1)
        elif message.role == "tool" and pending:
            pending.pop(0)
            results.append(message.text.strip())
    if not steps:
        return None
    description = trajectory.prompt  # the task, with its instance's values as the parameters' names
    for arg, value in example.items():
        if isinstance(value, str) and value:
            description = re.sub(rf"\b{re.escape(value)}\b", f"<{arg}>", description, flags=re.IGNORECASE)
    return Skill(
        name="+".join(step["name"] for step in steps),
        kind="tool_sequence",
        description=description,
        body=json.dumps(steps, sort_keys=True),
        source_task=trajectory.task_id,
        source_trajectory=trajectory.id,
        policy_version=trajectory.provenance.policy_version,
        example=example,
    )


def extract_functions(trajectory: Trajectory) -> list[Skill]:
    """Top-level functions in the trajectory's final response (code blocks, or the whole text).

    >>> from gfcr.core import Step
    >>> code = "```python\\ndef area(w, h):\\n    '''Area of a rectangle.'''\\n    return w * h\\n```"
    >>> found = extract_functions(Trajectory("e", "t", "?", [Step(code, "", 1.0, True, False)]))
    >>> [(s.name, s.description, s.parameters) for s in found]
    [('area', 'Area of a rectangle.', ['w', 'h'])]
    """
    if not trajectory.steps:
        return []
    text = trajectory.steps[-1].action
    skills = []
    for source in _CODE_BLOCK.findall(text) or [text]:
        try:
            module = parse_python(source)
        except SyntaxError:
            continue
        imports = [
            ast.get_source_segment(source, n) or ""
            for n in module.body
            if isinstance(n, (ast.Import, ast.ImportFrom))
        ]
        for node in module.body:
            if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
                code = "\n".join(
                    [*imports, ast.get_source_segment(source, node) or ""]
                )  # with the module's imports
                skills.append(
                    Skill(
                        name=node.name,
                        kind="function",
                        description=ast.get_docstring(node) or trajectory.prompt,
                        body=code,
                        source_task=trajectory.task_id,
                        source_trajectory=trajectory.id,
                        policy_version=trajectory.provenance.policy_version,
                    )
                )
    return skills


def tool_calls(message: Message) -> tuple[ToolCall, ...]:
    """The calls of an assistant message: parsed by the policy's server, else from its text.

    >>> text = '<tool_call>{"name": "f", "arguments": {"x": 1}}</tool_call>'
    >>> tool_calls(Message("assistant", text))[0].name
    'f'
    """
    return message.tool_calls or parse_action(message.text)[0].tool_calls
