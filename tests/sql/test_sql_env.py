"""gfcr/SQL-v0: the oracle scores 1.0 on every task on every engine, junk scores about 0, the tools behave."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import gymnasium as gym
import pytest

import gfcr
from gfcr.agents.policies.scripted import OraclePolicy, RandomPolicy
from gfcr.agents.runner.rollout import rollout
from gfcr.envs.sql import SQLEnv
from gfcr.errors import ConfigError, UnknownNameError

DATA = Path(__file__).parent / "data"


def _call(name: str, query: str) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': {'query': query}})}</tool_call>"


def _engine_kwargs(engine: str, pg_url: str) -> dict:
    return {"engine": pg_url if engine == "postgresql" else engine}


def test_registered_and_in_the_suites():
    assert "gfcr/SQL-v0" in gfcr.list_envs()
    assert "sql" in gfcr.list_suites()
    assert any(entry.env_id == "gfcr/SQL-v0" for entry in gfcr.make_suite("smoke").entries)
    assert len(gfcr.make_suite("sql")) == 2 * len(SQLEnv().tasks)


def test_the_oracle_scores_one_on_every_task_on_every_engine(engine, pg_url):
    env = gym.make("gfcr/SQL-v0", **_engine_kwargs(engine, pg_url))
    policy = OraclePolicy()
    task_ids = env.unwrapped.tasks.ids()
    rewards = [
        rollout(env, policy, env_id="gfcr/SQL-v0", task_id=task_id).total_reward for task_id in task_ids
    ]
    assert len(rewards) >= 80 and rewards == [1.0] * len(rewards)


def test_the_oracle_scores_one_in_single_turn_mode():
    env = gym.make("gfcr/SQL-v0", mode="single_turn")
    policy = OraclePolicy()
    trajectories = [rollout(env, policy, env_id="gfcr/SQL-v0", task_id=t) for t in env.unwrapped.tasks.ids()]
    assert all(t.total_reward == 1.0 and len(t.steps) == 1 for t in trajectories)


@pytest.mark.parametrize("mode", ["multi_turn", "single_turn"])
def test_random_junk_scores_about_zero(mode):
    env = gym.make("gfcr/SQL-v0", mode=mode, max_turns=3)
    policy = RandomPolicy(seed=1)
    rewards = [rollout(env, policy, env_id="gfcr/SQL-v0", seed=seed).total_reward for seed in range(60)]
    assert sum(rewards) / len(rewards) <= 0.05


def test_explore_then_submit(engine, pg_url):
    env = SQLEnv(dataset="chinook", **_engine_kwargs(engine, pg_url))
    obs, info = env.reset(options={"task_id": "chinook/019"})
    assert (
        "CREATE TABLE Artist" in obs
        and "AC/DC" in obs
        and "Question: Which artists have at least 5 albums" in obs
    )
    assert [tool["function"]["name"] for tool in info["tools"]] == ["execute_sql", "submit_sql"]

    obs, reward, terminated, truncated, info = env.step(
        _call("execute_sql", "SELECT Name FROM Artist ORDER BY ArtistId")
    )
    assert obs.startswith("275 rows (first 20 shown)") and "AC/DC\nAccept" in obs
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert info["signals"] == {"format_ok": True, "executed": True, "match": False, "turns": 1,
                               "explored": True, "explored_level": 0.0}  # fmt: skip
    assert info["messages"][0].role == "tool" and info["messages"][0].name == "execute_sql"

    obs, *_, info = env.step(_call("execute_sql", "SELECT nope FROM Artist"))
    assert obs.startswith("Error:") and info["signals"]["executed"] is False

    obs, *_, info = env.step(_call("execute_sql", "DROP TABLE Artist"))
    assert "not allowed" in obs or "must start with SELECT" in obs

    answer = (
        "SELECT COUNT(*), Artist.Name FROM Album JOIN Artist ON Artist.ArtistId = Album.ArtistId "
        "GROUP BY Artist.Name HAVING COUNT(*) > 4 ORDER BY 1 DESC, 2"
    )
    obs, reward, terminated, truncated, info = env.step(_call("submit_sql", answer))
    assert (reward, terminated) == (1.0, True)
    assert info["signals"] == {"format_ok": True, "executed": True, "match": True, "turns": 4,
                               "explored": False, "explored_level": 0.0}  # fmt: skip


def test_a_wrong_or_failing_submission_ends_with_zero():
    env = SQLEnv(dataset="chinook")
    env.reset(options={"task_id": "chinook/019"})
    obs, reward, terminated, _, info = env.step(
        _call("submit_sql", "SELECT Name, COUNT(*) FROM Artist GROUP BY Name")
    )
    assert (reward, terminated) == (0.0, True) and "does not match" in obs
    assert info["signals"]["executed"] is True and info["signals"]["match"] is False
    env.reset(options={"task_id": "chinook/019"})
    obs, reward, terminated, _, info = env.step(_call("submit_sql", "SELECT * FROM NoSuchTable"))
    assert (reward, terminated) == (0.0, True) and obs.startswith("Your query failed")
    assert info["signals"]["executed"] is False


def test_order_is_graded_only_when_the_question_asks_for_it():
    env = SQLEnv(dataset="chinook")
    env.reset(options={"task_id": "chinook/004"})  # ordered: most customers first
    assert env.step(_call("submit_sql", "SELECT Country, COUNT(*) FROM Customer GROUP BY Country"))[1] == 0.0
    env.reset(options={"task_id": "chinook/003"})  # unordered
    assert (
        env.step(
            _call(
                "submit_sql", "SELECT LastName, FirstName FROM Customer WHERE Country = 'Brazil' ORDER BY 1"
            )
        )[1]
        == 1.0
    )


def test_calls_after_a_submission_are_not_run_and_text_without_a_call_is_a_reminder():
    env = SQLEnv(dataset="chinook")
    env.reset(options={"task_id": "chinook/001"})
    obs, reward, terminated, _, info = env.step("I think it is 3503 tracks.")
    assert "No tool call" in obs and not terminated and info["signals"]["format_ok"] is False
    both = _call("submit_sql", "SELECT COUNT(*) FROM Track") + _call("execute_sql", "SELECT 1")
    obs, reward, terminated, _, info = env.step(both)
    assert (reward, terminated) == (1.0, True) and len(info["messages"]) == 1


def test_turn_limit_truncates():
    env = SQLEnv(dataset="chinook", max_turns=2)
    env.reset(options={"task_id": "chinook/001"})
    assert env.step(_call("execute_sql", "SELECT 1"))[3] is False
    obs, reward, terminated, truncated, info = env.step(_call("execute_sql", "SELECT 2"))
    assert (reward, terminated, truncated) == (0.0, False, True) and info["signals"]["turns"] == 2


def test_single_turn_reads_the_last_sql_block():
    env = SQLEnv(dataset="chinook", mode="single_turn")
    obs, info = env.reset(options={"task_id": "chinook/001"})
    assert "```sql" in obs and info["tools"] == []
    reply = "First try:\n```sql\nSELECT 1\n```\nBetter:\n```sql\nSELECT COUNT(*) FROM Track;\n```"
    obs, reward, terminated, truncated, info = env.step(reply)
    assert (reward, terminated) == (1.0, True) and info["signals"]["match"] is True
    env.reset(options={"task_id": "chinook/001"})
    obs, reward, terminated, truncated, info = env.step("There are 3503 tracks.")
    assert (reward, terminated) == (0.0, True) and info["signals"]["format_ok"] is False


def test_engine_keyword_errors_name_the_fix(monkeypatch):
    monkeypatch.delenv("GFCR_POSTGRES_URL", raising=False)
    with pytest.raises(UnknownNameError, match="did you mean 'duckdb'"):
        SQLEnv(engine="duckbd")
    with pytest.raises(ConfigError, match="GFCR_POSTGRES_URL"):
        SQLEnv(engine="postgresql")
    with pytest.raises(ConfigError, match="pass engine='duckdb'"):
        SQLEnv(engine="duckdb:////tmp/x.duckdb")
    with pytest.raises(UnknownNameError, match="SQL dataset"):
        SQLEnv(dataset="chinok")
    with pytest.raises(ConfigError, match="mode"):
        SQLEnv(mode="three_turns")  # type: ignore[arg-type]


def test_postgres_from_the_environment_variable(monkeypatch, pg_url):
    monkeypatch.setenv("GFCR_POSTGRES_URL", pg_url)
    env = SQLEnv(dataset="tau2_airline", engine="postgresql")
    obs, _ = env.reset(options={"task_id": "tau2_airline/001"})
    assert "PostgreSQL" in obs
    assert env.step(_call("submit_sql", "SELECT COUNT(*) FROM flights"))[1] == 1.0


def test_vector_envs_on_duckdb_agree_in_sync_and_async_mode():
    results = {}
    for mode in ("sync", "async"):
        envs = gym.make_vec(
            "gfcr/SQL-v0", num_envs=2, vectorization_mode=mode, engine="duckdb", dataset="tau2"
        )
        try:
            observations, infos = envs.reset(seed=3)
            actions = [SQLEnv.oracle(task, []) for task in infos["task"]]
            results[mode] = (observations, envs.step(actions)[1].tolist())
        finally:
            envs.close()
    assert results["sync"] == results["async"] and results["sync"][1] == [1.0, 1.0]


@pytest.fixture
def byo(tmp_path):
    """Spider and BIRD layouts of the bookshop fixture: task files beside their database folders."""
    for folder in ("spider/database/bookshop", "bird/dev_databases/bookshop"):
        target = tmp_path / folder
        target.mkdir(parents=True)
        with sqlite3.connect(target / "bookshop.sqlite") as connection:
            connection.executescript((DATA / "bookshop.sql").read_text())
    shutil.copy(DATA / "spider_dev.json", tmp_path / "spider" / "dev.json")
    shutil.copy(DATA / "bird_dev.json", tmp_path / "bird" / "dev.json")
    return tmp_path


def test_bring_your_own_spider_and_bird_files(byo):
    spider = gym.make("gfcr/SQL-v0", dataset=str(byo / "spider" / "dev.json"))
    bird = gym.make("gfcr/SQL-v0", dataset=str(byo / "bird" / "dev.json"), mode="single_turn")
    assert spider.unwrapped.tasks.ids() == ["dev/0", "dev/1", "dev/2", "dev/3"]
    obs, info = bird.reset(options={"task_id": "dev/2"})
    assert (
        "CREATE TABLE sale" in obs
        and "Hint: March 2023" in obs
        and info["task"].metadata["difficulty"] == "easy"
    )
    assert bird.step("```sql\nSELECT SUM(quantity) FROM sale WHERE sold_on >= '2023-03-01'\n```")[1] == 1.0
    for env in (spider, bird):
        policy = OraclePolicy()
        rewards = [
            rollout(env, policy, env_id="gfcr/SQL-v0", task_id=t).total_reward
            for t in env.unwrapped.tasks.ids()
        ]
        assert rewards == [1.0] * len(rewards)
    spider.reset(options={"task_id": "dev/3"})  # ORDER BY price DESC: order is graded
    assert spider.step(_call("submit_sql", "SELECT title FROM book ORDER BY price"))[1] == 0.0
    # the database was opened read-only: the agent cannot change it
    spider.reset(options={"task_id": "dev/0"})
    assert "Error" in spider.step(_call("execute_sql", "DELETE FROM book"))[0]


def test_bring_your_own_errors(byo, tmp_path):
    with pytest.raises(ConfigError, match="SQLite files"):
        SQLEnv(dataset=str(byo / "spider" / "dev.json"), engine="duckdb")
    with pytest.raises(gfcr.DataError, match="does not exist"):
        SQLEnv(dataset=str(tmp_path / "missing.json"))
    (tmp_path / "bad.json").write_text(
        json.dumps([{"db_id": "nowhere", "question": "?", "query": "SELECT 1"}])
    )
    with pytest.raises(gfcr.DataError, match="db_dir"):
        SQLEnv(dataset=str(tmp_path / "bad.json"))
