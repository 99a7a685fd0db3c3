"""results_match / execution_match: multiset semantics, column order, floats, types, ORDER BY by parsing."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gfcr.envs.sql import execution_match, results_match
from gfcr.envs.sql.matching import order_matters


def test_duplicates_count_and_order_is_free_by_default():
    gold = [(1, "a"), (1, "a"), (2, "b")]
    assert results_match([(2, "b"), (1, "a"), (1, "a")], gold)
    assert not results_match([(1, "a"), (2, "b")], gold)  # a set comparison would accept this
    assert not results_match([(1, "a"), (2, "b"), (2, "b")], gold)


def test_order_compared_only_when_asked():
    assert results_match([(2,), (1,)], [(1,), (2,)])
    assert not results_match([(2,), (1,)], [(1,), (2,)], order_matters=True)
    assert results_match([(1,), (2,)], [(1,), (2,)], order_matters=True)


def test_columns_are_matched_by_content_not_position():
    gold = [("AC/DC", 2, 1.5), ("Accept", 2, 3.0)]
    assert results_match([(2, 1.5, "AC/DC"), (2, 3.0, "Accept")], gold)
    assert results_match([(1.5, "AC/DC", 2), (3.0, "Accept", 2)], gold, order_matters=True)
    # two columns with the same values in a different pairing are not the same result
    assert not results_match([(1, 2), (2, 1)], [(1, 1), (2, 2)])
    assert not results_match([(1, "a")], [(1,)])  # an extra column is a different result


def test_ambiguous_columns_try_every_consistent_pairing():
    gold = [(1, 1, "x"), (2, 2, "y"), (3, 4, "z")]
    assert results_match([("x", 1, 1), ("y", 2, 2), ("z", 4, 3)], gold)
    assert not results_match([("x", 1, 1), ("y", 2, 2), ("z", 4, 4)], gold)


def test_floats_within_tolerance_and_numeric_types_agree():
    assert results_match([(0.1 + 0.2,)], [(0.3,)])
    assert results_match([(Decimal("5.65"),)], [(5.650000000000001,)])
    assert results_match([(3,)], [(Decimal("3.00"),)]) and results_match([(3.0,)], [(3,)])
    assert not results_match([(5.66,)], [(5.65,)])
    assert not results_match([(2.5 + 1e-4,)], [(2.5,)], float_tol=1e-6)
    assert results_match([(2.5 + 1e-4,)], [(2.5,)], float_tol=1e-3)
    assert results_match([(float("nan"),)], [(float("nan"),)])


def test_answers_off_by_more_than_float_noise_are_wrong():
    assert not results_match([(393599,)], [(393599.21,)])  # SUM(x) / COUNT(*) with integer division
    assert not results_match([(2328.6 - 0.002,)], [(2328.6,)])  # SUM(Total) - 0.002
    assert not results_match([(10**12,)], [(10**12 + 0.5,)])  # a fraction, however small relatively
    assert not results_match([(10**12,)], [(10**12 + 1,)])  # integers compare exactly
    assert results_match([(sum([0.1] * 10) * 1234.5,)], [(1234.5,)])  # the noise of another order


def test_tolerance_holds_when_float_noise_reorders_rows():
    gold = [(1.5000000000000002, "b"), (1.5, "a")]
    pred = [(1.5, "b"), (1.5000000000000002, "a")]
    assert results_match(pred, gold)


def test_null_dates_times_bytes_and_booleans_are_normalised():
    assert results_match([(None,)], [(None,)]) and not results_match([(None,)], [(0,)])
    assert not results_match([(None,)], [("",)])
    assert results_match([(dt.datetime(2009, 1, 1),)], [("2009-01-01 00:00:00",)])
    assert results_match([(dt.date(2024, 5, 1), dt.time(6, 0))], [("2024-05-01", "06:00:00")])
    assert results_match([(b"abc",)], [("abc",)]) and results_match([(memoryview(b"\xff"),)], [("ff",)])
    assert results_match([(True, False)], [(1, 0)])
    assert not results_match([("1",)], [(1,)])  # text is not a number


def test_columns_are_matched_when_numbers_round_alike_but_differ():
    gold = [(0, "a", -10.0), (0, "a", -9.999999999999998)]  # found by the shuffle property below
    assert results_match([(0, -9.999999999999998, "a"), (0, -10.0, "a")], gold)


def test_empty_results_and_row_count_mismatch():
    assert results_match([], [])
    assert not results_match([(1,)], [])
    assert not results_match([], [(1,)])


rows = st.lists(
    st.tuples(st.integers(-5, 5), st.sampled_from(["a", "b", None]), st.floats(-10, 10, allow_nan=False)),
    min_size=1,
    max_size=12,
)


@settings(max_examples=80, deadline=None)
@given(rows, st.randoms(use_true_random=False), st.permutations([0, 1, 2]))
def test_invariant_to_row_shuffles_and_column_permutations(gold, rng, columns):
    pred = [tuple(row[i] for i in columns) for row in gold]
    rng.shuffle(pred)
    assert results_match(pred, gold)


@settings(max_examples=80, deadline=None)
@given(rows, st.integers(0, 11))
def test_changing_one_value_breaks_the_match(gold, index):
    index %= len(gold)
    changed = list(gold)
    number, text, value = changed[index]
    changed[index] = (number + 100, text, value)
    assert not results_match(changed, gold)


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT a FROM t ORDER BY a", True),
        ("SELECT a FROM t", False),
        ("SELECT 'ORDER BY a' FROM t", False),
        ("SELECT * FROM (SELECT a FROM t ORDER BY a) AS s", False),
        ("SELECT a, RANK() OVER (ORDER BY a) FROM t", False),
        ("WITH s AS (SELECT a FROM t ORDER BY a) SELECT a FROM s", False),
        ("WITH s AS (SELECT a FROM t) SELECT a FROM s ORDER BY a DESC LIMIT 3", True),
        ("SELECT a FROM t UNION SELECT b FROM u ORDER BY 1", True),
        ("SELECT a FROM t -- ORDER BY a", False),
        ("(SELECT a FROM t ORDER BY a)", True),
    ],
)
def test_order_matters_is_read_from_the_outermost_select(sql, expected):
    for dialect in ("sqlite", "postgresql", "duckdb"):
        assert order_matters(sql, dialect) is expected


def test_execution_match_on_every_engine(chinook_db):
    engine = chinook_db.engine
    gold = "SELECT Name FROM Genre ORDER BY GenreId DESC"
    assert execution_match(engine, "SELECT Name FROM Genre ORDER BY GenreId DESC", gold)
    assert not execution_match(engine, "SELECT Name FROM Genre", gold)  # the gold's order matters
    unordered_gold = "SELECT GenreId, Name FROM Genre"
    assert execution_match(engine, "SELECT Name, GenreId FROM Genre ORDER BY Name", unordered_gold)
    assert not execution_match(engine, "SELECT DISTINCT UnitPrice FROM Track", "SELECT UnitPrice FROM Track")
    assert not execution_match(engine, "DELETE FROM Genre", unordered_gold)
    assert not execution_match(engine, "SELECT nonsense FROM nowhere", unordered_gold)
    # numeric types differ by engine (Decimal, float); the tolerance absorbs the float noise
    assert execution_match(
        engine, "SELECT SUM(Total) FROM Invoice", "SELECT ROUND(SUM(Total), 2) FROM Invoice"
    )


def test_execution_match_with_a_url(tmp_path):
    import sqlite3

    path = tmp_path / "t.sqlite"
    with sqlite3.connect(path) as connection:
        connection.executescript(
            "CREATE TABLE t (a INTEGER, b TEXT); INSERT INTO t VALUES (1, 'x'), (2, 'y'), (2, 'y');"
        )
    url = f"sqlite:///{path}"
    assert execution_match(url, "SELECT b, a FROM t", "SELECT a, b FROM t")
    assert not execution_match(url, "SELECT DISTINCT a, b FROM t", "SELECT a, b FROM t")
    assert execution_match(url, "SELECT a FROM t ORDER BY a DESC", "SELECT a FROM t ORDER BY 1 DESC")
    assert not execution_match(url, "SELECT a FROM t ORDER BY a", "SELECT a FROM t ORDER BY 1 DESC")
