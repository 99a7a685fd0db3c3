"""Proposals verified by execution (issue 36): each family's verifier with the real sandbox and the
real Chinook database, each family's task with its question withheld (the blind baseline), the
novelty filter, the learnability reward and the guess check, and the provenance store."""

from __future__ import annotations

import gymnasium as gym
import pytest
import sqlalchemy

from gfcr.core import Task
from gfcr.envs.proposals import ProposeEnv, family_of, restored_task
from gfcr.errors import ConfigError, DataError
from gfcr.proposals import (
    BLIND_PROMPT,
    NoveltyFilter,
    ProposeConfig,
    ProvenanceRecord,
    ProvenanceStore,
    Rejected,
    guessable,
    learnability,
)
from gfcr.proposals.provenance import gold_text

STUB = 'def double(x: int) -> int:\n    """Twice x."""\n'
CODE = f"<prompt>{STUB}</prompt><solution>def double(x):\n    return 2 * x\n</solution>" + (
    "<tests>assert double(2) == 4\nassert double(-1) == -2</tests>"
)


@pytest.fixture(scope="module")
def code_env():
    env = gym.make("gfcr/Code-v0")
    yield env.unwrapped
    env.close()


@pytest.fixture(scope="module")
def sql_env():
    env = gym.make("gfcr/SQL-v0")
    yield env.unwrapped
    env.close()


def rejection(family: str, text: str, env, parents=()) -> tuple[str, str]:
    with pytest.raises(Rejected) as caught:
        family_of(family).verify(text, env, "gen/x", list(parents))
    return caught.value.kind, caught.value.reason


def test_a_code_proposal_whose_solution_passes_its_tests_becomes_a_task_the_env_grades(code_env):
    task = family_of("gfcr/Code-v0").verify(CODE, code_env, "gen/double", []).task
    assert (task.id, task.gold.entry_point) == ("gen/double", "double")
    obs, info = code_env.reset(options={"task": task})
    assert info["task"] is task and "double" in obs
    assert code_env.step("```python\ndef double(x):\n    return x + x\n```")[1] == 1.0
    code_env.reset(options={"task": task})
    assert code_env.step("```python\ndef double(x):\n    return x\n```")[1] == 0.0


def test_code_proposals_that_fail_their_own_tests_or_test_nothing_or_do_not_parse_are_rejected(code_env):
    kind, reason = rejection("gfcr/Code-v0", CODE.replace("2 * x", "x + 2"), code_env)
    assert kind == "invalid" and "fails its own tests" in reason
    trivial = CODE.replace("assert double(2) == 4\nassert double(-1) == -2", "assert True")
    assert rejection("gfcr/Code-v0", trivial, code_env)[0] == "trivial"
    assert rejection("gfcr/Code-v0", "Here is a task: double a number.", code_env) == (
        "invalid",
        "no <prompt>…</prompt> section (or it is empty); write each part between its tags",
    )
    kind, reason = rejection("gfcr/Code-v0", CODE.replace("return 2 * x", "return 2 *"), code_env)
    assert kind == "invalid" and "solution is not valid Python" in reason


def test_a_math_answer_is_what_the_proposers_program_prints_in_the_sandbox():
    math = family_of("gfcr/Math-v0")
    text = "<problem>What is the sum of the first 100 squares?</problem>"
    verified = math.verify(
        text + "<program>print(sum(i * i for i in range(1, 101)))</program><answer>338350</answer>",
        None,
        "gen/m",
        [],
    )
    assert (verified.task.gold, verified.claimed_agrees) == ("338350", True)
    wrong_claim = math.verify(
        text + "<program>print(sum(i * i for i in range(1, 101)))</program><answer>5050</answer>",
        None,
        "gen/m",
        [],
    )
    assert (wrong_claim.task.gold, wrong_claim.claimed_agrees) == ("338350", False)  # the program decides
    kind, reason = rejection("gfcr/Math-v0", text + "<program>print(1 / 0)</program>", None)
    assert kind == "invalid" and "ZeroDivisionError" in reason


def test_sql_gold_queries_execute_on_chinook_and_empty_or_writing_ones_are_rejected(sql_env):
    parent = sql_env.tasks[0]
    sql = family_of("gfcr/SQL-v0")
    task = sql.verify(
        "<question>How many artists are there?</question><sql>SELECT COUNT(*) FROM Artist</sql>",
        sql_env,
        "gen/s",
        [parent],
    ).task
    assert (task.gold, task.metadata["database"]) == ("SELECT COUNT(*) FROM Artist", "chinook")
    _, info = sql_env.reset(options={"task": task})
    assert sql_env.step(type(sql_env).oracle(task, info["messages"]))[1] == 1.0  # graded by its gold
    for query, why in [
        ("SELECT * FROM Artist WHERE 1 = 0", "returns no rows"),
        ("DELETE FROM Artist", "only read-only queries"),
        ("SELECT * FROM Nope", "'Nope' is not allowed"),
    ]:
        kind, reason = rejection(
            "gfcr/SQL-v0", f"<question>q</question><sql>{query}</sql>", sql_env, [parent]
        )
        assert kind == "invalid" and why in reason
    assert (
        "unknown database 'northwind'"
        in rejection(
            "gfcr/SQL-v0",
            "<database>northwind</database><question>q</question><sql>SELECT 1</sql>",
            sql_env,
            [parent],
        )[1]
    )


