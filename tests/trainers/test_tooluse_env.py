"""gfcr/ToolUse-v0, the trainer demo's task: the tool must be called and its answer used."""

from __future__ import annotations

import gymnasium as gym
from scripted_episodes import process_scores, scored_episode

from gfcr.agents import OraclePolicy, Runner, RunnerConfig, episodes_for_env
from gfcr.envs.tooluse import LOOKUP_CALL


def test_oracle_solves_every_episode():
    result = Runner(OraclePolicy(), RunnerConfig(concurrency=8)).run(episodes_for_env("gfcr/ToolUse-v0", 32))
    assert result.solved == 32 and result.mean_reward == 1.0


def test_the_right_code_without_a_lookup_earns_nothing():
    env = gym.make("gfcr/ToolUse-v0")
    _, info = env.reset(seed=3)
    _, reward, terminated, _, step_info = env.step(info["task"].gold)
    assert (reward, terminated, step_info["signals"]["used_tool"]) == (0.0, True, False)


def test_a_wrong_code_after_a_lookup_earns_nothing_and_says_so():
    env = gym.make("gfcr/ToolUse-v0", num_codes=2)
    _, info = env.reset(seed=4)
    code, *_ = env.step(LOOKUP_CALL)
    wrong = "1" if code == "0" else "0"
    obs, reward, terminated, _, step_info = env.step(wrong)
    assert reward == 0.0 and terminated and "not the code" in obs and step_info["signals"]["used_tool"]


def test_codes_are_spread_over_the_range_and_digits_appear_only_in_the_tool_answer():
    env = gym.make("gfcr/ToolUse-v0")
    tasks = env.unwrapped.tasks
    codes = {tasks[i].gold for i in range(300)}
    assert codes == {str(d) for d in range(10)}
    assert not any(ch.isdigit() for i in range(300) for ch in tasks[i].prompt)


def test_the_process_rule_pays_the_first_lookup_and_leaves_the_reply_to_the_outcome():
    """`[judge.process] scorer = "rules"` on ToolUse: the lookup step scores 1, a second lookup and
    a call of a tool that does not exist score 0, and the reply is the outcome's (no score), so a
    policy that looks the code up again and again earns no more than one that looks it up once."""
    env = gym.make("gfcr/ToolUse-v0", max_turns=4)
    bogus = '<tool_call>{"name": "open", "arguments": {}}</tool_call>'
    trajectory = scored_episode(env, [bogus, LOOKUP_CALL, LOOKUP_CALL, "7"], "gfcr/ToolUse-v0", "tooluse/3")
    assert process_scores(trajectory) == [0.0, 1.0, 0.0, None]
    guessed = scored_episode(env, ["7"], "gfcr/ToolUse-v0", "tooluse/3")  # a reply without a lookup
    assert process_scores(guessed) == [None] and guessed.total_reward == 0.0
