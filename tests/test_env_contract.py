"""The env contract, checked on every registered env (new families are covered automatically)."""

from __future__ import annotations

import os
import warnings

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gfcr
from gfcr.core import Action, Task, ToolCall
from gfcr.envs.remote.env import TOKEN_VARIABLE, URL_VARIABLE

ENV_IDS = gfcr.list_envs()


@pytest.fixture(scope="module", autouse=True)
def remote_server(tooluse_server):
    """gfcr/Remote-v0 takes the contract too, through `gfcr serve-env gfcr/ToolUse-v0` on loopback:
    its url and token in the environment, which vector envs' worker processes inherit."""
    url, token = tooluse_server
    os.environ |= {URL_VARIABLE: url, TOKEN_VARIABLE: token}
    yield
    for name in (URL_VARIABLE, TOKEN_VARIABLE):
        del os.environ[name]


@pytest.fixture(scope="module", params=ENV_IDS)
def env(request):
    env = gym.make(request.param)
    yield env
    env.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_gymnasium_check_env_passes_without_warnings(env_id):
    env = gym.make(env_id, render_mode="ansi")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped, skip_render_check=False)
    env.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_vector_envs_agree_in_sync_and_async_mode(env_id):
    """Async mode moves text through shared memory: it must arrive intact, equal to sync mode."""
    actions = ("∑ 中文 😀 \\boxed{1}", "", "<tool_call>{broken", "x" * 100)
    results = {}
    for mode in ("sync", "async"):
        envs = gym.make_vec(env_id, num_envs=4, vectorization_mode=mode)
        try:
            observations, infos = envs.reset(seed=42)
            assert all(isinstance(t, Task) for t in infos["task"])
            step = envs.step(actions)
            results[mode] = (observations, step[0], step[1].tolist(), step[2].tolist(), step[3].tolist())
        finally:
            envs.close()
    assert results["sync"] == results["async"]
    observations = results["sync"][0]
    assert all(isinstance(o, str) and o for o in observations)
    assert observations[0] == gym.make(env_id).reset(seed=42)[0]


def test_reset_with_seed_is_deterministic_and_task_id_picks_the_task(env):
    first, info = env.reset(seed=123)
    second, again = env.reset(seed=123)
    assert first == second and info["task"] == again["task"]
    task_id = info["task"].id
    obs, info = env.reset(options={"task_id": task_id})
    assert info["task"].id == task_id and obs == first
    assert {"task", "messages", "tools"} <= set(info)
    assert info["messages"][-1].content == obs


def test_unknown_task_id_is_an_error_naming_close_ids(env):
    task_id = env.reset(seed=0)[1]["task"].id
    with pytest.raises(gfcr.UnknownNameError, match="did you mean"):
        env.reset(options={"task_id": task_id + "x"})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=300) | st.sampled_from(["", "<tool_call>", "\\boxed{", '{"name": 1}', "\x00"]))
def test_any_text_action_gives_a_valid_step(env, text):
    env.reset(seed=0)
    _assert_valid_step(env, env.step(text))


@pytest.mark.parametrize(
    "action",
    [None, 42, b"bytes", ["list"], Action("", (ToolCall("no_such_tool", {}),)), "x" * 40_000],
)
def test_malformed_actions_never_raise_and_earn_nothing(env, action):
    env.reset(seed=0)
    result = env.step(action)
    _assert_valid_step(env, result)
    assert result[1] == 0.0
    if not isinstance(action, Action):
        assert result[4]["signals"]["format_ok"] is False and result[0].startswith("Invalid action")


def test_step_after_the_end_says_so(env):
    env.reset(seed=0)
    while True:
        *_, terminated, truncated, _ = env.step("no answer")
        if terminated or truncated:
            break
    obs, reward, terminated, *_ = env.step("again")
    assert "reset()" in obs and reward == 0.0 and terminated


def _assert_valid_step(env, result):
    obs, reward, terminated, truncated, info = result
    assert env.observation_space.contains(obs)
    assert isinstance(reward, float) and isinstance(terminated, bool) and isinstance(truncated, bool)
    assert set(env.unwrapped.signal_defaults) <= set(info["signals"])
    assert all(m.content == obs or m.role == "tool" for m in info["messages"])
