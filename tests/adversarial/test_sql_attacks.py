"""Standing adversarial suite for `gfcr/SQL-v0`: attacks that once got through, on every engine.

Each class of attack is run on SQLite, DuckDB and PostgreSQL (the `pg_url` throwaway server),
through the env or the guarded `Database` the env uses, so a future change cannot reopen it:

- time: queries whose single function calls outlive the limit (huge `printf` repeats, big
  random blobs in a cross join, DuckDB `repeat`/`lpad` strings of hundreds of MB) must end
  within 1.5x the limit, with a `QueryError` the model reads, and leave the database usable;
- text: a lone surrogate is a step result with a clear message, never an exception;
- grading: answers off by more than float noise (integer division, a constant offset) score 0;
- host paths: metadata functions and views must not show where the database lives on the host,
  however their names are quoted, and SQL given as text (`query('…')`) is never run;
- temporary storage: a query that sorts or materialises more than its cap fails with a clear
  message and writes no temporary file (SQLite and DuckDB keep temporaries in memory).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from gfcr.envs.sql import SQLEnv
from gfcr.envs.sql.data.catalog import EngineSpec, open_database
from gfcr.envs.sql.engines.database import Database
from gfcr.envs.sql.engines.drivers import DUCKDB_CONFIG
from gfcr.errors import QueryError

ENGINES = ("sqlite", "duckdb", "postgresql")
LIMIT_S = 1.0
MARGIN_S = 0.5  # thread wake-up, connection clean-up and a loaded CI machine


def _engine(engine: str, pg_url: str) -> str:
    return pg_url if engine == "postgresql" else engine


@pytest.fixture(params=ENGINES)
def engine(request):
    return request.param


@pytest.fixture
def chinook(engine, pg_url):
    return open_database(EngineSpec.parse(_engine(engine, pg_url)), "chinook")


# -- time limits ------------------------------------------------------------------------------

SLOW = {
    "sqlite": {
        "printf-repeat": "SELECT length(printf('%.*c', 2147483647, 'x'))",
        "printf-repeats": "SELECT length(printf('%.*c%.*c', 2147483647, 'x', 2147483647, 'y'))"
        " || length(printf('%.2147483647c', 'z'))",
        "randomblob-join": "SELECT sum(length(randomblob(9000000))) FROM Track a, Track b",
    },
    "duckdb": {
        "repeat-join": "SELECT sum(length(repeat('x', 100000))) FROM Track a, Track b, Track c",
        "range": "SELECT sum(range) FROM range(100000000000)",  # minutes of work (count(*) is O(1))
    },
    "postgresql": {
        "repeat": "SELECT length(repeat('x', 1000000000))",
        "md5-repeat": "SELECT md5(repeat('x', 500000000))",
        "series": "SELECT count(*) FROM generate_series(1, 10000000000)",
        "sleep": "SELECT pg_sleep(30)",
    },
}
SLOW_CASES = [(engine, name) for engine, queries in SLOW.items() for name in queries]


@pytest.mark.parametrize(("engine", "attack"), SLOW_CASES, ids=[f"{e}:{a}" for e, a in SLOW_CASES])
@pytest.mark.parametrize("check", [True, False], ids=["guarded", "engine-only"])
def test_queries_end_within_their_time_limit(chinook, engine, attack, check):
    started = time.monotonic()
    try:  # stopped at the limit, or (SQLite's printf) a NULL for a value over the length limit
        chinook.execute(SLOW[engine][attack], timeout_s=LIMIT_S, check=check)
    except QueryError as e:
        assert "time limit" in str(e)
    assert time.monotonic() - started < 1.5 * LIMIT_S + MARGIN_S
    assert chinook.execute("SELECT COUNT(*) FROM Genre").rows == [(25,)]


HUGE_STRING_CALLS = {  # one scalar call building hundreds of MB: DuckDB checks interrupt() between vectors only
    "lpad": "SELECT length(lpad('x', 150000000, 'y'))",
    "repeat": "SELECT length(repeat('x', 800000000))",
    "nested-repeat": "SELECT length(repeat(repeat('x', 100000), 10000))",
    "computed-repeat": "SELECT length(repeat('ab', (SELECT MAX(Milliseconds) FROM Track) * 100))",
}


@pytest.mark.parametrize("attack", HUGE_STRING_CALLS)
@pytest.mark.parametrize("check", [True, False], ids=["guarded", "engine-only"])
def test_duckdb_single_huge_string_call_ends_within_its_time_limit(attack, check):
    database = open_database(EngineSpec.parse("duckdb"), "chinook")
    database.execute("SELECT 1")  # DuckDB queries run in a worker process: started before the clock
    started = time.monotonic()
    with pytest.raises(QueryError, match="time limit"):
        database.execute(HUGE_STRING_CALLS[attack], timeout_s=LIMIT_S, check=check)
    assert time.monotonic() - started < 1.5 * LIMIT_S + MARGIN_S


def test_duckdb_answers_correctly_right_after_a_stopped_huge_string_call():
    database = open_database(EngineSpec.parse("duckdb"), "chinook")
    file = Path(database.engine.url.database or "")
    checksum = hashlib.sha256(file.read_bytes()).hexdigest()
    with pytest.raises(QueryError, match="time limit"):
        database.execute(HUGE_STRING_CALLS["repeat"], timeout_s=LIMIT_S)
    assert hashlib.sha256(file.read_bytes()).hexdigest() == checksum  # killing a reader changes nothing
    assert database.execute("SELECT COUNT(*) FROM Genre").rows == [(25,)]
    tracks = database.execute("SELECT TrackId, Name FROM Track ORDER BY TrackId", max_rows=2)
    assert tracks.rows == [(1, "For Those About To Rock (We Salute You)"), (2, "Balls to the Wall")]
    assert tracks.truncated
    assert database.check("SELECT COUNT(*) FROM Track", "SELECT COUNT(TrackId) FROM Track").match


def test_a_stopped_query_is_a_clear_observation_and_the_episode_goes_on(engine, pg_url):
    env = SQLEnv(dataset="chinook", engine=_engine(engine, pg_url), timeout_s=LIMIT_S)
    env.reset(options={"task_id": "chinook/001"})
    slow = {"sqlite": "randomblob-join", "duckdb": "range", "postgresql": "sleep"}[engine]
    call = {"name": "execute_sql", "arguments": {"query": SLOW[engine][slow]}}
    started = time.monotonic()
    observation, reward, terminated, truncated, info = env.step(f"<tool_call>{json.dumps(call)}</tool_call>")
    assert time.monotonic() - started < 1.5 * LIMIT_S + MARGIN_S
    assert "time limit" in observation and reward == 0.0 and not (terminated or truncated)
    assert info["signals"] == {"format_ok": True, "executed": False, "match": False, "turns": 1,
                               "explored": True, "explored_level": 0.0}  # fmt: skip
    answer = {"name": "submit_sql", "arguments": {"query": "SELECT COUNT(*) FROM Track"}}
    assert env.step(f"<tool_call>{json.dumps(answer)}</tool_call>")[1] == 1.0


# -- text that is not valid Unicode -----------------------------------------------------------


@pytest.mark.parametrize("mode", ["single_turn", "multi_turn"])
def test_a_lone_surrogate_is_a_step_result_not_an_exception(engine, pg_url, mode):
    env = SQLEnv(dataset="chinook", engine=_engine(engine, pg_url), mode=mode)
    env.reset(options={"task_id": "chinook/001"})
    query = "SELECT '\ud800'"
    call = {"name": "submit_sql", "arguments": {"query": query}}
    action = query if mode == "single_turn" else f"<tool_call>{json.dumps(call)}</tool_call>"
    observation, reward, terminated, _, info = env.step(action)
    assert "surrogate" in observation and "U+D800" in observation
    assert reward == 0.0 and terminated and not info["signals"]["executed"]


# -- grading ----------------------------------------------------------------------------------

WRONG_BY_A_LITTLE = {  # (gold, a wrong answer within 1e-6 of it); {div}: integer division
    "integer division": (
        "SELECT AVG(Milliseconds) FROM Track",
        "SELECT SUM(Milliseconds) {div} COUNT(*) FROM Track",
    ),
    "constant offset": ("SELECT SUM(Total) FROM Invoice", "SELECT SUM(Total) - 0.002 FROM Invoice"),
}


@pytest.mark.parametrize("case", WRONG_BY_A_LITTLE)
def test_answers_off_by_more_than_float_noise_do_not_match(chinook, engine, case):
    gold, wrong = WRONG_BY_A_LITTLE[case]
    wrong = wrong.format(div="//" if engine == "duckdb" else "/")  # DuckDB's / divides as floats
    assert chinook.check(gold, gold).match
    report = chinook.check(wrong, gold)
    assert report.executed and not report.match


# -- host paths -------------------------------------------------------------------------------

PATH_PROBES = {
    "sqlite": [
        "SELECT file FROM pragma_database_list",
        "SELECT * FROM pragma_database_list()",
        'SELECT * FROM "pragma_database_list"',
    ],
    "duckdb": [
        "SELECT path FROM duckdb_databases()",
        "SELECT * FROM duckdb_databases()",
        "SELECT value FROM duckdb_settings()",
        "SELECT current_setting('temp_directory')",
        "SELECT * FROM duckdb_extensions()",
        # quoted names, views without parentheses, pragma table functions, SQL given as text
        """SELECT "current_setting"('temp_directory')""",
        """SELECT * FROM "duckdb_settings"() WHERE name = 'temp_directory'""",
        """SELECT * FROM "duckdb_databases"()""",
        "SELECT * FROM duckdb_databases",
        "SELECT * FROM pragma_database_list",
        """SELECT * FROM "query"('SELECT path FROM duckdb_databases()')""",
        "SELECT * FROM information_schema.schemata",
    ],
    "postgresql": [
        "SELECT current_setting('data_directory')",
        """SELECT "current_setting"('data_directory')""",
        "SELECT setting FROM pg_settings WHERE name IN ('data_directory', 'config_file', 'hba_file')",
    ],
}


def test_host_paths_stay_hidden(engine, pg_url):
    env = SQLEnv(dataset="chinook", engine=_engine(engine, pg_url))
    env.reset(options={"task_id": "chinook/001"})
    host = str(Path.home()), "/tmp/", str(Path(env.database().engine.url.database or "/nowhere").parent)
    for query in PATH_PROBES[engine]:
        observation = env.execute_sql(query)
        assert not any(path in observation for path in host), f"{query!r} showed a host path: {observation}"


SQL_AS_TEXT = {  # functions that run a query given as a string, which the static check never sees
    "duckdb": ["""SELECT * FROM "query"('SELECT 4242 AS hidden')""", "SELECT * FROM Query('SELECT 4242')"],
    "postgresql": [
        """SELECT "query_to_xml"('SELECT 4242 AS hidden', true, false, '')""",
        r"""SELECT U&"\0071uery_to_xml"('SELECT 4242 AS hidden', true, false, '')""",  # q, escaped
    ],
}


@pytest.mark.parametrize("engine", list(SQL_AS_TEXT))
def test_sql_given_as_text_is_not_run(engine, pg_url):
    env = SQLEnv(dataset="chinook", engine=_engine(engine, pg_url))
    env.reset(options={"task_id": "chinook/001"})
    for query in SQL_AS_TEXT[engine]:
        observation = env.execute_sql(query)
        assert "not allowed" in observation and "4242" not in observation, observation


# -- temporary storage ------------------------------------------------------------------------

# Sorts 12 million rows: before the caps, hundreds of MB of temporary files within a 5 s limit.
SPILL = "SELECT a.TrackId, b.Name FROM Track a, Track b ORDER BY random()"
SQLITE_CAP_BYTES = 8_000_000  # a few MB, in place of 1 GB, so that the attack hits the cap in a moment
# SQLite's heap limit is process-wide and can only be lowered: the attack runs in its own process.
_SQLITE_CHILD = """
import sqlite3, sys
sqlite3.connect(":memory:").execute(f"PRAGMA hard_heap_limit = {sys.argv[1]}")
from gfcr.envs.sql.data.catalog import EngineSpec, open_database
from gfcr.errors import QueryError
database = open_database(EngineSpec.parse("sqlite"), "chinook")
try:
    database.execute(sys.argv[2], timeout_s=5.0)
    print("no error")
