"""gfcr/Dialogue-v0 end to end: the oracle solves every task, junk fails, state decides the reward."""

from __future__ import annotations

import hashlib
import json

import gymnasium as gym
import pytest

import gfcr
from gfcr.agents import OraclePolicy, RandomPolicy
from gfcr.agents.runner.rollout import rollout
from gfcr.core import Message, ToolCall, ToolSpec
from gfcr.envs.dialogue import DialogueEnv, evaluate_conversation, load_domain
from gfcr.envs.dialogue.oracle import TRANSFER_SENTENCE
from gfcr.errors import ConfigError, UnknownNameError

ENV_ID = "gfcr/Dialogue-v0"
RETURN_ALL = {
    "order_id": "#W1679211",
    "item_ids": ["9612497925", "7127170374", "6268080249"],
    "payment_method_id": "paypal_3022415",
}  # retail/108's gold write


def call(name: str, **arguments) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def tables_digest(domain: str) -> str:
    return hashlib.sha256(json.dumps(load_domain(domain).tables, sort_keys=True).encode()).hexdigest()


@pytest.mark.parametrize("domain", ["airline", "retail"])
def test_oracle_solves_every_task_and_leaves_the_shared_tables_untouched(domain):
    before = tables_digest(domain)
    env = gym.make(ENV_ID, domain=domain)
    trajectories = [rollout(env, OraclePolicy(), env_id=ENV_ID, task_id=t) for t in env.unwrapped.tasks.ids()]
    assert len(trajectories) == {"airline": 50, "retail": 114}[domain]
    assert all(t.total_reward == 1.0 and t.signals["user_ended"] for t in trajectories)
    assert not any(t.signals["simulator_failure"] for t in trajectories)
    assert tables_digest(domain) == before  # every write went to the episode's own copy


def test_random_agent_scores_near_zero():
    env = gym.make(ENV_ID)
    rewards = [
        rollout(env, RandomPolicy(seed=1), env_id=ENV_ID, task_id=t).total_reward
        for t in env.unwrapped.tasks.ids()
    ]
    assert len(rewards) == 164 and sum(rewards) / len(rewards) < 0.05


def test_an_equivalent_path_to_the_gold_end_state_succeeds():
    """retail/0's gold looks things up, then exchanges two items; the exchange alone, listing the
    items in the other order, reaches the same state: success, though no gold call was matched."""
    env = gym.make(ENV_ID, domain="retail")
    env.reset(options={"task_id": "retail/0"})
    obs, *_ = env.step(call("exchange_delivered_order_items", order_id="#W2378156",
                            item_ids=["4983901480", "1151293680"], new_item_ids=["7747408585", "7706410293"],
                            payment_method_id="credit_card_9513926"))  # fmt: skip
    assert '"status": "exchange requested"' in obs
    obs, reward, terminated, _, info = env.step("Your exchange request for both items has been placed.")
    assert reward == 0.0 and not terminated  # the user still has an agenda item to say
    obs, reward, terminated, _, info = env.step("Understood, everything you asked for is taken care of.")
    assert (reward, terminated) == (1.0, True) and "###STOP###" in obs
    assert info["signals"]["db_match"] and info["signals"]["gold_actions_called"] == 0.0


def test_a_wrong_write_or_a_missing_answer_fails_with_the_component_named():
    env = gym.make(ENV_ID, domain="retail")
    env.reset(options={"task_id": "retail/108"})
    env.step(
        call("return_delivered_order_items", **{**RETURN_ALL, "item_ids": ["9612497925"]})
    )  # one of three
    signals = _talk_until_the_end(env, "I have requested the return of that item for you.")
    assert signals["db_match"] is False and signals["user_gave_up"] and not signals["user_ended"]

    env.reset(options={"task_id": "retail/108"})
    env.step(call("return_delivered_order_items", **RETURN_ALL))
    signals = _talk_until_the_end(env, "I have requested the return of those items for you.")
    assert signals["db_match"] is True and signals["communicated"] is False and signals["user_gave_up"]


def _talk_until_the_end(env, text: str) -> dict:
    for _ in range(10):
        _, reward, terminated, truncated, info = env.step(text)
        if terminated or truncated:
            assert reward == 0.0
            return info["signals"]
    raise AssertionError("the user never ended the conversation")


