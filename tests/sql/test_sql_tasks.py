"""The bundled questions: enough of them, over both schemas and every feature, and every gold query valid.

"Valid" is checked by `gfcr.envs.sql.data.validate` on all three engines: the gold runs and returns
rows everywhere, gives the same result everywhere, and its order does not rest on ties or NULLs.
The validator itself is tested on gold queries that break each rule.
"""

from __future__ import annotations

from collections import Counter

import pytest

from gfcr.envs.sql.data.catalog import BUNDLED
from gfcr.envs.sql.data.questions import SQLQuestion
from gfcr.envs.sql.data.validate import validate_question

QUESTIONS = [question for questions in BUNDLED.values() for question in questions]


def test_at_least_80_questions_over_both_schemas_with_unique_ids():
    assert len(QUESTIONS) >= 80
    assert len({q.id for q in QUESTIONS}) == len(QUESTIONS)
    per_database = Counter(q.database for q in QUESTIONS)
    assert (
        per_database["chinook"] >= 40
        and per_database["tau2_retail"] >= 15
        and per_database["tau2_airline"] >= 15
    )


def test_questions_range_from_simple_filters_to_windows_and_dates():
    difficulties = Counter(q.difficulty for q in QUESTIONS)
    assert min(difficulties[level] for level in ("easy", "medium", "hard")) >= 15
    features = Counter(feature for q in QUESTIONS for feature in q.features)
    for feature in (
        "filter",
        "join",
        "group",
        "having",
        "subquery",
        "cte",
        "window",
        "date",
        "set_op",
        "left_join",
    ):
        assert features[feature] >= 2, feature
    assert features["window"] >= 5 and features["date"] >= 8


def test_every_gold_query_is_valid_on_every_engine(databases):
    report = {}
    for question in QUESTIONS:
        engines = {engine: databases[engine][question.database] for engine in databases}
        if problems := validate_question(question, engines):
            report[question.id] = problems
    assert report == {}


def _question(sql: str, **dialect_sql: str) -> SQLQuestion:
    return SQLQuestion("test/1", "chinook", "?", sql, "easy", (), dialect_sql)


@pytest.mark.parametrize(
    ("sql", "problem"),
    [
        ("SELECT Name, Milliseconds FROM Track ORDER BY Milliseconds DESC", "ORDER BY ties"),
        (
            "SELECT BillingCountry, COUNT(*) FROM Invoice GROUP BY BillingCountry ORDER BY 2 DESC LIMIT 5",
            "ORDER BY ties",
        ),
        (
            "SELECT Name FROM Track ORDER BY UnitPrice DESC LIMIT 3",
            "ORDER BY ties",
        ),  # a key that is not selected
        ("SELECT TrackId, Composer FROM Track ORDER BY Composer, TrackId LIMIT 3", "NULL"),
        ("SELECT Name FROM Track LIMIT 5", "LIMIT without ORDER BY"),
        (
            "SELECT COUNT(*) FROM (SELECT TrackId FROM Track ORDER BY Milliseconds LIMIT 10) AS t",
            "LIMIT inside a subquery",
        ),
        ("SELECT Name FROM Genre WHERE Name = 'no such genre'", "returns no rows"),
        ("SELECT 7 / 2", "different results"),  # integer division in SQLite and PostgreSQL, not in DuckDB
        ("SELECT strftime('%Y', InvoiceDate) FROM Invoice", "fails"),
    ],
)
def test_the_validator_catches_bad_gold(databases, sql, problem):
    engines = {engine: databases[engine]["chinook"] for engine in databases}
    problems = validate_question(_question(sql), engines)
    assert any(problem in p for p in problems), problems


def test_the_validator_accepts_tie_free_orders(databases):
    engines = {engine: databases[engine]["chinook"] for engine in databases}
    good = "SELECT Name, Milliseconds FROM Track ORDER BY Milliseconds DESC, TrackId LIMIT 5"
    assert validate_question(_question(good), engines) == []
    tied_but_identical = (
        "SELECT Country FROM Customer ORDER BY Country"  # equal keys, equal rows: order is fixed
    )
    assert validate_question(_question(tied_but_identical), engines) == []
