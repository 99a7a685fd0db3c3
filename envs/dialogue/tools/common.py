"""What every domain's tool set shares: the `Toolkit` base, argument checks, and the generic tools.

A domain's tools are methods of a `Toolkit` subclass over one episode's `Database`; their
signatures and docstrings become the tool specs the agent sees (`ToolSpec.from_function`), and
`call` runs one by name, as the env and the gold replay both do. Problems the agent can fix
raise `ToolError`, whose message the agent reads as `Error: ...`.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import operator
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from gfcr.core import ToolSpec
from gfcr.core.python_ast import parse_python
from gfcr.envs.dialogue.db import Database
from gfcr.errors import ToolError


class Toolkit:
    """Base of a domain's tools. Subclasses list their tool methods in `names`, the ones that
    change the database in `writes`, and JSON schemas of array items in `item_schemas`.

    >>> from gfcr.envs.dialogue.tools.retail import RetailTools
    >>> from gfcr.envs.dialogue.data import load_domain
    >>> tools = RetailTools(Database(load_domain("retail").tables))
    >>> tools.call("find_user_id_by_email", {"email": "noah.brown7922@example.com"})
    'noah_brown_6181'
    """

    names: ClassVar[tuple[str, ...]] = ()
    writes: ClassVar[frozenset[str]] = frozenset()
    item_schemas: ClassVar[dict[tuple[str, str], dict[str, Any]]] = {}  # (tool, argument) -> item schema

    def __init__(self, db: Database) -> None:
        self.db = db
        self._specs = {
            name: dataclasses.replace(spec, function=getattr(self, name))
            for name, spec in _schemas(type(self)).items()
        }

    def specs(self) -> list[ToolSpec]:
        """The tool specs, bound to this toolkit (their functions see whatever `self.db` is now)."""
        return list(self._specs.values())

    def call(self, name: str, arguments: dict[str, Any]) -> str:
        """Run tool `name`; `ToolError` if the name, the arguments or the request is invalid."""
        spec = self._specs.get(name)
        if spec is None:
            raise ToolError(f"unknown tool {name!r}; available: {sorted(self._specs)}")
        return str(spec(**arguments))

    # -- the generic tools of every domain ---------------------------------------------------

    def calculate(self, expression: str) -> str:
        """Calculate the result of a mathematical expression.

        Args:
            expression: The expression, such as '2 + 2': numbers, + - * /, parentheses and spaces.
        """
        if not expression.strip() or set(expression) - set("0123456789+-*/(). "):
            raise ToolError("Invalid characters in expression")
        try:
            value = _arithmetic(parse_python(expression.strip(), mode="eval").body)
        except (SyntaxError, ZeroDivisionError, OverflowError) as e:
            raise ToolError(f"Invalid expression {expression!r}: {e}") from e
        return str(round(value, 2))  # tau2-bench's format: '9.89', '4.0'

    def transfer_to_human_agents(self, summary: str) -> str:
        """Transfer the user to a human agent, with a summary of the user's issue. Only transfer if the
        user explicitly asks for a human agent, or given the policy and the available tools, you cannot
        solve the user's issue.

        Args:
            summary: A summary of the user's issue.
        """
        return "Transfer successful"


_SCHEMAS: dict[type, dict[str, ToolSpec]] = {}


def _schemas(toolkit: type[Toolkit]) -> dict[str, ToolSpec]:
    """The tool specs of a toolkit class, built once (their functions are bound per instance)."""
    if toolkit in _SCHEMAS:
        return _SCHEMAS[toolkit]
    unbound = object()  # the schema comes from the signature and docstring; `self` is not a parameter
    specs = {}
    for name in toolkit.names:
        spec = ToolSpec.from_function(types.MethodType(getattr(toolkit, name), unbound))
        properties = dict(spec.parameters["properties"])
        for (tool, argument), items in toolkit.item_schemas.items():
            if tool == name:
                properties[argument] = {**properties[argument], "items": items}
        specs[name] = dataclasses.replace(spec, parameters={**spec.parameters, "properties": properties})
    _SCHEMAS[toolkit] = specs
    return specs


_OPERATORS: dict[type, Callable[[float, float], float]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
}  # fmt: skip


def _arithmetic(node: ast.AST) -> float:
    """Evaluate + - * / over numbers by walking the syntax tree (never `eval`; no powers)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        value = _arithmetic(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_arithmetic(node.left), _arithmetic(node.right))
    raise SyntaxError("only numbers, + - * / and parentheses are allowed")


def to_json(value: Any) -> str:
    """A tool result as JSON text (records are dicts and lists)."""
    return json.dumps(value, ensure_ascii=False)


def require(record: Any, what: str) -> Any:
    """`record`, or `ToolError("<what> not found")` if it is None."""
    if record is None:
        raise ToolError(f"{what} not found")
    return record


def objects(value: Any, fields: Mapping[str, type | tuple[type, ...]], what: str) -> list[dict[str, Any]]:
    """`value` as a list of objects holding just `fields` (name -> type); extra keys are dropped.

    >>> objects([{"flight_number": "HAT001", "date": "2024-05-01", "seat": "1A"}],
    ...         {"flight_number": str, "date": str}, "flights")
    [{'flight_number': 'HAT001', 'date': '2024-05-01'}]
    """
    shape = "{" + ", ".join(f'"{name}": ...' for name in fields) + "}"
    if not isinstance(value, list):
        raise ToolError(f"{what} must be an array of objects like {shape}")
    items = []
    for number, item in enumerate(value, 1):
        if not isinstance(item, dict):
            raise ToolError(f"{what} item {number} must be an object like {shape}, got {type(item).__name__}")
        for name, kind in fields.items():
            if name not in item:
                raise ToolError(f"{what} item {number} has no {name!r}; expected an object like {shape}")
            if not isinstance(item[name], kind) or isinstance(item[name], bool):
                raise ToolError(
                    f"{what} item {number}: {name!r} has the wrong type {type(item[name]).__name__}"
                )
        items.append({name: item[name] for name in fields})
    return items


def one_of(value: Any, allowed: Sequence[str], what: str) -> str:
    """`value` if it is one of `allowed`, else a `ToolError` naming them."""
    if value not in allowed:
        raise ToolError(f"{what} must be one of {list(allowed)}, got {value!r}")
    return value


def strings(value: Any, what: str) -> list[str]:
    """Check that `value` is a list of strings."""
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ToolError(f"{what} must be an array of strings")
    return value