def test_a_transfer_ends_the_episode_and_is_scored():
    env = gym.make(ENV_ID, domain="airline")
    env.reset(options={"task_id": "airline/13"})
    obs, *_ = env.step(
        call("transfer_to_human_agents", summary="The user wants to change the trip's origin.")
    )
    assert obs == "Transfer successful"
    obs, reward, terminated, _, info = env.step(TRANSFER_SENTENCE)
    assert "###TRANSFER###" in obs and (reward, terminated) == (1.0, True) and info["signals"]["transferred"]


def test_the_turn_limit_truncates_with_the_verdict_in_the_signals():
    env = gym.make(ENV_ID, domain="retail", max_turns=2)
    env.reset(options={"task_id": "retail/108"})
    lookup = call("get_order_details", order_id="#W1679211")
    assert env.step(lookup)[2:4] == (False, False)
    _, reward, terminated, truncated, info = env.step(lookup)
    assert (reward, terminated, truncated) == (0.0, False, True)
    assert info["signals"]["db_match"] is False and info["signals"]["expects_change"] is True


def test_prompt_holds_the_domain_policy_and_the_domain_tools():
    env = gym.make(ENV_ID)
    domains = [("airline/0", "book_reservation", "# Airline Agent Policy"),
               ("retail/0", "exchange_delivered_order_items", "# Retail agent policy")]  # fmt: skip
    for task_id, tool, policy_title in domains:
        obs, info = env.reset(options={"task_id": task_id})
        system, opening = info["messages"]
        assert system.role == "system" and policy_title in system.content and "<tool_call>" in system.content
        assert opening.role == "user" and opening.content == obs
        assert tool in [spec["function"]["name"] for spec in info["tools"]]
    _, info = gym.make(ENV_ID, system_prompt="Be brief.").reset(seed=0)
    assert info["messages"][0].content == "Be brief."


def test_offline_evaluation_agrees_with_the_episode():
    env = gym.make(ENV_ID, domain="airline")
    for task_id in ("airline/2", "airline/13", "airline/4"):
        trajectory = rollout(env, OraclePolicy(), env_id=ENV_ID, task_id=task_id)
        verdict = evaluate_conversation(env.unwrapped.task, env.unwrapped.messages)
        assert (verdict.db_match, verdict.communicated) == (True, True) and trajectory.total_reward == 1.0
    task = load_domain("airline").task("airline/2")
    assert evaluate_conversation(task, [Message("assistant", "Hello there, how are you?")]).db_match is False
    cancel = Message("assistant", "", (ToolCall("cancel_reservation", {"reservation_id": "NO6JO3"}),))
    assert evaluate_conversation(load_domain("airline").task("airline/0"), [cancel]).db_match is False


def test_splits_and_domains_are_chosen_by_keyword():
    assert len(gym.make(ENV_ID).unwrapped.tasks) == 164
    assert len(gym.make(ENV_ID, domain="airline", split="test").unwrapped.tasks) == 20
    assert len(gym.make(ENV_ID, domain=["retail"], split="train").unwrapped.tasks) == 74
    assert len(gfcr.make_suite("dialogue")) == 164


def test_configuration_errors_name_the_fix():
    with pytest.raises(UnknownNameError, match="did you mean 'retail'"):
        DialogueEnv(domain="retial")
    with pytest.raises(UnknownNameError, match="dialogue split 'tset'; did you mean 'test'"):
        DialogueEnv(split="tset")
    with pytest.raises(ConfigError, match="user must be 'scripted', a policy spec"):
        DialogueEnv(user="scripted-user")


def test_a_crashing_tool_is_flagged_as_an_infrastructure_failure():
    def broken_lookup(order_id: str) -> str:
        """A lookup with a bug.

        Args:
            order_id: The order id.
        """
        return {}[order_id]

    env = gym.make(ENV_ID, domain="retail")
    env.reset(options={"task_id": "retail/108"})
    env.unwrapped.tools["broken_lookup"] = ToolSpec.from_function(broken_lookup)
    obs, reward, *_, info = env.step(call("broken_lookup", order_id="#W1679211"))
    assert obs.startswith("Error: broken_lookup failed: KeyError") and info["signals"]["simulator_failure"]
    obs, reward, *_, info = env.step(call("get_order_details", order_id="#W1679211"))
    assert info["signals"]["simulator_failure"]  # for the rest of the episode
    env.reset(options={"task_id": "retail/108"})
    _, _, _, _, info = env.step(call("get_order_details", order_id="#W1679211"))
    assert info["signals"]["simulator_failure"] is False
