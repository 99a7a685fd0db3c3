"""Verified fragments from real episodes (issue 36): SQL queries the SQL env executed, patches the
SWE env's tests passed; and the keep stage's usage statistics and eviction on ShopTools episodes."""

from __future__ import annotations

import gymnasium as gym
import pytest
from scripted_episodes import Scripted, tool_call

from gfcr.agents import Runner, RunnerConfig, episodes_for_env, make_policy
from gfcr.agents.runner.rollout import rollout
from gfcr.skills import SkillKeeper, SkillLibrary, SkillTrainingConfig
from gfcr.workloads import KINDS, ShopTools


def oracle_runs(env_id: str, n: int, **kwargs):
    result = Runner(make_policy("scripted:oracle"), RunnerConfig()).run(
        episodes_for_env(env_id, n, kwargs=kwargs)
    )
    assert result.failed == 0 and all(t.total_reward == 1.0 for t in result.trajectories)
    return result.trajectories


def test_the_oracles_submitted_sql_becomes_a_fragment_verified_by_the_grade():
    library = SkillLibrary("sqlite://")
    for trajectory in oracle_runs("gfcr/SQL-v0", 3):
        (skill,) = library.extract(trajectory, step=4, category="chinook")
        submitted = trajectory.messages[1].text  # the oracle's one submit_sql call
        assert skill.kind == "sql_query" and skill.body in submitted and skill.name.startswith("sql ")
        assert skill.verification["verified"] == "submitted query graded correct"
        assert skill.verification["signals"]["match"] is True and skill.verification["reward"] == 1.0
        assert (skill.extracted_at, skill.category) == (4, "chinook")
        assert (
            "```sql" in skill.render() and "CREATE TABLE" not in skill.render()
        )  # the question, not the schema
    assert len(library) == 3


def test_explored_queries_that_ran_are_kept_and_failing_ones_are_not():
    env = gym.make("gfcr/SQL-v0")
    env.reset(seed=0, options={"task_id": "chinook/009"})
    gold = env.unwrapped.task.gold
    actions = [
        tool_call("execute_sql", query="SELECT COUNT(*) FROM Artist"),
        tool_call("execute_sql", query="SELECT nope FROM Artist"),
        tool_call("submit_sql", query=gold),
    ]
    trajectory = rollout(env, Scripted(actions), env_id="gfcr/SQL-v0", task_id="chinook/009")
    assert trajectory.total_reward == 1.0
    kept = SkillLibrary("sqlite://").extract(trajectory)
    assert [(s.body, s.verification["verified"]) for s in kept] == [
        ("SELECT COUNT(*) FROM Artist", "query executed"),
        (gold, "submitted query graded correct"),
    ]
    failed = rollout(
        env,
        Scripted([tool_call("submit_sql", query="SELECT 1")]),
        env_id="gfcr/SQL-v0",
        task_id="chinook/009",
    )
    assert failed.total_reward == 0.0 and SkillLibrary("sqlite://").extract(failed) == []


def test_a_patch_that_passed_the_tests_becomes_a_fragment():
    (trajectory,) = oracle_runs("gfcr/SWE-v0", 1)
    (skill,) = SkillLibrary("sqlite://").extract(trajectory)
    assert skill.kind == "patch" and skill.body == trajectory.steps[-1].state["patch"]
    assert skill.name.startswith("patch ") and skill.name.endswith(".py")
    assert skill.verification["verified"] == "tests passed"
    assert skill.verification["signals"]["resolved"] is True
    assert "```diff" in skill.render()


def shop_episode(family: ShopTools, task, right: bool, guidance: str = ""):
    calls = KINDS[task.metadata["kind"]][1] if right else ("price",)
    trajectory = family.episode(task, calls)
    trajectory.guidance = guidance
    return trajectory


def test_usefulness_is_success_with_the_skill_minus_without_and_useless_skills_are_evicted():
    family = ShopTools(seed=0)
    tasks = [t for t in family.tasks(40) if t.metadata["kind"] == "convert"][:6]
    config = SkillTrainingConfig(enabled=True, min_uses=4, min_usefulness=0.0, stale_steps=0)
    keeper = SkillKeeper(config.library("sqlite://"), config, category=lambda task_id: "shop")
    first = keeper.keep([shop_episode(family, tasks[0], right=True)])
    assert first["keep/skills/extracted"] == 1.0 and first["keep/skills/size"] == 1.0
    (skill,) = keeper.library
    assert skill.extracted_at == skill.last_used == 1 and skill.category == "shop"

    # without the skill: step 1's success and 1 of 4 now (baseline (2+1)/(5+2)); with it: 1 of 2
    unguided = [shop_episode(family, t, right=i == 0) for i, t in enumerate(tasks[1:5])]
    guided = [
        shop_episode(family, t, right=i == 0, guidance=keeper.library.guidance(t.prompt))
        for i, t in enumerate(tasks[4:6])
    ]
    assert all(keeper.carried(t) == [skill] for t in guided)
    metrics = keeper.keep([*unguided, *guided])
    assert metrics["generate/skills_retrieved"] == 2.0 and keeper.baseline == {"shop": [2, 5]}
    assert (skill.uses, skill.successes, skill.last_used) == (2, 1, 2)
    assert keeper.usefulness(skill) == pytest.approx(2 / 4 - 3 / 7)
    assert (
        metrics["keep/skills/usefulness_mean"] == pytest.approx(2 / 4 - 3 / 7)
        and metrics["keep/skills/evicted"] == 0
    )

    # two more uses, both failed: 1 of 4 with it (2/6), below the baseline after min_uses: evicted
    failing = [
        shop_episode(family, t, right=False, guidance=keeper.library.guidance(t.prompt)) for t in tasks[4:6]
    ]
    metrics = keeper.keep(failing)
    assert metrics["keep/skills/evicted"] == 1.0 and len(keeper.library) == 0


def test_a_skill_no_episode_carries_goes_stale():
    family = ShopTools(seed=0)
    task = family.tasks(1)[0]
    config = SkillTrainingConfig(enabled=True, stale_steps=2)
    keeper = SkillKeeper(config.library("sqlite://"), config)
    keeper.keep([shop_episode(family, task, right=True)])  # step 1: extracted
    assert [keeper.keep([])["keep/skills/evicted"] for _ in range(3)] == [0.0, 0.0, 1.0]  # steps 2, 3, 4
    assert len(keeper.library) == 0