def test_each_family_withholds_the_question_from_a_blind_attempt_and_keeps_the_gold_that_grades_it(
    code_env, sql_env
):
    math_env = gym.make("gfcr/Math-v0").unwrapped
    yes_no = "<problem>Is 91 a prime number? Answer yes or no.</problem><program>print('no')</program>"
    math = family_of("gfcr/Math-v0").verify(yes_no, None, "gen/m", []).task
    blind = family_of("gfcr/Math-v0").withheld(math)
    obs, _ = math_env.reset(options={"task": blind})
    assert (blind.id, blind.gold) == ("gen/m/blind", "no") and BLIND_PROMPT in obs and "91" not in obs
    assert math_env.step("\\boxed{no}")[1] == 1.0  # a lucky guess scores, as it would with the question

    question = "How many artists are there?"
    sql = (
        family_of("gfcr/SQL-v0")
        .verify(
            f"<question>{question}</question><sql>SELECT COUNT(*) FROM Artist</sql>",
            sql_env,
            "gen/s",
            [sql_env.tasks[0]],
        )
        .task
    )
    blind = family_of("gfcr/SQL-v0").withheld(sql)
    obs, info = sql_env.reset(options={"task": blind})
    assert question not in obs and f"Question: {BLIND_PROMPT}" in obs and "Artist" in obs  # the schema stays
    assert sql_env.step(type(sql_env).oracle(blind, info["messages"]))[1] == 1.0

    code = family_of("gfcr/Code-v0").verify(CODE, code_env, "gen/c", []).task
    blind = family_of("gfcr/Code-v0").withheld(code)
    obs, _ = code_env.reset(options={"task": blind})
    assert "double" not in obs and "Twice" not in obs and BLIND_PROMPT in obs  # the stub is the question
    assert code_env.step("```python\nprint(0)\n```")[1] == 0.0  # a blind program fails the hidden tests …
    code_env.reset(options={"task": blind})
    assert code_env.step("```python\ndef double(x):\n    return 2 * x\n```")[1] == 1.0  # … the same tests


def test_a_task_solved_no_more_often_than_guessed_is_guessable_and_the_check_is_configured():
    assert guessable(0.5, 0.5, 0.25) and guessable(0.7, 0.5, 0.25) and guessable(0.25, 0.5, 0.25)
    assert not guessable(0.75, 0.5, 0.25) and not guessable(0.25, 0.0, 0.25)
    assert not guessable(0.5, 0.5, 0.0)  # min_gain 0: only guessing beating solving is guessable
    assert (ProposeConfig().blind_attempts, ProposeConfig().min_gain) == (4, 0.25)
    with pytest.raises(ConfigError, match="blind_attempts must be >= 0"):
        ProposeConfig(blind_attempts=-1)
    with pytest.raises(ConfigError, match="min_gain must be in"):
        ProposeConfig(min_gain=1.5)


def test_a_proposal_too_close_to_a_pool_task_is_a_duplicate():
    pool = ["Write a function that returns the sum of the squares of a list of numbers."]
    novelty = NoveltyFilter(pool, max_similarity=0.6)
    assert not novelty.is_novel("Write a function that returns the sum of the squares of a list of integers.")
    assert novelty.is_novel("Count the distinct words of a sentence, ignoring case.")


def test_the_proposer_reward_is_zero_at_both_ends_of_solver_success_and_largest_inside():
    rewards = {s: learnability(s) for s in (0.0, 0.25, 0.5, 0.75, 1.0)}
    assert rewards[0.0] == rewards[1.0] == 0.0
    assert max(rewards, key=rewards.__getitem__) == 0.25 and all(rewards[s] > 0 for s in (0.25, 0.5, 0.75))
    assert learnability(0.9, band=(0.1, 0.8)) == 0.0 and learnability(0.5, band=(0.1, 0.8)) == 0.5


def test_provenance_is_complete_survives_a_reopen_and_records_retirement(tmp_path):
    path = tmp_path / "proposals.db"
    record = ProvenanceRecord(
        "gen/1",
        "gfcr/Math-v0",
        "What is 6*7?",
        '"42"',
        "3",
        ("mmath/0", "mmath/1"),
        "valid",
        "",
        step_proposed=2,
        solver_success=0.5,
        blind_success=0.25,
        claimed_agrees=True,
        rerun_agrees=True,
        task_source="generated",
        task_metadata={},
        step_added=2,
    )
    ProvenanceStore(path).record(record)
    store = ProvenanceStore(path)  # another process's view: each write was its own transaction
    store.retire("gen/1", step=9)
    (found,) = ProvenanceStore(path).records()
    assert found.parent_ids == ("mmath/0", "mmath/1") and found.proposer_version == "3"
    assert (found.step_added, found.step_retired, found.active) == (2, 9, False)
    assert all(value is not None for value in vars(found).values())