except QueryError as e:
    print(e)
print(database.execute("SELECT COUNT(*) FROM Genre").rows)
"""


def _open_file_bytes(pid: int, directory: Path) -> int:
    """The bytes of the files under `directory` that process `pid` holds open (deleted ones too)."""
    total = 0
    for fd in Path(f"/proc/{pid}/fd").glob("*"):
        try:
            if os.readlink(fd).startswith(str(directory)):
                total += fd.stat().st_size
        except OSError:  # closed meanwhile, or the process ended
            pass
    return total


def _directory_bytes(directory: Path, but: Path) -> int:
    """The bytes of the files under `directory`, but one."""
    total = 0
    for file in directory.rglob("*"):
        try:
            total += file.stat().st_size if file.is_file() and file != but else 0
        except OSError:  # deleted meanwhile
            pass
    return total


def test_sqlite_keeps_temporaries_in_memory_under_a_cap(tmp_path):
    temp = tmp_path / "tmp"  # where SQLite would write its temporary files (they are unlinked at once)
    temp.mkdir()
    child = subprocess.Popen(
        [sys.executable, "-c", _SQLITE_CHILD, str(SQLITE_CAP_BYTES), SPILL],
        env={**os.environ, "SQLITE_TMPDIR": str(temp), "TMPDIR": str(temp)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    peak, deadline = 0, time.monotonic() + 60
    while child.poll() is None and time.monotonic() < deadline:
        peak = max(peak, _open_file_bytes(child.pid, temp))
        time.sleep(0.01)
    out, err = child.communicate(timeout=10)
    assert child.returncode == 0, err
    message, genres = out.splitlines()
    assert "needs more memory than SQLite may use here (at most 8 MB in this process)" in message
    assert "never written to disk" in message
    assert peak == 0, f"{peak} bytes of temporary files"  # before: hundreds of MB until the time limit
    assert genres == "[(25,)]"


def test_duckdb_keeps_temporaries_in_memory_under_a_cap(tmp_path):
    path = tmp_path / "chinook.duckdb"  # DuckDB would spill into chinook.duckdb.tmp beside it
    shutil.copy(open_database(EngineSpec.parse("duckdb"), "chinook").engine.url.database or "", path)
    config = {**DUCKDB_CONFIG, "memory_limit": "32MB"}  # in place of 1 GB (DuckDB needs a few MB to run at all)
    engine = sa.create_engine(f"duckdb:///{path}", connect_args={"read_only": True, "config": config})
    database = Database(engine)
    peak, done = [0], threading.Event()

    def watch() -> None:
        while not done.wait(0.01):
            peak[0] = max(peak[0], _directory_bytes(tmp_path, but=path))

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        with pytest.raises(QueryError, match="needs more memory than DuckDB may use here") as refused:
            database.execute(SPILL, timeout_s=5.0)
    finally:
        done.set()
        watcher.join()
    assert "Out of Memory" in str(refused.value) and "never written to disk" in str(refused.value)
    assert peak[0] == 0, f"{peak[0]} bytes of temporary files"  # before: a spill until the time limit
    assert database.execute("SELECT COUNT(*) FROM Genre").rows == [(25,)]
    database.close()


def test_postgres_caps_temporary_files(pg_url):
    database = open_database(EngineSpec.parse(pg_url), "chinook")
    setting = "SELECT setting, unit FROM pg_settings WHERE name = 'temp_file_limit'"
    assert database.execute(setting, check=False).rows == [("1048576", "kB")]  # 1 GB per query
