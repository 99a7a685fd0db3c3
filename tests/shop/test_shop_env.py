"""gfcr/Shop-v0: the oracle solves every kind, junk and attackers earn nothing, kinds pick tasks."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

from gfcr.agents import make_policy, rollout
from gfcr.envs.shop import ShopEnv, shop_tasks
from gfcr.errors import ConfigError, UnknownNameError
from gfcr.testing import contract
from gfcr.workloads import KINDS


def call(name: str, **arguments: object) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def test_the_oracle_scores_one_and_random_text_nothing():
    assert contract.check_scripted_agents("gfcr/Shop-v0", episodes=12, oracle_at_least=1.0, random_at_most=0.0)


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_oracle_solves_every_task_of_each_kind(kind):
    env = gym.make("gfcr/Shop-v0", kinds=[kind])
    oracle = make_policy("scripted:oracle")
    for task_id in env.unwrapped.tasks.ids():
        trajectory = rollout(env, oracle, env_id="gfcr/Shop-v0", task_id=task_id)
        assert trajectory.total_reward == 1.0, task_id
        assert len(trajectory.steps) == len(KINDS[kind][1]) + 1  # one call a turn, then the answer


def play(env: ShopEnv, task_id: str, *actions: str) -> tuple[float, dict]:
    env.reset(options={"task_id": task_id})
    for action in actions:
        _, reward, terminated, truncated, info = env.step(action)
    assert terminated
    return reward, info["signals"]


def test_the_gold_number_without_the_tool_chain_earns_nothing():
    env = ShopEnv()
    task = env.tasks.get("shop/coupon_convert/5")
    gold = str(task.gold)
    # guessed (or leaked) outright, with no tool call
    assert play(env, task.id, gold) == (0.0, {"format_ok": True, "used_tool": False, "computed": False, "correct": False})
    # after a tool call whose result is another number: the gold still was never computed
    item = task.metadata["params"]["item"]
    reward, signals = play(env, task.id, call("price", item=item), f"The answer is {gold}.")
    assert (reward, signals["used_tool"], signals["computed"]) == (0.0, True, False)


def call_the_procedure(env: ShopEnv, task_id: str) -> None:
    """Reset to `task_id` and make every call of its kind's procedure, as the oracle would."""
    env.reset(options={"task_id": task_id})
    for _ in KINDS[env.task.metadata["kind"]][1]:
        env.step(ShopEnv.oracle(env.task, env.messages))


def test_a_reply_that_lists_every_result_earns_nothing():
    """Running the tools and then hedging over their results: one number is the answer, not several."""
    env = ShopEnv()
    call_the_procedure(env, "shop/coupon_convert/9")
    _, reward, terminated, _, info = env.step(" or ".join(str(r) for r in env.results))
    assert terminated and (reward, info["signals"]["computed"]) == (0.0, False)
    call_the_procedure(env, "shop/coupon_convert/9")
    assert env.step(f"It comes to {env.results[-1]} in the end.")[1] == 1.0  # one number, in words: fine


def test_a_computed_number_that_is_not_the_answer_earns_nothing():
    env = ShopEnv()
    task = env.tasks.get("shop/tax/7")  # price, tax: answering the price alone stops half way
    params = task.metadata["params"]
    reward, signals = play(env, task.id, call("price", item=params["item"]), str(env.tools["price"](item=params["item"])))
    assert (reward, signals["computed"], signals["correct"]) == (0.0, True, False)


def test_tools_refuse_unknown_names_and_non_finite_amounts_with_the_valid_choices():
    env = ShopEnv()
    env.reset(seed=0)
    unknown, *_ = env.step(call("convert", amount=1.0, currency="XYZ"))
    assert "unknown currency 'XYZ'; one of EUR, GBP, JPY, CHF" in unknown
    infinite, *_ = env.step('<tool_call>{"name": "tax", "arguments": {"amount": Infinity, "region": "CA"}}</tool_call>')
    assert "finite" in infinite and env.results == []


def test_kinds_pick_the_tasks_and_ids_do_not_depend_on_them():
    every, two = shop_tasks(), shop_tasks(["tax", "coupon"])
    assert {t.metadata["kind"] for t in (two[i] for i in range(len(two)))} == {"tax", "coupon"}
    assert len(two) == 32 + 24 and len(every) == 32 + 32 + 24 + 96
    for task_id in ("shop/tax/31", "shop/coupon/0"):
        assert two.get(task_id) == every.get(task_id)
        assert two.get(task_id).metadata["category"] == "shop/" + task_id.split("/")[1]
    assert two.index_of("shop/convert/0") is None and two.index_of("shop/tax/32") is None
    prompts = [every[i].prompt for i in range(len(every))]
    assert len(set(prompts)) == len(prompts)  # no two tasks share a prompt


def test_bad_kinds_are_refused_by_name():
    with pytest.raises(UnknownNameError, match="did you mean 'coupon'"):
        shop_tasks(["cuopon"])
    with pytest.raises(ConfigError, match="at least one"):
        shop_tasks([])
