"""Bring your own: Spider- and BIRD-format task files with their SQLite databases, from a local path.

Spider (`dev.json`): a list of `{"db_id", "question", "query"}`, databases at
`<db_dir>/<db_id>/<db_id>.sqlite` with `db_dir` the sibling `database/` folder. BIRD (`dev.json`):
`{"question_id", "db_id", "question", "evidence", "SQL", "difficulty"}`, databases under the sibling
`dev_databases/` (`<split>_databases/`). Pass `db_dir` when yours live elsewhere.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gfcr.envs.sql.data.questions import SQLQuestion
from gfcr.errors import DataError

_DIFFICULTIES = {
    "simple": "easy", "easy": "easy", "moderate": "medium", "medium": "medium",
    "challenging": "hard", "hard": "hard", "extra": "hard",
}  # fmt: skip


def load_spider_or_bird(
    path: str | Path, db_dir: str | Path | None = None
) -> tuple[list[SQLQuestion], dict[str, Path]]:
    """The questions of a Spider/BIRD task file and the SQLite file of each database they use.

    Question ids are `<file stem>/<question_id or position>`; the database name is `db_id`.
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(
            f"SQL task file {str(path)!r} does not exist; pass the path of a Spider or BIRD .json file"
        )
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise DataError(f"{path}: not valid JSON ({e.msg} at line {e.lineno})") from e
    if not isinstance(rows, list):
        raise DataError(f"{path}: expected a JSON list of questions, got {type(rows).__name__}")
    root = Path(db_dir) if db_dir is not None else _default_db_dir(path)
    questions, databases = [], {}
    for position, row in enumerate(rows):
        question = _question(path, position, row)
        if question.database not in databases:
            databases[question.database] = _database_file(root, question.database, path)
        questions.append(question)
    return questions, databases


def _question(path: Path, position: int, row: Any) -> SQLQuestion:
    if not isinstance(row, dict) or "db_id" not in row or "question" not in row:
        raise DataError(f"{path}: question {position} needs 'db_id' and 'question' (Spider or BIRD format)")
    sql = row.get("SQL", row.get("query"))
    if not isinstance(sql, str) or not sql.strip():
        raise DataError(f"{path}: question {position} has no gold SQL ('query' in Spider, 'SQL' in BIRD)")
    key = row.get("question_id", position)
    difficulty = _DIFFICULTIES.get(
        str(row.get("difficulty", row.get("hardness", "medium"))).lower(), "medium"
    )
    return SQLQuestion(
        id=f"{path.stem}/{key}",
        database=str(row["db_id"]),
        question=str(row["question"]),
        sql=sql.strip(),
        difficulty=difficulty,  # type: ignore[arg-type]
        features=(),
        evidence=str(row.get("evidence") or ""),
    )


def _default_db_dir(path: Path) -> Path:
    for candidate in (path.parent / "database", path.parent / f"{path.stem}_databases", path.parent):
        if candidate.is_dir():
            return candidate
    return path.parent


def _database_file(root: Path, db_id: str, path: Path) -> Path:
    for candidate in (
        root / db_id / f"{db_id}.sqlite",
        root / f"{db_id}.sqlite",
        root / db_id / f"{db_id}.db",
    ):
        if candidate.is_file():
            return candidate
    raise DataError(
        f"{path}: no SQLite file for database {db_id!r} under {root} (looked for {db_id}/{db_id}.sqlite); "
        "pass db_dir= to name the folder that holds the databases"
    )
