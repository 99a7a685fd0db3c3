"""Settings declared once: each config field carries its help text, and tables and CLIs come from it.

A component's config is a frozen dataclass whose fields are `setting(default, help)`. From those
declarations alone:

- `settings(cls)` lists the flat settings (name, type, default, help): what a config table holds
  and what a command line offers. A field declared with `flatten=True` (a nested config, e.g. the
  runner's `SamplingParams`) adds its own settings to its parent's table instead of a sub-table,
  as serde's `flatten` does; its `exclude` names settings left out of the table;
- `from_dict(cls, data)` builds the dataclass from such a table (a parsed TOML file), recursing
  into sub-tables, with errors that name an unknown key's nearest valid one; `to_dict(obj)` is
  its inverse.

>>> from gfcr.core.policy import SamplingParams
>>> [(s.name, s.default) for s in settings(SamplingParams)][:3]
[('temperature', 1.0), ('top_p', 1.0), ('max_tokens', 1024)]
>>> from_dict(SamplingParams, {"max_tokens": 64, "stop": ["</answer>"]})
SamplingParams(temperature=1.0, top_p=1.0, max_tokens=64, n=1, stop=('</answer>',), seed=None)
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import functools
import keyword
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import MISSING, dataclass, field, fields, is_dataclass
from typing import Any

from gfcr.errors import ConfigError

TOP_LEVEL = "top level"  # how errors name the outermost table


def setting(
    default: Any = MISSING,
    help: str = "",
    *,
    default_factory: Any = MISSING,
    flatten: bool = False,
    exclude: Sequence[str] = (),
) -> Any:
    """A dataclass field with its help text as data (`field(..., metadata={"help": ...})`).

    `flatten=True` (for a nested config) puts that config's settings into its parent's table, less
    those named in `exclude`; a name its parent already has is prefixed with the field's name. A
    nested config that is not flattened is a sub-table, less those named in `exclude` too (settings
    its parent fills in, e.g. from another section).

    >>> @dataclass(frozen=True)
    ... class Eval:
    ...     episodes: int = setting(64, "Episodes per evaluation.")
    >>> settings(Eval)[0].help
    'Episodes per evaluation.'
    """
    metadata = {"help": help, "flatten": flatten, "exclude": tuple(exclude)}
    return field(default=default, default_factory=default_factory, metadata=metadata)


@dataclass(frozen=True)
class Setting:
    """One entry of a config's flat table."""

    name: str  # its key in the table (a command line writes it with dashes: --max-tokens)
    path: tuple[str, ...]  # attributes from the outer config to the value, e.g. ("sampling", "max_tokens")
    type: Any  # the field's type, resolved (e.g. int | None)
    default: Any  # MISSING when the setting is required
    help: str
    exclude: tuple[str, ...] = ()  # a sub-table's settings left out of it


def settings(cls: type) -> list[Setting]:
    """The flat settings of config dataclass `cls`, in declaration order (flattened fields inline).

    >>> @dataclass(frozen=True)
    ... class Sampling:
    ...     temperature: float = setting(1.0, "Sampling temperature.")
    ...     seed: int | None = setting(None, "Seed (None: each episode's own).")
    >>> @dataclass(frozen=True)
    ... class Run:
    ...     seed: int = setting(0, "Seed of the task order.")
    ...     sampling: Sampling = setting(default_factory=Sampling, flatten=True)
    >>> [s.name for s in settings(Run)], settings(Run)[-1].path
    (['seed', 'temperature', 'sampling_seed'], ('sampling', 'seed'))
    """
    return list(_settings(cls))


@functools.cache
def _settings(cls: type) -> tuple[Setting, ...]:
    if not is_dataclass(cls):
        raise TypeError(f"expected a dataclass, got {cls!r}")
    types = _types(cls)
    taken = {f.name for f in fields(cls) if f.init and not f.metadata.get("flatten")}
    found: list[Setting] = []
    for f in fields(cls):
        if not f.init:
            continue
        if not f.metadata.get("flatten"):
            help_, exclude = f.metadata.get("help", ""), f.metadata.get("exclude", ())
            found.append(Setting(_key(f.name), (f.name,), types[f.name], _default(f), help_, exclude))
            continue
        base = _default(f)
        if base is MISSING:
            raise TypeError(f"{cls.__name__}.{f.name}: a flattened field needs a default")
        for inner in settings(type(base)):
            if inner.name in f.metadata.get("exclude", ()):
                continue
            name = f"{f.name}_{inner.name}" if inner.name in taken else inner.name
            path = (f.name, *inner.path)
            found.append(Setting(name, path, inner.type, _get(base, inner.path), inner.help, inner.exclude))
    names = [s.name for s in found]
    if twice := sorted({n for n in names if names.count(n) > 1}):
        raise TypeError(f"{cls.__name__}: settings named twice: {twice}")
    return tuple(found)


