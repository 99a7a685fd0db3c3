"""Comparing query results: multisets of rows, columns matched by content, floats within float noise.

Peers compare `frozenset`s of rows (SkyRL-gym) or sets (BIRD): that loses duplicates and order and
fails on 0.30000000000000004. Here two results match when some order of the predicted columns
makes the two row multisets equal — value by value after normalisation, floats within
`float_tol` (relative: float noise, not rounding) and an integer never equal to a fraction — and,
when the gold query's outermost SELECT has an ORDER BY, the rows also come in the same order.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator, Sequence
from functools import lru_cache
from typing import Any

import sqlglot
from sqlglot import expressions as exp

from gfcr.envs.sql.engines.normalize import Row, normalize_rows
from gfcr.envs.sql.engines.query_check import SQLGLOT_DIALECTS

MAX_COLUMN_PERMUTATIONS = 720  # 6! : more ambiguous column orders than this are not all tried
MAX_GREEDY_ROWS = 5_000  # row multisets compared pairwise (tolerant floats) up to this size
# Relative tolerance for floats: the noise of summing in another order (~1e-16 per operation),
# not a rounding: `SUM(x) - 0.002` or an integer division (393599 for 393599.21) must not match.
FLOAT_TOL = 1e-9


def results_match(
    pred_rows: Sequence[Sequence[Any]],
    gold_rows: Sequence[Sequence[Any]],
    *,
    order_matters: bool = False,
    float_tol: float = FLOAT_TOL,
) -> bool:
    """Whether two query results hold the same rows (as multisets, or in order).

    Columns may come in any order (they are matched by content); values are normalised
    (`normalize_value`: Decimal/float/int, dates and times as ISO text, bytes, NULL) and floats
    compared with relative tolerance `float_tol`; an integer never equals a fraction.

    >>> results_match([(1, "a"), (1, "a"), (2, "b")], [("b", 2.0), ("a", 1), ("a", 1)])
    True
    >>> results_match([(1,), (2,)], [(1,), (2,), (2,)])  # duplicates count
    False
    >>> results_match([(0.1 + 0.2,)], [(0.3,)]), results_match([(2,), (1,)], [(1,), (2,)], order_matters=True)
    (True, False)
    >>> results_match([(393599,)], [(393599.21,)]), results_match([(2328.598,)], [(2328.6,)])
    (False, False)
    """
    return match_normalized(
        normalize_rows(pred_rows), normalize_rows(gold_rows), order_matters=order_matters, float_tol=float_tol
    )


def shares_a_row(pred: Sequence[Row], gold: Sequence[Row]) -> bool:
    """Whether a result has the gold's number of columns and at least one of its rows, the columns
    in any order (a row's values compared as a multiset, exactly, after normalisation): a query
    that is partly right, not one that only names the right columns.

    >>> shares_a_row([("AC/DC", 1), ("x", 9)], [(1, "AC/DC"), (2, "Accept")])
    True
    >>> shares_a_row([(None, None)], [(1, "AC/DC")]), shares_a_row([(1,)], [(1, "AC/DC")])
    (False, False)
    """
    if not pred or not gold or len(pred[0]) != len(gold[0]):
        return False
    rows = {tuple(sorted(row, key=_value_key)) for row in gold}
    return any(tuple(sorted(row, key=_value_key)) in rows for row in pred)


def match_normalized(pred: list[Row], gold: list[Row], *, order_matters: bool, float_tol: float) -> bool:
    """`results_match` on rows already normalised (`normalize_rows`): the env caches the gold's."""
    if len(pred) != len(gold):
        return False
    if not gold:
        return True
    width = len(gold[0])
    if any(len(row) != width for row in pred) or any(len(row) != width for row in gold):
        return False
    if _rows_equal(pred, gold, order_matters, float_tol):  # the usual case: columns already in order
        return True
    identity = tuple(range(width))
    for order in _column_orders(pred, gold, width, float_tol):
        if order != identity and _rows_equal(
            [tuple(row[i] for i in order) for row in pred], gold, order_matters, float_tol
        ):
            return True
    return False


def _column_orders(pred: list[Row], gold: list[Row], width: int, tol: float) -> Iterator[tuple[int, ...]]:
    """Orders of the predicted columns under which each column's values equal the gold column's."""
    pred_columns = [_sorted_column(pred, i) for i in range(width)]
    gold_columns = [_sorted_column(gold, j) for j in range(width)]
    candidates = [
        [i for i in range(width) if _values_equal_seq(pred_columns[i], gold_columns[j], tol)]
        for j in range(width)
    ]
    for j, options in enumerate(candidates):  # try the same position first: the usual case
        if j in options:
            options.remove(j)
            options.insert(0, j)
    tried = 0

    def assign(j: int, used: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
        nonlocal tried
        if j == width:
            tried += 1
            yield used
            return
        for i in candidates[j]:
            if i not in used and tried < MAX_COLUMN_PERMUTATIONS:
                yield from assign(j + 1, (*used, i))

    yield from assign(0, ())


def _rows_equal(pred: list[Row], gold: list[Row], ordered: bool, tol: float) -> bool:
    if ordered:
        return all(_values_equal_seq(p, g, tol) for p, g in zip(pred, gold, strict=True))
    if Counter(pred) == Counter(gold):
        return True
    if not any(isinstance(value, float) for rows in (pred, gold) for row in rows for value in row):
        return False  # without floats, equality is exact: the Counter comparison was decisive
    pred_sorted, gold_sorted = sorted(pred, key=_row_key), sorted(gold, key=_row_key)
    if all(_values_equal_seq(p, g, tol) for p, g in zip(pred_sorted, gold_sorted, strict=True)):
        return True
    return len(gold) <= MAX_GREEDY_ROWS and _greedy_match(pred_sorted, gold_sorted, tol)


def _greedy_match(pred: list[Row], gold: list[Row], tol: float) -> bool:
    """Pair each predicted row with an equal unused gold row (floats near a rounding boundary)."""
    unused = list(gold)
    for row in pred:
        for index, candidate in enumerate(unused):
            if _values_equal_seq(row, candidate, tol):
                unused.pop(index)
                break
        else:
            return False
    return True


def _values_equal_seq(left: Sequence[Any], right: Sequence[Any], tol: float) -> bool:
    return all(_values_equal(a, b, tol) for a, b in zip(left, right, strict=True))


def _values_equal(a: Any, b: Any, tol: float) -> bool:
    if a == b:
        return True
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=tol)
    # Normalised, a whole number is an int (below 2**53), so an int and a float with a fraction
    # differ by what an integer division or a cast dropped, however small relative to them.
    if isinstance(a, float) and isinstance(b, int) or isinstance(a, int) and isinstance(b, float):
        return float(a).is_integer() and float(b).is_integer() and math.isclose(a, b, rel_tol=tol)
    return False


def _sorted_column(rows: list[Row], index: int) -> list[Any]:
    return sorted((row[index] for row in rows), key=_value_key)


def _value_key(value: Any) -> tuple[Any, ...]:
    """A total order over normalised values: NULL, then numbers (rounded), then text, then the rest.

    Numbers that round alike are ordered by their exact value, so that both sides put them in the
    same order: -10 (an int) and -9.999999999999998 round alike but never equal each other.
    """
    if value is None:
        return (0, 0)
    if isinstance(value, int | float):
        return (1, float(f"{value:.9g}") if isinstance(value, float) else value, value)
    if isinstance(value, str):
        return (2, value)
    return (3, repr(value))


def _row_key(row: Row) -> tuple[tuple[int, Any], ...]:
    return tuple(_value_key(value) for value in row)


@lru_cache(maxsize=4096)
def order_matters(sql: str, dialect: str) -> bool:
    """Whether the outermost SELECT of `sql` has an ORDER BY (parsed, not searched for).

    >>> order_matters("SELECT a FROM t ORDER BY a", "sqlite"), order_matters("SELECT 'ORDER BY a'", "sqlite")
    (True, False)
    >>> order_matters("SELECT * FROM (SELECT a FROM t ORDER BY a) AS s", "postgresql")
    False
    """
    tree = sqlglot.parse_one(sql, read=SQLGLOT_DIALECTS.get(dialect, dialect))
    while isinstance(tree, exp.Subquery) and not tree.args.get("order"):
        tree = tree.this
    return bool(tree.args.get("order"))
