"""gfcr/SWE-v0 end to end: real projects' sdists, the real sandbox, the projects' own tests."""

from __future__ import annotations

import json
import shlex
import time

import gymnasium as gym
import pytest

import gfcr  # noqa: F401  (registers the envs)
from gfcr.agents import OraclePolicy, RandomPolicy, Runner, episodes_for_env
from gfcr.core import Trajectory
from gfcr.envs.swe import SWEVerifier, load_tasks, snapshot_of
from gfcr.envs.swe.evaluation import evaluate

DATASET = {"dataset": "inflection", "tasks_per_project": 4}


def call(name: str, **arguments: object) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


@pytest.fixture(scope="module")
def env():
    env = gym.make("gfcr/SWE-v0", **DATASET)
    yield env
    env.close()


@pytest.fixture(scope="module")
def tasks():
    return load_tasks("inflection", tasks_per_project=4)


def test_each_task_breaks_exactly_its_fail_to_pass_tests_and_its_gold_patch_fixes_them(tasks):
    task = tasks[1]
    meta = task.metadata
    sandbox = SWEVerifier("local").grader()
    unfixed = evaluate(
        sandbox,
        snapshot_of(task),
        "",
        meta["fail_to_pass"],
        meta["pass_to_pass"],
        setup_patch=meta["setup_patch"],
    )
    assert set(unfixed.fail_to_pass.values()) == {"failed"}
    assert set(unfixed.pass_to_pass.values()) == {"passed"}
    assert not unfixed.resolved
    assert SWEVerifier("local").judge(task, task.gold).resolved


def test_the_issue_describes_the_symptom_never_the_patch(tasks):
    for task in tasks:
        bug = task.metadata["bug"]
        changed = [
            line[1:].strip()
            for line in task.gold.splitlines()
            if line[:1] in "+-" and line[:3] not in ("+++", "---")
        ]
        assert task.metadata["fail_to_pass"][0] in task.prompt  # the failing test is named
        assert bug["file"] not in task.prompt and not any(line and line in task.prompt for line in changed)
        assert task.metadata["difficulty"] in ("easy", "medium", "hard")


def test_oracle_resolves_every_task_and_random_resolves_none(tasks):
    oracle = (
        Runner(OraclePolicy()).run(episodes_for_env("gfcr/SWE-v0", len(tasks), kwargs=DATASET)).trajectories
    )
    assert [t.total_reward for t in oracle] == [1.0] * len(tasks)
    assert all(t.steps[-1].signals["resolved"] and t.steps[-1].signals["pass_to_pass"] == 1.0 for t in oracle)
    junk_episodes = episodes_for_env("gfcr/SWE-v0", 2, kwargs={**DATASET, "max_turns": 4})
    junk = Runner(RandomPolicy(seed=3)).run(junk_episodes).trajectories
    assert [t.total_reward for t in junk] == [0.0, 0.0]
    assert all(t.steps[-1].signals["submitted"] for t in junk)  # the last turn submits what there is


def test_a_saved_trajectory_is_rejudged_offline_as_it_was_judged_live(tasks, tmp_path):
    [live] = Runner(OraclePolicy()).run(episodes_for_env("gfcr/SWE-v0", 1, kwargs=DATASET)).trajectories
    path = tmp_path / "episodes.jsonl"
    path.write_text(json.dumps(live.to_dict()) + "\n")
    saved = Trajectory.from_dict(json.loads(path.read_text()))
    task = next(t for t in tasks if t.id == saved.task_id)
    verdict = SWEVerifier("local").verify(task, saved)
    assert verdict.passed and verdict.reward == live.total_reward == 1.0
    saved.steps[-1].state = {"patch": ""}  # the bug left in place
    assert SWEVerifier("local").verify(task, saved).reward == 0.0


def test_changing_the_tests_is_ignored_by_the_verdict(env):
    obs, info = env.reset(options={"task_id": "swe/inflection-0"})
    failing = info["task"].metadata["fail_to_pass"][0]
    test_path = failing.split("::")[0]
    env.step(call("write_file", path="conftest.py", content="import pytest\n"))
    observation = env.step(call("bash", command=f"printf 'def test_nothing():\\n    pass\\n' > {test_path}"))[
        0
    ]
    assert "exit status" not in observation
    _, reward, terminated, _, step_info = env.step(call("submit"))
    assert terminated and reward == 0.0
    assert step_info["signals"]["touched_tests"] and step_info["signals"]["fail_to_pass"] == 0.0
    assert test_path in step_info["state"]["patch"]  # recorded, but not applied when judging


def test_tools_answer_bad_input_with_a_message(env):
    env.reset(options={"task_id": "swe/inflection-1"})
    answers = [
        env.step(call("read_file", path="../../etc/passwd"))[0],
        env.step(call("read_file", path="no/such.py"))[0],
        env.step(call("edit_file", path="setup.py", old="this text is not there", new="x"))[0],
        env.step(call("apply_patch", patch="--- a/nothing.py\n+++ b/nothing.py\n@@ -1 +1 @@\n-a\n+b\n"))[0],
        env.step(call("search", pattern="(unclosed"))[0],
        env.step(call("list_files", path="setup.py"))[0],
    ]
    assert all(answer.startswith("Error:") for answer in answers), answers
    assert "outside the repository" in answers[0] and "nothing was changed" in answers[3]
    assert env.unwrapped.workspace.patch == ""


def test_a_crashed_session_keeps_the_changes_made_before_it(env):
    env.reset(options={"task_id": "swe/inflection-2"})
    env.step(call("write_file", path="NOTES.txt", content="kept\n"))
    crashed = env.step(call("bash", command="kill -9 $PPID"))[0]  # kills the session's interpreter
    assert "stopped" in crashed and "restarts" in crashed
    after = env.step(call("read_file", path="NOTES.txt"))[0]
    assert "a new sandbox session" in after and "kept" in after


