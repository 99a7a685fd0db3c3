"""Command-line options: those several commands share, and those generated from a config
dataclass's settings (`gfcr.core.config`).

A command takes the config as one keyword parameter; `config_options` replaces it, in the
signature typer reads, by one option per setting (name, type, default and help text from the
dataclass), and builds the config from the parsed options before the command runs. A setting is
thus declared once, in its component, and every command that takes the component offers it.
"""

from __future__ import annotations

import functools
import inspect
import json
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from gfcr.core.config import Setting, from_dict, settings
from gfcr.errors import ConfigError, GfcrError

F = TypeVar("F", bound=Callable[..., Any])
PLAIN = (str, int, float, bool, Path)

# Options several commands share.
Agent = Annotated[
    str,
    typer.Option(
        "--agent",
        "-a",
        help="Policy spec: scripted:oracle, scripted:random, hf:PATH, vllm:PATH or openai:MODEL@BASE_URL.",
    ),
]
EnvArgs = Annotated[
    list[str] | None,
    typer.Option("--env-arg", "-e", help="Env keyword KEY=VALUE (VALUE parsed as JSON if it can be)."),
]
Imports = Annotated[
    list[str] | None,
    typer.Option("--import", "-i", help="Import a module first (one that registers the env); repeatable."),
]
Resume = Annotated[
    bool,
    typer.Option("--resume", help="Keep the output, skip the episodes it holds, run its failed ones again."),
]
Force = Annotated[bool, typer.Option("--force", help="Overwrite an existing --out file.")]


def parse_env_args(pairs: Sequence[str]) -> dict[str, Any]:
    """Env keywords from `-e/--env-arg KEY=VALUE` pairs; VALUE is read as JSON where it can be.

    Every command and example script that takes env keywords parses them here.

    >>> parse_env_args(["split=AIME2024", "num_tasks=10", 'generators=["chain_sum"]'])
    {'split': 'AIME2024', 'num_tasks': 10, 'generators': ['chain_sum']}
    """
    kwargs: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"--env-arg expects KEY=VALUE, got {pair!r} (e.g. --env-arg dataset=champ)")
        try:
            kwargs[key] = json.loads(value)
        except json.JSONDecodeError:
            kwargs[key] = value
    return kwargs


def config_options(
    cls: type, *, param: str, aliases: Mapping[str, Sequence[str]] | None = None, panel: str | None = None
) -> Callable[[F], F]:
    """Decorator: the command's keyword parameter `param` (a `cls`) becomes one option per setting.

    Option names are the settings' with dashes (`max_tokens` -> `--max-tokens`); `aliases` adds
    more names for a setting; `panel` groups the options in `--help`. A value the config refuses
    is a usage error (exit code 2) that says why.

    >>> from dataclasses import dataclass
    >>> from typer.testing import CliRunner
    >>> from gfcr.core.config import setting
    >>> @dataclass(frozen=True)
    ... class Greeting:
    ...     name: str = setting("world", "Whom to greet.")
    ...     times: int = setting(1, "How often.")
    >>> app = typer.Typer()
    >>> @app.command()
    ... @config_options(Greeting, param="greeting", aliases={"times": ["-t"]})
    ... def greet(*, greeting: Greeting) -> None:
    ...     print(" ".join([f"hello {greeting.name}"] * greeting.times))
    >>> print(CliRunner().invoke(app, ["--name", "gfcr", "-t", "2"]).output.strip())
    hello gfcr hello gfcr
    """

    def decorate(command: F) -> F:
        table = settings(cls)
        signature = inspect.signature(command, eval_str=True)
        kept = [p for name, p in signature.parameters.items() if name != param]
        if len(kept) == len(signature.parameters):
            raise TypeError(f"{command.__name__}() has no parameter {param!r} to fill with {cls.__name__}")
        if clash := sorted({s.name for s in table} & {p.name for p in kept}):
            raise TypeError(f"{command.__name__}(): parameters {clash} clash with {cls.__name__}'s settings")
        generated = [_parameter(s, (aliases or {}).get(s.name, ()), panel) for s in table]
        repeated = {s.name for s in table if _cli_type(s)[2]}

        @functools.wraps(command)
        def wrapper(**kwargs: Any) -> Any:
            given = {s.name: kwargs.pop(s.name) for s in table}
            # an unset repeated option keeps the config's default; lists become tuples in from_dict
            data = {name: v for name, v in given.items() if v or name not in repeated}
            try:
                config = from_dict(cls, data)
            except GfcrError as e:
                raise typer.BadParameter(str(e)) from e  # a usage error: exit code 2
            return command(**kwargs, **{param: config})

        parameters = [*kept, *generated]
        wrapper.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
        wrapper.__annotations__ = {p.name: p.annotation for p in parameters}
        if signature.return_annotation is not inspect.Signature.empty:
            wrapper.__annotations__["return"] = signature.return_annotation
        return wrapper  # type: ignore[return-value]

    return decorate


def config_arguments(config: Any) -> list[str]:
    """The options of `config_options` that give `config` back: one per setting off its default.

    A command that writes another command (`gfcr serve-env --write-deployment`) carries a config so.

    >>> from gfcr.core.admission import AdmissionConfig
    >>> config_arguments(AdmissionConfig(max_concurrency=4))
    ['--max-concurrency', '4']
    """
    arguments: list[str] = []
    for s in settings(type(config)):
        value = functools.reduce(getattr, s.path, config)
        if value == s.default:
            continue
        flag = s.name.replace("_", "-")
        base, _, many = _cli_type(s)
        if value is None:
            raise ConfigError(f"--{flag} has no command-line form for None (its default is {s.default!r})")
        if base is bool:
            arguments.append(f"--{flag}" if value else f"--no-{flag}")
        else:
            arguments += [a for item in (value if many else [value]) for a in (f"--{flag}", str(item))]
    return arguments


def _parameter(s: Setting, aliases: Sequence[str], panel: str | None) -> inspect.Parameter:
    """The typer parameter of one setting: `--name` (`--name/--no-name` for a flag) and aliases."""
    flag = s.name.replace("_", "-")
    base, optional, many = _cli_type(s)
    names = [f"--{flag}/--no-{flag}" if base is bool else f"--{flag}", *aliases]
    option = typer.Option(*names, help=s.help, rich_help_panel=panel)
    annotation: Any = list[base] if many else base  # type: ignore[valid-type]
    if optional or many:
        annotation = annotation | None
    default = None if many else s.default
    return inspect.Parameter(
        s.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=Annotated[annotation, option]
    )


def _cli_type(s: Setting) -> tuple[type, bool, bool]:
    """(base type, optional, repeated) of a setting on the command line."""
    type_, optional = s.type, False
    if typing.get_origin(type_) in (typing.Union, types.UnionType):
        present = [a for a in typing.get_args(type_) if a is not type(None)]
        type_, optional = (present[0] if len(present) == 1 else None), True
    if typing.get_origin(type_) is tuple:
        item, *rest = typing.get_args(type_)
        if rest == [Ellipsis] and item in PLAIN:
            return item, optional, True
    if type_ in PLAIN:
        return type_, optional, False
    raise TypeError(f"setting {s.name!r} of type {s.type!r} has no command-line form")