def _key(name: str) -> str:
    """A field's key in its table: its name, less the underscore that lets a Python keyword be a
    field name (`async_` is the table `[async]`).

    >>> _key("async_"), _key("seed_")
    ('async', 'seed_')
    """
    return name[:-1] if keyword.iskeyword(name[:-1]) else name


def from_dict(cls: type, data: Mapping[str, Any], where: str = TOP_LEVEL, exclude: Sequence[str] = ()) -> Any:
    """Config dataclass `cls` from its table `data`: flat keys (see `settings`), sub-tables for
    nested configs that are not flattened; lists become tuples where the field is a tuple.

    Errors are `ConfigError`s that name the table, the bad key and the known ones:

    >>> from gfcr.core.policy import SamplingParams
    >>> from_dict(SamplingParams, {"max_token": 64}, "rollout")
    Traceback (most recent call last):
    ...
    gfcr.errors.ConfigError: [rollout]: unknown key 'max_token'; did you mean 'max_tokens'? Known: ...
    >>> from_dict(SamplingParams, {"top_p": 0}, "rollout")
    Traceback (most recent call last):
    ...
    gfcr.errors.ConfigError: [rollout] top_p must be in (0, 1], got 0
    """
    if not isinstance(data, Mapping):
        raise ConfigError(f"[{where}] must be a table, got {type(data).__name__}")
    table = {s.name: s for s in settings(cls) if s.name not in exclude}
    values: dict[tuple[str, ...], Any] = {}
    for key, value in data.items():
        if key not in table:
            close = difflib.get_close_matches(key, table, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ConfigError(f"[{where}]: unknown key {key!r}{hint} Known: {', '.join(sorted(table))}")
        s = table[key]
        values[s.path] = _convert(value, s, key if where == TOP_LEVEL else f"{where}.{key}")
    for s in table.values():
        if s.default is MISSING and s.path not in values:
            what = f"section [{s.name}]" if _is_config(s.type) else f"key {s.name!r}"
            raise ConfigError(f"[{where}]: missing {what}")
    return _construct(cls, values, where, base=None)


def to_dict(obj: Any, exclude: Sequence[str] = ()) -> dict[str, Any]:
    """The table of config `obj`: the inverse of `from_dict` (sub-configs as nested dicts).

    >>> from gfcr.core.policy import SamplingParams
    >>> to_dict(SamplingParams(max_tokens=64))["max_tokens"]
    64
    >>> from_dict(SamplingParams, to_dict(SamplingParams(top_p=0.9))) == SamplingParams(top_p=0.9)
    True
    """
    table: dict[str, Any] = {}
    for s in settings(type(obj)):
        if s.name in exclude:
            continue
        value = _get(obj, s.path)
        table[s.name] = to_dict(value, s.exclude) if _is_config(type(value)) else copy.deepcopy(value)
    return table


def _construct(cls: type, values: dict[tuple[str, ...], Any], where: str, base: Any) -> Any:
    """`cls` from values keyed by attribute path; `base` (an instance) supplies the rest."""
    kwargs: dict[str, Any] = {}
    for f in fields(cls):
        if not f.init:
            continue
        if f.metadata.get("flatten"):
            inner = {path[1:]: v for path, v in values.items() if path[0] == f.name}
            if inner:
                start = getattr(base, f.name) if base is not None else _default(f)
                kwargs[f.name] = _construct(type(start), inner, where, base=start)
        elif (f.name,) in values:
            kwargs[f.name] = values[(f.name,)]
    try:
        return cls(**kwargs) if base is None else dataclasses.replace(base, **kwargs)
    except TypeError as e:
        raise ConfigError(f"[{where}]: {e}") from e
    except ConfigError as e:
        if where == TOP_LEVEL or str(e).startswith("["):
            raise
        raise ConfigError(f"[{where}] {e}") from e  # name the table the bad value came from


def _convert(value: Any, s: Setting, where: str) -> Any:
    if _is_config(s.type) and isinstance(value, Mapping):
        return from_dict(s.type, value, where, s.exclude)
    if isinstance(value, list) and _is_tuple(s.type):
        return tuple(value)
    return value


def _is_config(type_: Any) -> bool:
    return isinstance(type_, type) and is_dataclass(type_)


def _is_tuple(type_: Any) -> bool:
    if type_ is tuple or typing.get_origin(type_) is tuple:
        return True
    if typing.get_origin(type_) in (typing.Union, types.UnionType):  # tuple[str, ...] | None
        return any(_is_tuple(arg) for arg in typing.get_args(type_))
    return False


def _get(obj: Any, path: tuple[str, ...]) -> Any:
    for name in path:
        obj = getattr(obj, name)
    return obj


def _default(f: dataclasses.Field) -> Any:
    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:
        return f.default_factory()
    return MISSING


def _types(cls: type) -> dict[str, Any]:
    """The fields' resolved types (a flattened field's class is known from its default too)."""
    known = {type(d).__name__: type(d) for f in fields(cls) if f.metadata.get("flatten")
             and (d := _default(f)) is not MISSING}  # fmt: skip
    return typing.get_type_hints(cls, localns=known)
