"""The env contract, checked on every registered env (new families are covered automatically).

The checks are `gfcr.testing.contract`'s, the same that `gfcr check ENV_ID` runs for plugin authors;
here hypothesis adds generated text to their fixed bank of hostile actions."""

from __future__ import annotations

import os

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gfcr
from gfcr.core import Action, ToolCall
from gfcr.envs.remote.env import TOKEN_VARIABLE, URL_VARIABLE
from gfcr.testing import contract

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
    contract.check_gymnasium(env_id)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_vector_envs_agree_in_sync_and_async_mode(env_id):
    """Async mode moves text through shared memory: it must arrive intact, equal to sync mode."""
    contract.check_vector_modes(env_id)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_envs_pickle(env_id):
    contract.check_pickling(env_id)


def test_reset_with_seed_is_deterministic_and_task_id_picks_the_task(env):
    contract.check_seeding(env)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=300) | st.sampled_from(contract.HOSTILE_TEXT))
def test_any_text_action_gives_a_valid_step(env, text):
    contract.check_action(env, text)


@pytest.mark.parametrize(
    "action",
    [*contract.MALFORMED_ACTIONS, Action("", (ToolCall("no_such_tool", {}),))],
)
def test_malformed_actions_never_raise_and_earn_nothing(env, action):
    contract.check_malformed_action(env, action)


def test_step_after_the_end_says_so(env):
    contract.check_step_after_end(env)
