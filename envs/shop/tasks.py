"""The shop's tasks: every instance of each kind, its gold computed by the kind's procedure.

A kind (`gfcr.workloads.KINDS`) is a question template and the tool procedure that answers it:
`convert` (price, convert), `tax` (price, tax), `coupon` (price, discount), `coupon_convert`
(price, discount, convert). Its tasks are every combination of the arguments its procedure takes
(item, currency, region, coupon code), in a fixed order, so a kind holds no two tasks with one
prompt. Ids are `shop/<kind>/<i>`, the same whichever kinds a source holds: a task of a kind left
out of training is never in the training pool. Metadata: `kind`, `category` (`shop/<kind>`, what
skill statistics and curricula group by) and `params`.
"""

from __future__ import annotations

import functools
import inspect
import itertools
from collections.abc import Sequence

from gfcr.core import Task
from gfcr.envs.tasks import TaskSource
from gfcr.errors import ConfigError, UnknownNameError
from gfcr.workloads import CHOICES, FUNCTIONS, KINDS, run_procedure

INSTRUCTION = "Use the tools, then reply with the final number only."


def shop_tasks(kinds: str | Sequence[str] | None = None) -> TaskSource:
    """The tasks of `kinds` (default: every kind), kind after kind.

    >>> source = shop_tasks(["coupon"])
    >>> len(source), source[0].id, source[0].gold
    (24, 'shop/coupon/0', 0.45)
    >>> source[0].prompt
    'With coupon SAVE10, what is the price of a apple? Use the tools, then reply with the final number only.'
    """
    kinds = list(KINDS) if kinds is None else [kinds] if isinstance(kinds, str) else list(kinds)
    if not kinds:
        raise ConfigError(f"kinds must name at least one shop task kind of {list(KINDS)}, got none")
    for kind in kinds:
        if kind not in KINDS:
            raise UnknownNameError("shop task kind", kind, list(KINDS))
    sizes = tuple(len(_instances(kind)) for kind in kinds)
    # partials of module-level functions, not closures: the env must pickle
    build = functools.partial(_build_at, tuple(kinds), sizes)
    index_of = functools.partial(_index_of, tuple(kinds), sizes)
    return TaskSource(f"shop-{'+'.join(kinds)}", sum(sizes), build, index_of)


def arguments(kind: str) -> list[str]:
    """The arguments a kind's procedure takes from its task (all but the running `amount`).

    >>> arguments("coupon_convert")
    ['item', 'code', 'currency']
    """
    names = (p for tool in KINDS[kind][1] for p in inspect.signature(FUNCTIONS[tool]).parameters)
    return [name for name in dict.fromkeys(names) if name != "amount"]


@functools.cache
def _instances(kind: str) -> list[dict[str, str]]:
    names = arguments(kind)
    combinations = itertools.product(*(CHOICES[name] for name in names))
    return [dict(zip(names, values, strict=True)) for values in combinations]


def _build_at(kinds: Sequence[str], sizes: Sequence[int], index: int) -> Task:
    for kind, size in zip(kinds, sizes, strict=True):
        if index < size:
            return _build(kind, index)
        index -= size
    raise IndexError(index)


def _build(kind: str, index: int) -> Task:
    template, procedure = KINDS[kind]
    params = _instances(kind)[index]
    metadata = {"kind": kind, "category": f"shop/{kind}", "params": params}
    prompt = f"{template.format(**params)} {INSTRUCTION}"
    return Task(f"shop/{kind}/{index}", prompt, run_procedure(procedure, params), "shop", metadata)


def _index_of(kinds: Sequence[str], sizes: Sequence[int], task_id: str) -> int | None:
    family, _, rest = task_id.partition("/")
    kind, _, number = rest.partition("/")
    if family != "shop" or kind not in kinds or not number.isdigit():
        return None
    position = kinds.index(kind)
    index = int(number)
    return sum(sizes[:position]) + index if index < sizes[position] else None
