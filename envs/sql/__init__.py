"""The SQL family: `gfcr/SQL-v0` on real databases (SQLite, DuckDB, PostgreSQL) through SQLAlchemy.

- `results_match(pred_rows, gold_rows, *, order_matters=False, float_tol=1e-9)`: compare results
  as multisets (or in order), columns matched by content, values normalised across drivers.
- `execution_match(engine_or_url, pred_sql, gold_sql)`: run both and compare, order taken from
  the gold query's outermost ORDER BY; agent SQL only ever reads (see `guard` and `drivers`).
- `SQLEnv`: the env; `SQLVerifier`: its grader, which also re-judges a saved trajectory by
  re-executing its submitted query; `TemporaryPostgres`: a throwaway server for tests and demos.
"""

from gfcr.envs.sql.engines.database import Database, execution_match
from gfcr.envs.sql.engines.pg_server import TemporaryPostgres
from gfcr.envs.sql.env import SQLEnv
from gfcr.envs.sql.matching import results_match
from gfcr.envs.sql.verifier import SQLVerifier, extract_sql, submitted_answer, submitted_sql
from gfcr.filter.semantic import AnswerFamily, register_answers

# Semantic clusters of SQL answers (gfcr.filter.semantic): correct results are one meaning.
register_answers("gfcr/SQL-", AnswerFamily(submitted_answer, reads_gold=True))

__all__ = [
    "Database",
    "SQLEnv",
    "SQLVerifier",
    "TemporaryPostgres",
    "execution_match",
    "extract_sql",
    "results_match",
    "submitted_answer",
    "submitted_sql",
]