def test_a_store_written_before_blind_success_opens_and_reads_it_as_unknown(tmp_path):
    path = tmp_path / "old.db"
    store = ProvenanceStore(path)
    store.record(
        ProvenanceRecord("gen/0", "gfcr/Math-v0", "?", '"1"', "1", (), "valid", "", 0, solver_success=0.5)
    )
    with store.engine.begin() as conn:  # the table as an older gfcr wrote it
        conn.execute(sqlalchemy.text("ALTER TABLE proposed_tasks DROP COLUMN blind_success"))
    store.close()
    (found,) = ProvenanceStore(path).records()
    assert (found.id, found.solver_success, found.blind_success) == ("gen/0", 0.5, None)


def test_the_proposer_env_ends_its_one_turn_and_envs_refuse_a_task_that_is_no_task():
    env = ProposeEnv()
    obs, info = env.reset(options={"task": Task("propose/0", "Propose a math problem.")})
    assert obs == "Propose a math problem." and env.step("<problem>?</problem>")[2] is True
    with pytest.raises(Exception, match="must be a gfcr.core.Task"):
        env.reset(options={"task": "propose/0"})
    with pytest.raises(Exception, match="exclude each other"):
        env.reset(options={"task": Task("a", "b"), "task_id": "a"})


def stored_and_restored(family: str, text: str, env, tmp_path, parents=()) -> tuple[Task, Task, bool | None]:
    """A proposal verified by `family`, recorded in a store file and rebuilt from a reopened one."""
    verified = family_of(family).verify(text, env, f"gen/{family}", list(parents))
    task = verified.task
    ProvenanceStore(tmp_path / "p.db").record(
        ProvenanceRecord(task.id, family, task.prompt, gold_text(task.gold), "1", (), "valid", "",
                         step_proposed=0, task_source=task.source, task_metadata=dict(task.metadata),
                         rerun_agrees=verified.rerun_agrees, step_added=0)
    )  # fmt: skip
    (record,) = ProvenanceStore(tmp_path / "p.db").records()
    return task, restored_task(record), record.rerun_agrees


def test_every_familys_generated_task_round_trips_through_the_store_and_reruns_agree(
    code_env, sql_env, tmp_path
):
    code, code_back, code_rerun = stored_and_restored("gfcr/Code-v0", CODE, code_env, tmp_path / "code")
    assert (
        code_back == code and code_back.gold.starter == STUB.strip() and code_back.metadata == code.metadata
    )
    code_env.reset(options={"task": code_back})  # the rebuilt gold grades as the original did
    assert code_env.step("```python\ndef double(x):\n    return x + x\n```")[1] == 1.0
    sql, sql_back, sql_rerun = stored_and_restored(
        "gfcr/SQL-v0",
        "<question>How many albums are there?</question><sql>SELECT COUNT(*) FROM Album</sql>",
        sql_env,
        tmp_path / "sql",
        [sql_env.tasks[0]],
    )
    assert (
        sql_back == sql and sql_back.metadata == sql.metadata and sql_back.metadata["database"] == "chinook"
    )
    _, info = sql_env.reset(options={"task": sql_back})
    assert sql_env.step(type(sql_env).oracle(sql_back, info["messages"]))[1] == 1.0
    math, math_back, math_rerun = stored_and_restored(
        "gfcr/Math-v0", "<problem>What is 6 times 7?</problem><program>print(6 * 7)</program>", None, tmp_path
    )
    assert (math_back, math_back.gold) == (math, "42")
    assert code_rerun is sql_rerun is math_rerun is True


def test_a_check_that_gives_another_result_when_rerun_disagrees_with_itself():
    text = "<problem>Pick a number.</problem><program>import os\nprint(os.urandom(8).hex())</program>"
    assert family_of("gfcr/Math-v0").verify(text, None, "gen/r", []).rerun_agrees is False


def test_a_rejected_proposal_or_gold_of_the_wrong_shape_is_no_task_to_rebuild():
    rejected = ProvenanceRecord("gen/x", "gfcr/Math-v0", "junk", "", "1", (), "invalid", "no <problem>", 0)
    with pytest.raises(DataError, match="holds no task to rebuild"):
        restored_task(rejected)
    with pytest.raises(DataError, match="CodeTests fields"):
        family_of("gfcr/Code-v0").gold_from("SELECT 1")
    with pytest.raises(DataError, match="fields"):
        family_of("gfcr/Code-v0").gold_from({"kind": "function", "nope": 1})
    with pytest.raises(DataError, match="plain data"):
        gold_text(object())