def test_run_tests_reports_the_failures_of_the_issue(env):
    obs, info = env.reset(options={"task_id": "swe/inflection-3"})
    failing = info["task"].metadata["fail_to_pass"]
    report = env.step(call("run_tests", tests=" ".join(shlex.quote(t) for t in failing[:2])))[0]
    assert report.startswith(f"{min(len(failing), 2)} failed") and f"FAILED {failing[0]}" in report
    env.step(call("apply_patch", patch=info["task"].gold))
    assert env.step(call("run_tests", tests=shlex.quote(failing[0])))[0] == "1 passed"
    missing = env.step(call("run_tests", tests="tests/test_gone.py"))[0]
    assert missing.startswith("1 error") and "no such test file" in missing


def test_bring_your_own_repository_and_tasks(tmp_path):
    repo = tmp_path / "calc"
    (repo / "calc").mkdir(parents=True)
    (repo / "calc" / "__init__.py").write_text("def add(a, b):\n    return a - b\n")
    (repo / "tests").mkdir()
    (repo / "tests" / "test_calc.py").write_text(
        "from calc import add\n\ndef test_zero():\n    assert add(0, 0) == 0\n"
    )
    hidden = "--- a/tests/test_calc.py\n+++ b/tests/test_calc.py\n@@ -3,2 +3,5 @@\n def test_zero():\n     assert add(0, 0) == 0\n+\n+def test_add():\n+    assert add(2, 3) == 5\n"
    gold = "--- a/calc/__init__.py\n+++ b/calc/__init__.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n"
    record = {
        "id": "calc/add",
        "issue": "add(2, 3) returns -1 instead of 5.",
        "fail_to_pass": ["tests/test_calc.py::test_add"],
        "pass_to_pass": ["tests/test_calc.py::test_zero"],
        "gold_patch": gold,
        "test_patch": hidden,
    }
    (tmp_path / "tasks.jsonl").write_text(json.dumps(record) + "\n")
    kwargs = {"dataset": str(tmp_path / "tasks.jsonl"), "repo": str(repo)}
    [episode] = Runner(OraclePolicy()).run(episodes_for_env("gfcr/SWE-v0", 1, kwargs=kwargs)).trajectories
    assert episode.total_reward == 1.0
    env = gym.make("gfcr/SWE-v0", **kwargs)
    env.reset()
    assert "test_add" not in env.step(call("read_file", path="tests/test_calc.py"))[0]  # hidden until judged
    env.step(
        call("edit_file", path="calc/__init__.py", old="a - b", new="5")
    )  # passes test_add, breaks test_zero
    _, reward, _, _, info = env.step(call("submit"))
    env.close()
    assert reward == 0.0 and info["signals"]["fail_to_pass"] == 1.0 and info["signals"]["pass_to_pass"] == 0.0
    with pytest.raises(gfcr.errors.ConfigError, match="missing gold_patch"):
        (tmp_path / "bad.jsonl").write_text(json.dumps({"issue": "x", "fail_to_pass": ["t"]}) + "\n")
        gym.make("gfcr/SWE-v0", dataset=str(tmp_path / "bad.jsonl"), repo=str(repo))


def test_a_patch_that_makes_the_tests_hang_costs_seconds_not_the_verdict(tmp_path):
    (tmp_path / "m.py").write_text("def f():\n    return 1\n")
    (tmp_path / "test_m.py").write_text("from m import f\n\ndef test_f():\n    assert f() == 2\n")
    gold = "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 2\n"
    record = {"issue": "f() returns 1", "fail_to_pass": ["test_m.py::test_f"], "gold_patch": gold}
    (tmp_path / "tasks.jsonl").write_text(json.dumps(record) + "\n")
    env = gym.make("gfcr/SWE-v0", dataset=str(tmp_path / "tasks.jsonl"), repo=str(tmp_path))
    env.reset()
    env.step(call("edit_file", path="m.py", old="return 1", new="while True:\n        pass"))
    started = time.monotonic()
    observation, reward, terminated, _, info = env.step(call("submit"))
    env.close()
    assert terminated and reward == 0.0 and info["signals"]["fail_to_pass"] == 0.0
    assert time.monotonic() - started < 60  # the test was stopped after 10 s, not at the run's limit


def test_swe_tasks_lists_the_tasks_with_their_difficulty():
    from typer.testing import CliRunner

    from gfcr.apps.cli import app

    listed = CliRunner().invoke(app, ["swe-tasks", "inflection", "--tasks-per-project", "2", "--json"])
    assert listed.exit_code == 0, listed.output
    rows = [json.loads(line) for line in listed.output.splitlines()]
    assert [row["id"] for row in rows] == ["swe/inflection-0", "swe/inflection-1"]
    assert all(row["difficulty"] in ("easy", "medium", "hard") and row["fail_to_pass"] for row in rows)
    unknown = CliRunner().invoke(app, ["swe-tasks", "numpy"])
    assert unknown.exit_code == 2 and "unknown project 'numpy'" in unknown.output


def test_a_message_that_patches_and_submits_is_judged_after_its_patch(env):
    obs, info = env.reset(options={"task_id": "swe/inflection-2"})
    both = call("apply_patch", patch=info["task"].gold) + "\n" + call("submit")
    observation, reward, terminated, _, step_info = env.step(both)
    assert (reward, terminated) == (1.0, True) and step_info["signals"]["resolved"]
    assert observation.startswith("Patch applied.") and "Resolved." in observation
