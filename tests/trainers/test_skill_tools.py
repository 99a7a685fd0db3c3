"""Skills as callable tools (issue 36): a skill the run's library holds is offered to an episode as
a tool in its tool list; calling it runs the env's own tools (or, for a helper function, the
sandbox), the episode is graded as usual, the call counts as a use of the skill, and evaluation
runs with the library without recording or extracting anything."""

from __future__ import annotations

import dataclasses
import json

import gymnasium as gym
import pytest

from gfcr.agents import OraclePolicy, Runner, RunnerConfig, episodes_for_env
from gfcr.core import Completion, Step, Trajectory
from gfcr.errors import ConfigError
from gfcr.skills import Skill, SkillKeeper, SkillLibrary, SkillTrainingConfig
from gfcr.skills.training import with_skills
from gfcr.trainers import Trainer
from gfcr.trainers.config import PipelineConfig
from gfcr.trainers.pipeline import RolloutPipeline

TOOLUSE = {"num_tasks": 6}
AS_TOOLS = {"replay": {"skills": {"enabled": True, "as_tools": True}}}


def call(name: str, **arguments) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


class SkillCaller:
    """A scripted agent: it calls the first skill tool it is offered (else the env's `lookup`), then
    answers with what the tool returned."""

    name, version = "scripted:skill-caller", "1"

    def generate(self, requests):
        completions = []
        for request in requests:
            offered = [
                t["function"]["name"] for t in request.tools if t["function"]["name"].startswith("skill_")
            ]
            results = [m.text.strip() for m in request.messages if m.role == "tool"]
            text = results[-1] if results else call(offered[0] if offered else "lookup")
            completions.append(Completion(text))
        return completions


def lookup_skill() -> Skill:
    """The procedure the scripted oracle's solved ToolUse episode teaches: `lookup`."""
    (solved,) = (
        Runner(OraclePolicy()).run(episodes_for_env("gfcr/ToolUse-v0", 1, kwargs=TOOLUSE)).trajectories
    )
    (skill,) = SkillLibrary("sqlite://").extract(solved)
    assert skill.kind == "tool_sequence" and skill.name == "lookup"
    return skill


def record(skill: Skill) -> dict:
    return dataclasses.asdict(skill)


def test_a_skill_tool_runs_the_envs_own_tools_and_the_episode_is_graded_as_usual():
    skill = lookup_skill()
    env = gym.make("gfcr/ToolUse-v0", **TOOLUSE)
    _, info = env.reset(options={"task_id": "tooluse/3", "skills": [record(skill)]})
    assert [t["function"]["name"] for t in info["tools"]] == ["lookup", "skill_lookup"]
    code, reward, terminated, _, step = env.step(call("skill_lookup"))
    assert step["messages"][0].name == "skill_lookup" and step["signals"]["used_tool"]  # lookup really ran
    assert (reward, terminated) == (0.0, False) and code == env.unwrapped.task.gold  # a call earns nothing
    assert env.step("not the code")[1:3] == (0.0, True)  # graded as usual: a wrong answer fails

    env.reset(options={"task_id": "tooluse/3", "skills": [record(skill)]})
    code = env.step(call("skill_lookup"))[0]
    assert env.step(code)[1:3] == (1.0, True)
    _, info = env.reset(options={"task_id": "tooluse/3"})  # the next episode has only the env's tools
    assert [t["function"]["name"] for t in info["tools"]] == ["lookup"]
    assert env.step(call("skill_lookup"))[0].startswith("Error: unknown tool 'skill_lookup'")
    env.close()


def test_a_skill_tool_can_neither_solve_a_task_nor_reach_the_envs_gold():
    env = gym.make("gfcr/ToolUse-v0", **TOOLUSE)
    env.reset(options={"task_id": "tooluse/1"})
    gold = env.unwrapped.task.gold
    # a helper that returns the right code, and one that looks for the env's task in its own memory
    guess = Skill("guess", "function", "the code", f"def guess():\n    return {gold!r}")
    peek = Skill(
        "peek", "function", "the env's task",
        "def peek():\n    import gc\n    return [repr(o) for o in gc.get_objects() if type(o).__name__ == 'Task']",
    )  # fmt: skip
    private = Skill(
        "respond", "tool_sequence", "the env's own method", '[{"name": "respond", "arguments": {}}]'
    )
    sql = Skill("sql Artist", "sql_query", "artists", "SELECT * FROM Artist")
    records = [record(s) for s in (guess, peek, private, sql)]
    _, info = env.reset(options={"task_id": "tooluse/1", "skills": records})
    # only the env's tools and runnable skills: no procedure over what is not an env tool, no SQL fragment
    assert [t["function"]["name"] for t in info["tools"]] == ["lookup", "skill_guess", "skill_peek"]
    assert env.step(call("skill_peek"))[0] == "[]"  # it ran in the sandbox: no env, no task there
    answer, reward, *_ = env.step(call("skill_guess"))
    assert answer == gold and reward == 0.0
    assert env.step(answer)[1:3] == (0.0, True)  # the right code without a lookup is not a solution
    with pytest.raises(ConfigError, match="a skill record must hold a Skill's fields"):
        env.reset(options={"task_id": "tooluse/1", "skills": [{"name": "x", "secret": 1}]})
    env.close()


