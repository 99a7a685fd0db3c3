"""Standing adversarial suite for `gfcr/SQL-v0`: attacks that once got through, on every engine.

Each class of attack is run on SQLite, DuckDB and PostgreSQL (the `pg_url` throwaway server),
through the env or the guarded `Database` the env uses, so a future change cannot reopen it:

- time: queries whose single function calls outlive the limit (huge `printf` repeats, big
  random blobs in a cross join, DuckDB `repeat`/`lpad` strings of hundreds of MB) must end
  within 1.5x the limit, with a `QueryError` the model reads, and leave the database usable;
- text: a lone surrogate is a step result with a clear message, never an exception;
- grading: answers off by more than float noise (integer division, a constant offset) score 0;
- host paths: metadata functions must not show where the database lives on the host.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import pytest

from gfcr.envs.sql import SQLEnv
from gfcr.envs.sql.data.catalog import EngineSpec, open_database
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
    assert info["signals"] == {"format_ok": True, "executed": False, "match": False, "turns": 1}
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
    "sqlite": ["SELECT file FROM pragma_database_list", "SELECT * FROM pragma_database_list()"],
    "duckdb": [
        "SELECT path FROM duckdb_databases()",
        "SELECT * FROM duckdb_databases()",
        "SELECT value FROM duckdb_settings()",
        "SELECT current_setting('temp_directory')",
        "SELECT * FROM duckdb_extensions()",
    ],
    "postgresql": [
        "SELECT current_setting('data_directory')",
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
