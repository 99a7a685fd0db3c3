"""gfcr/ToolUse-v0, the trainer demo's task: the tool must be called and its answer used."""

from __future__ import annotations

import gymnasium as gym

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