def test_skill_records_travel_to_env_worker_processes():
    skill = lookup_skill()
    specs = [with_skills(s, [skill]) for s in episodes_for_env("gfcr/ToolUse-v0", 2, kwargs=TOOLUSE, skip=2)]
    result = Runner(SkillCaller(), RunnerConfig(env_workers="process", num_env_workers=1)).run(specs)
    assert result.failed == 0 and [t.total_reward for t in result.trajectories] == [1.0, 1.0]
    for trajectory in result.trajectories:
        assert "skill_lookup" in [t["function"]["name"] for t in trajectory.tools]
        assert [m.name for m in trajectory.messages if m.role == "tool"] == ["skill_lookup"]


def test_as_tools_offers_the_runs_skills_and_counts_each_call_as_a_use():
    tasks = episodes_for_env("gfcr/ToolUse-v0", 4, kwargs={"num_tasks": 4})
    config = PipelineConfig.from_dict(AS_TOOLS)
    pipeline = RolloutPipeline.from_config(SkillCaller(), tasks, config, prompts_per_step=2, group_size=2)
    first = pipeline.step(["tooluse/0", "tooluse/1"])  # an empty library: lookup, solved, extracted
    assert first.metrics["generate/skill_tool_calls"] == 0 and first.metrics["keep/skills/extracted"] == 1
    (skill,) = pipeline.skills.library

    second = pipeline.step(["tooluse/2", "tooluse/3"])
    assert all(t.total_reward == 1.0 for t in second.generated)
    for trajectory in second.generated:
        assert [m.name for m in trajectory.messages if m.role == "tool"] == ["skill_lookup"]
    m = second.metrics
    assert m["generate/skill_tools_offered"] == m["generate/skill_tool_calls"] == 4.0
    assert m["generate/skill_tool_successes"] == 4.0 and m["generate/skills_retrieved"] == 0.0
    assert m["keep/skills/extracted"] == 0.0  # a call of a skill teaches no procedure of its own
    assert (skill.uses, skill.successes, skill.last_used) == (4, 4, 2)
    assert pipeline.skills.baseline == {"tooluse": [4, 4]}  # step 1: no skill used
    assert pipeline.skills.offered == {}  # forgotten once counted: the next step offers afresh


def test_a_failed_episode_that_called_a_skill_counts_a_use_without_a_success():
    config = SkillTrainingConfig(enabled=True, as_tools=True)
    keeper = SkillKeeper(config.library("sqlite://"), config)
    skill = keeper.library.add(lookup_skill())
    (spec,) = keeper.offer(
        episodes_for_env("gfcr/ToolUse-v0", 1, kwargs=TOOLUSE, skip=1), lambda s: "code of locker"
    )
    assert spec.skills == (record(skill),)
    (episode,) = Runner(SkillCaller()).run([spec]).trajectories
    failed = Trajectory(episode.env_id, episode.task_id, episode.prompt, [Step("", "", 0.0, True, False)],
                        episode.messages, tools=episode.tools)  # fmt: skip
    metrics = keeper.keep([failed])
    assert (metrics["generate/skill_tool_calls"], metrics["generate/skill_tool_successes"]) == (1.0, 0.0)
    assert (skill.uses, skill.successes) == (1, 0) and keeper.baseline == {}


def test_as_tools_needs_the_runs_library():
    with pytest.raises(ConfigError, match=r"as_tools .* set enabled = true"):
        SkillTrainingConfig(as_tools=True)


def test_evaluation_runs_with_the_library_and_without_it_recording_nothing(make_config):
    config = make_config(env={"id": "gfcr/ToolUse-v0", "num_tasks": 4}, log={"eval_episodes": 2}, **AS_TOOLS)
    trainer = Trainer(config)
    trainer.begin()
    keeper = trainer.pipeline.skills
    keeper.library.add(lookup_skill())
    before = keeper.state_dict()
    metrics = trainer.evaluate()
    assert set(metrics) == {
        "eval/reward_mean",
        "eval/solved",
        "eval/reward_mean_no_skills",
        "eval/solved_no_skills",
    }
    assert keeper.state_dict() == before and keeper.offered == {}  # no use counted, nothing extracted

    policy, specs = trainer.pipeline.with_skills(SkillCaller(), trainer.held_out_episodes())
    assert all(spec.skills == (record(next(iter(keeper.library))),) for spec in specs)
    assert Runner(policy).run(specs).mean_reward == 1.0  # the held-out tasks, solved with the skill
    without = make_config(
        env={"id": "gfcr/ToolUse-v0", "num_tasks": 4}, out="plain", log={"eval_episodes": 2}
    )
    assert set(Trainer(without).evaluate()) == {"eval/reward_mean", "eval/solved"}


def test_a_procedure_learnt_on_one_shop_task_solves_another_with_its_own_arguments():
    shop = {"kinds": ["convert"]}
    (solved,) = Runner(OraclePolicy()).run(episodes_for_env("gfcr/Shop-v0", 1, kwargs=shop)).trajectories
    (skill,) = SkillLibrary("sqlite://").extract(solved)
    assert skill.name == "price+convert" and skill.parameters == ["item", "currency"]
    assert solved.task_id != "shop/convert/5"
    env = gym.make("gfcr/Shop-v0", **shop)
    _, info = env.reset(options={"task_id": "shop/convert/5", "skills": [record(skill)]})
    assert "skill_price_convert" in [t["function"]["name"] for t in info["tools"]]
    params = env.unwrapped.task.metadata["params"]
    assert env.step(call("skill_price_convert", item=params["item"], currency="XYZ"))[0].startswith("Error:")
    result, reward, *_ = env.step(call("skill_price_convert", **params))
    assert reward == 0.0 and float(result) == pytest.approx(env.unwrapped.task.gold)
    assert env.step(result)[1:3] == (1.0, True)  # its result is a tool's: the procedure ran here
    env.close()
