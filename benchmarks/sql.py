"""Match checks per second and exploration-step latency of gfcr's SQL env beside SkyRL-gym's SQL reward.

Run from the repository root (SkyRL-gym lives in the peer venv: `bash benchmarks/setup_peers.sh`):

    .venv/bin/python benchmarks/sql.py --json docs/bench_sql.json

Same tasks, same database files: the bundled questions (Chinook, tau2 retail and airline) and the
SQLite files gfcr builds; SkyRL-gym reads them through symlinks in its `spider/database` layout.

- Match checks/s, predicted query = the gold query, made unique per attempt by a leading comment
  (no statement cache can serve a repeat). gfcr: `execution_match(url, pred, gold)` (the gold's
  result is cached per process, as the env does), and again with the gold re-run every check
  (`Database.check` with its gold cache cleared); the env: `reset` + `submit_sql` episodes/s.
  SkyRL-gym: `compute_score_single("<think>…</think><solution>pred</solution>", gold, db_file)`.
- Agreement: labelled (predicted, gold) pairs built by construction from the same questions —
  the gold itself, its columns reversed (correct), DISTINCT added where the result has duplicate
  rows (wrong), the first ORDER BY key reversed where the question asks for an order (wrong), one
  row dropped (wrong) — plus hand-written float pairs (the same sum, added in another order).
- Exploration step latency: one `execute_sql` tool call through `env.step` on SQLite, DuckDB and
  PostgreSQL (a throwaway server from the Debian binaries), against SkyRL-gym's `SQLEnv.step`
  with an `<sql>` action on SQLite. Single process, 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlglot
from _sql_peers import latency, rate, unique
from sqlglot import expressions as exp

from gfcr.envs.sql import Database, SQLEnv, TemporaryPostgres, execution_match
from gfcr.envs.sql.data.build import ensure_file_database
from gfcr.envs.sql.data.catalog import BUNDLED
from gfcr.envs.sql.engines.normalize import normalize_rows

BENCH_DIR = Path(__file__).resolve().parent
PEER_PYTHON = BENCH_DIR / ".venv-peers" / "bin" / "python"
QUESTIONS = [question for questions in BUNDLED.values() for question in questions]
FLOAT_PAIRS = [  # (predicted, gold): the same sums, added in another order (label: correct)
    (
        "SELECT BillingCountry, SUM(Total) FROM (SELECT * FROM Invoice ORDER BY Total DESC) AS i "
        "GROUP BY BillingCountry",
        "SELECT BillingCountry, SUM(Total) FROM Invoice GROUP BY BillingCountry",
    ),
    (
        "SELECT CustomerId, SUM(Total) FROM (SELECT * FROM Invoice ORDER BY InvoiceDate DESC) AS i "
        "GROUP BY CustomerId",
        "SELECT CustomerId, SUM(Total) FROM Invoice GROUP BY CustomerId",
    ),
    (
        "SELECT SUM(UnitPrice * Quantity) FROM "
        "(SELECT * FROM InvoiceLine ORDER BY UnitPrice, InvoiceLineId DESC) AS l",
        "SELECT SUM(UnitPrice * Quantity) FROM InvoiceLine",
    ),
    ("SELECT AVG(Total) * 1.0 FROM Invoice", "SELECT SUM(Total) / COUNT(*) FROM Invoice"),
]


def labelled_cases(files: dict[str, Path]) -> list[dict[str, Any]]:
    """(predicted, gold, label, form) pairs for every bundled question where each form applies."""
    cases = []
    for question in QUESTIONS:
        gold = question.gold_for("sqlite")
        database = Database.from_url(f"sqlite:///{files[question.database]}")
        rows = normalize_rows(database.execute(gold, max_rows=100_000).rows)
        tree = sqlglot.parse_one(gold, read="sqlite")
        forms = [("same query", gold, True)]
        if (reversed_columns := _reverse_columns(tree)) is not None:
            forms.append(("columns reversed", reversed_columns, True))
        if len(set(rows)) < len(rows) and isinstance(tree, exp.Select) and not tree.args.get("distinct"):
            forms.append(("DISTINCT added (duplicates lost)", _with(tree, distinct=exp.Distinct()), False))
        if (reversed_order := _reverse_order(tree)) is not None:
            flipped = normalize_rows(database.execute(reversed_order, max_rows=100_000).rows)
            if flipped != rows:
                forms.append(("ORDER BY reversed", reversed_order, False))
        if len(rows) >= 2 and not tree.args.get("limit"):
            forms.append(("one row dropped", f"{gold} LIMIT {len(rows) - 1}", False))
        for form, pred, label in forms:
            cases.append(
                {
                    "db_file": str(files[question.database]),
                    "gold": gold,
                    "pred": pred,
                    "label": label,
                    "form": form,
                }
            )
    for pred, gold in FLOAT_PAIRS:
        cases.append(
            {
                "db_file": str(files["chinook"]),
                "gold": gold,
                "pred": pred,
                "label": True,
                "form": "float sums reordered",
            }
        )
    return cases


def _with(tree: exp.Expression, **args: Any) -> str:
    copy = tree.copy()
    for key, value in args.items():
        copy.set(key, value)
    return copy.sql(dialect="sqlite")


def _reverse_columns(tree: exp.Expression) -> str | None:
    if (
        not isinstance(tree, exp.Select)
        or len(tree.expressions) < 2
        or any(isinstance(e, exp.Star) for e in tree.expressions)
    ):
        return None
    order = tree.args.get("order")
    if order is not None and any(isinstance(o.this, exp.Literal) for o in order.expressions):
        return None  # ORDER BY 2 would name another column
    copy = tree.copy()
    copy.set("expressions", list(reversed(copy.expressions)))
    return copy.sql(dialect="sqlite")


def _reverse_order(tree: exp.Expression) -> str | None:
    order = tree.args.get("order")
    if order is None:
        return None
    copy = tree.copy()
    first = copy.args["order"].expressions[0]
    first.set("desc", not first.args.get("desc"))
    return copy.sql(dialect="sqlite")


def gfcr_agreement(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {**case, "verdict": execution_match(f"sqlite:///{case['db_file']}", case["pred"], case["gold"])}
        for case in cases
    ]


def gfcr_throughput(cases: list[dict[str, Any]], min_seconds: float) -> dict[str, dict]:
    def cached(attempt: int, case: dict[str, Any]) -> bool:
        return execution_match(f"sqlite:///{case['db_file']}", unique(case["pred"], attempt), case["gold"])

    databases = {path: Database.from_url(f"sqlite:///{path}") for path in {case["db_file"] for case in cases}}

    def rerun_gold(attempt: int, case: dict[str, Any]) -> bool:
        database = databases[case["db_file"]]
        database._gold.clear()  # noqa: SLF001  # measure the check with the gold executed every time
        return database.check(unique(case["pred"], attempt), case["gold"]).match

    env = SQLEnv()
    ids = env.tasks.ids()

    def episode(attempt: int, case: dict[str, Any]) -> float:
        task_id = ids[case["index"]]
        _, info = env.reset(options={"task_id": task_id})
        call = {"name": "submit_sql", "arguments": {"query": unique(info["task"].gold, attempt)}}
        return env.step(f"<tool_call>{json.dumps(call)}</tool_call>")[1]

    indexed = [{"index": i} for i in range(len(ids))]
    return {
        "gfcr execution_match (gold cached)": rate(cached, cases, min_seconds),
        "gfcr Database.check (gold re-run)": rate(rerun_gold, cases, min_seconds),
        "gfcr SQL-v0 episode (reset + submit_sql)": rate(episode, indexed, min_seconds),
    }


def gfcr_exploration(engines: dict[str, str], repeats: int) -> dict[str, dict]:
    results = {}
    for name, engine in engines.items():
        env = SQLEnv(engine=engine)
        tasks = [env.tasks[i] for i in range(len(env.tasks))]

        def step(attempt: int, case: dict[str, Any], env: SQLEnv = env) -> str:
            if env.task is None or env.task.id != case["task"].id:
                env.reset(options={"task_id": case["task"].id})
            call = {"name": "execute_sql", "arguments": {"query": unique(case["task"].gold, attempt)}}
            return env.step(f"<tool_call>{json.dumps(call)}</tool_call>")[0]

        env.max_turns = 10**9  # exploration only: never hit the turn limit while timing
        results[f"gfcr SQL-v0 execute_sql step ({name})"] = latency(
            step, [{"task": t} for t in tasks], repeats
        )
    return results


def run_peers(job: dict[str, Any]) -> dict[str, Any]:
    if not PEER_PYTHON.exists():
        sys.exit(f"no peer venv at {PEER_PYTHON}; create it with `bash benchmarks/setup_peers.sh`")
    completed = subprocess.run(
        [str(PEER_PYTHON), str(BENCH_DIR / "_sql_peers.py")],
        input=json.dumps(job),
        text=True,
        stdout=subprocess.PIPE,
        check=True,
    )
    return json.loads(completed.stdout)


def summarise(verdicts: list[dict[str, Any]]) -> dict[str, Any]:
    forms: dict[str, list[int]] = {}
    for case in verdicts:
        right = forms.setdefault(case["form"], [0, 0])
        right[0] += case["verdict"] == case["label"]
        right[1] += 1
    correct = sum(case["verdict"] == case["label"] for case in verdicts)
    return {
        "accuracy": round(correct / len(verdicts), 4),
        "false_positives": sum(case["verdict"] and not case["label"] for case in verdicts),
        "false_negatives": sum(case["label"] and not case["verdict"] for case in verdicts),
        "per_form": {form: f"{right}/{total}" for form, (right, total) in forms.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="also write the results to this JSON file")
    parser.add_argument(
        "--min-seconds", type=float, default=5.0, help="time each throughput for at least this long"
    )
    parser.add_argument("--explore-repeats", type=int, default=5, help="exploration steps per question")
    parser.add_argument("--no-postgres", action="store_true", help="skip PostgreSQL (no server binaries)")
    args = parser.parse_args()

    files = {name: ensure_file_database(name, "sqlite") for name in BUNDLED}
    ensure_file_database("chinook", "duckdb")
    cases = labelled_cases(files)
    throughput_cases = [
        {"db_file": str(files[q.database]), "gold": q.gold_for("sqlite"), "pred": q.gold_for("sqlite")}
        for q in QUESTIONS
    ]
    with tempfile.TemporaryDirectory() as root:
        for (
            name,
            path,
        ) in files.items():  # SkyRL-gym's layout: <db_path>/spider/database/<db_id>/<db_id>.sqlite
            folder = Path(root) / "spider" / "database" / name
            folder.mkdir(parents=True)
            (folder / f"{name}.sqlite").symlink_to(path)
        explore = [{"db_id": q.database, "query": q.gold_for("sqlite")} for q in QUESTIONS]
        peers = run_peers(
            {
                "labelled": cases,
                "throughput": throughput_cases,
                "explore": explore,
                "explore_repeats": args.explore_repeats,
                "min_seconds": args.min_seconds,
                "skyrl_db_path": root,
            }
        )
    server = None if args.no_postgres else TemporaryPostgres()
    engines = {"SQLite": "sqlite", "DuckDB": "duckdb"}
    if server is not None:
        engines["PostgreSQL"] = server.start()
    try:
        results = {
            "throughput": {
                **gfcr_throughput(throughput_cases, args.min_seconds),
                "SkyRL-gym compute_score_single": peers["throughput"],
            },
            "exploration": {
                **gfcr_exploration(engines, args.explore_repeats),
                "SkyRL-gym SQLEnv.step <sql> (SQLite)": peers["exploration"],
            },
            "agreement": {
                "gfcr execution_match": summarise(gfcr_agreement(cases)),
                "SkyRL-gym": summarise(peers["agreement"]),
            },
        }
    finally:
        if server is not None:
            server.stop()
    results["meta"] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 2),
        "questions": len(QUESTIONS),
        "labelled_pairs": len(cases),
    }
    text = json.dumps(results, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
