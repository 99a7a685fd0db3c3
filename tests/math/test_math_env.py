"""gfcr/Math-v0 end to end: real data, the oracle scores 1.0, junk scores ~0, tools, user files."""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
import time

import gymnasium as gym
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import gfcr  # noqa: F401  (registers the envs)
from gfcr.agents import OraclePolicy, RandomPolicy
from gfcr.agents.runner.rollout import rollout
from gfcr.core import Message
from gfcr.envs.math import MathEnv
from gfcr.envs.math.calculator import calculator
from gfcr.envs.math.data import RG_WITHOUT_GOLD, load_source
from gfcr.errors import ConfigError, DataError, ToolError, UnknownNameError


def run_all(env_id: str, policy, **kwargs) -> list[float]:
    env = gym.make(env_id, **kwargs)
    ids = env.unwrapped.tasks.ids()
    return [rollout(env, policy, env_id=env_id, task_id=task_id).total_reward for task_id in ids]


@pytest.mark.parametrize("dataset", ["mmath", "champ"])
def test_oracle_solves_every_bundled_task(dataset):
    rewards = run_all("gfcr/Math-v0", OraclePolicy(), dataset=dataset)
    assert len(rewards) == {"mmath": 374, "champ": 270}[dataset]
    assert min(rewards) == 1.0


def test_oracle_solves_samples_of_every_reasoning_gym_generator():
    rewards = run_all("gfcr/Math-v0", OraclePolicy(), dataset="reasoning_gym", size=2, seed=3)
    assert len(rewards) >= 2 * 95 and min(rewards) == 1.0


@pytest.mark.parametrize("dataset", ["mmath", "champ"])
def test_random_agent_scores_near_zero(dataset):
    rewards = run_all("gfcr/Math-v0", RandomPolicy(seed=1), dataset=dataset)
    assert sum(rewards) / len(rewards) < 0.02


def test_wrong_and_missing_answers_are_told_apart():
    env = gym.make("gfcr/Math-v0", split="AIME2024")
    env.reset(options={"task_id": "mmath/AIME2024/0"})
    _, reward, terminated, _, info = env.step("It is \\boxed{203}.")
    assert (reward, terminated, info["signals"]) == (
        0.0,
        True,
        {"format_ok": True, "answer_extracted": True, "correct": False},
    )
    env.reset(options={"task_id": "mmath/AIME2024/0"})
    obs, reward, *_, info = env.step("It is 204.")
    assert reward == 0.0 and "\\boxed{}" in obs and info["signals"]["answer_extracted"] is False


def test_equivalent_forms_of_the_gold_answer_are_accepted():
    env = gym.make("gfcr/Math-v0", split="CNMO")
    env.reset(options={"task_id": "mmath/CNMO/13"})  # gold: $\\frac{1}{2}$
    assert env.step("so \\boxed{0.5}")[1] == 1.0
    env.reset(options={"task_id": "mmath/CNMO/1"})  # gold: $[-\\frac{1}{4}, 0) \\cup (0, 2)$
    assert env.step("\\boxed{[-1/4,0)\\cup(0,2)}")[1] == 1.0


def test_calculator_tool_episode():
    env = gym.make("gfcr/Math-v0", split="AIME2024", tools=["calculator"])
    obs, info = env.reset(options={"task_id": "mmath/AIME2024/0"})
    assert [t["function"]["name"] for t in info["tools"]] == ["calculator"] and "calculator" in obs
    call = '<tool_call>{"name": "calculator", "arguments": {"expression": "9/(1/2+2) * 60"}}</tool_call>'
    obs, reward, terminated, truncated, info = env.step(call)
    assert obs == "216" and reward == 0.0 and not (terminated or truncated)
    assert info["messages"][0].role == "tool" and info["messages"][0].tool_call_id == "call_0"
    obs, *_ = env.step(
        '<tool_call>{"name": "calculator", "arguments": {"expression": "__import__(1)"}}</tool_call>'
    )
    assert obs.startswith("Error: calculator: '__import__' is not allowed")
    _, reward, terminated, *_ = env.step("\\boxed{204}")
    assert reward == 1.0 and terminated


def test_turn_limit_truncates_the_episode():
    env = gym.make("gfcr/Math-v0", tools=["calculator"], max_turns=2)
    env.reset(seed=0)
    call = '<tool_call>{"name": "calculator", "arguments": {"expression": "1+1"}}</tool_call>'
    assert env.step(call)[3] is False
    _, reward, terminated, truncated, _ = env.step(call)
    assert (reward, terminated, truncated) == (0.0, False, True)


def test_user_files_in_jsonl_and_parquet(tmp_path):
    rows = [
        {"q": "What is 6*7?", "a": "42", "key": "six-seven"},
        {"q": "Half of 1?", "a": "1/2", "key": "half"},
    ]
    jsonl = tmp_path / "mine.jsonl"
    jsonl.write_text("\n".join(json.dumps(r) for r in rows))
    parquet = tmp_path / "mine.parquet"
    pq.write_table(pa.Table.from_pylist(rows), parquet)
    for path in (jsonl, parquet):
        env = gym.make(
            "gfcr/Math-v0", dataset=str(path), question_field="q", answer_field="a", id_field="key"
        )
        obs, info = env.reset(options={"task_id": "mine/half"})
        assert obs.startswith("Half of 1?") and env.step("\\boxed{0.5}")[1] == 1.0


def test_bad_user_files_say_what_is_wrong(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"question": "1+1?", "answer": "2"}\n{oops\n')
    with pytest.raises(DataError, match="bad.jsonl:2: not valid JSON"):
        load_source(str(path))
    path.write_text('{"problem": "1+1?", "answer": "2"}\n')
    with pytest.raises(DataError, match="has no field 'question'.*question_field="):
        load_source(str(path))
    with pytest.raises(DataError, match="does not exist"):
        load_source(str(tmp_path / "missing.jsonl"))


def test_configuration_errors_name_the_fix():
    with pytest.raises(UnknownNameError, match="did you mean 'mmath'"):
        MathEnv(dataset="mmaht")
    with pytest.raises(UnknownNameError, match="did you mean 'AIME202"):
        MathEnv(split="AIME2042")
    with pytest.raises(UnknownNameError, match="math tool 'calc'"):
        MathEnv(tools=["calc"])
    with pytest.raises(ConfigError, match="takes no options"):
        MathEnv(dataset="champ", size=3)


def test_reasoning_gym_tasks_are_seeded_and_addressable():
    source = load_source("reasoning_gym", generators=["basic_arithmetic", "gcd"], size=5, seed=11)
    again = load_source("reasoning_gym", generators=["basic_arithmetic", "gcd"], size=5, seed=11)
    assert len(source) == 10 and source.ids() == again.ids() and source[7].prompt == again[7].prompt
    assert source.get("rg/gcd/2") == source[7]
    assert not RG_WITHOUT_GOLD & set(t.source.split("/")[1] for t in map(source.__getitem__, range(10)))


@pytest.mark.parametrize(
    ("expression", "result"),
    [("1/3 + 1/6", "1/2 ≈ 0.500000000000000"), ("0.1 + 0.2", "3/10 ≈ 0.300000000000000"), ("2^100", str(2**100)),
     ("binomial(10, 3) * factorial(4)", "2880"), ("sqrt(2)**2", "2"), ("-(3 % 2) // 1", "-1")],
)  # fmt: skip
def test_calculator_is_exact(expression, result):
    assert calculator(expression) == result


@pytest.mark.parametrize(
    "attack",
    ["__import__('os').system('id')", "().__class__.__bases__", "open('/etc/passwd')", "lambda: 1",
     "[1, 2]", "x", "9**9**9**9", "factorial(10**6)", "1/0", "'a' * 10", "1" * 600],
)  # fmt: skip
def test_calculator_refuses_code_and_huge_results_quickly(attack):
    started = time.perf_counter()
    with pytest.raises(ToolError, match="calculator"):
        calculator(attack)
    assert time.perf_counter() - started < 5.0  # refused up front, not after a long computation


# ----------------------------------------------------------------------------- the episode's fast path


def test_an_episode_reads_the_same_after_the_speed_ups():
    """What an episode shows is unchanged: messages, signals, observations, info keys."""
    env = gym.make("gfcr/Math-v0", split="AIME2024", system_prompt="Be brief.")
    obs, info = env.reset(options={"task_id": "mmath/AIME2024/0"})
    assert [m.role for m in info["messages"]] == ["system", "user"] and info["messages"][1].content == obs
    assert info["tools"] == [] and info["task"].id == "mmath/AIME2024/0"
    obs, reward, terminated, truncated, info = env.step("so \\boxed{204}.")
    assert (obs, reward, terminated, truncated) == ("Your answer 204 is correct.", 1.0, True, False)
    assert info == {
        "messages": [Message("user", "Your answer 204 is correct.")],
        "signals": {"format_ok": True, "answer_extracted": True, "correct": True},
        "turn": 1,
    }
    assert [m.role for m in env.unwrapped.messages] == ["system", "user", "assistant", "user"]
    env.reset(options={"task_id": "mmath/AIME2024/0"})
    obs, reward, *_, info = env.step("no box")
    assert obs == "No final answer found, so the episode is over with reward 0 (the rule was: Put your final answer within \\boxed{})." and reward == 0.0
    assert info["signals"] == {"format_ok": False, "answer_extracted": False, "correct": False}


def test_resets_share_no_mutable_state():
    env = MathEnv(split="AIME2024")
    _, first = env.reset(options={"task_id": "mmath/AIME2024/0"})
    first["messages"].append("junk")
    env.step("\\boxed{1}")
    _, second = env.reset(options={"task_id": "mmath/AIME2024/0"})
    assert len(second["messages"]) == 1 and second["messages"] is not env.messages
    assert second["messages"][0] == Message("user", env.render_prompt(env.task))
    env.system_prompt = "Think step by step."  # a changed system prompt shows at the next reset
    _, third = env.reset(options={"task_id": "mmath/AIME2024/0"})
    assert third["messages"][0] == Message("system", "Think step by step.")


def test_reset_options_are_still_checked():
    env = MathEnv(split="AIME2024")
    with pytest.raises(ConfigError, match=r"unknown reset options \['seed'\]"):
        env.reset(options={"task_id": "mmath/AIME2024/0", "seed": 1})
    with pytest.raises(ConfigError, match=r"unknown reset options \['id'\]"):
        env.reset(options={"id": "mmath/AIME2024/0"})
    assert env.reset(options={})[1]["task"].id.startswith("mmath/AIME2024/")


def test_message_keeps_its_dataclass_contract():
    """`Message.__init__` is written by hand for speed: same fields, order, defaults and checks."""
    fields = [(f.name, f.default) for f in dataclasses.fields(Message)]
    parameters = list(inspect.signature(Message).parameters.values())
    defaults = [dataclasses.MISSING if p.default is p.empty else p.default for p in parameters]
    assert fields == list(zip([p.name for p in parameters], defaults, strict=True))
    message = Message("tool", "4", tool_call_id="call_0", name="calculator")
    assert dataclasses.replace(message, content="5").content == "5"
    assert message == Message.from_dict(message.to_dict())
    with pytest.raises(dataclasses.FrozenInstanceError):
        message.content = "5"  # type: ignore[misc]
    with pytest.raises(ConfigError, match="message role must be one of"):
        Message("robot", "hi")  # type: ignore[arg-type]


def test_plain_answers_are_read_without_a_box_and_boxes_still_win():
    env = MathEnv(dataset="reasoning_gym", generators=["chain_sum"], answer_format="plain")
    env.reset(options={"task_id": "rg/chain_sum/0"})
    gold = env.unwrapped.task.gold
    assert "End your reply with the final answer." in env.unwrapped.render_prompt(env.unwrapped.task)
    for reply, reward in ((f"The answer is {gold}.", 1.0), (f"\\boxed{{{gold}}} but 12345", 1.0),
                          ("I do not know.", 0.0), ("so 9^9^9^9", 0.0)):  # fmt: skip
        env.reset(options={"task_id": "rg/chain_sum/0"})
        assert env.step(reply)[1] == reward, reply
    strict = MathEnv(dataset="reasoning_gym", generators=["chain_sum"])
    strict.reset(options={"task_id": "rg/chain_sum/0"})
    assert strict.step(f"The answer is {gold}.")[1] == 0.0  # the default still wants the box
    with pytest.raises(UnknownNameError, match="unknown answer format 'loose'"):
        MathEnv(dataset="mmath", answer_format="loose")


def test_reasoning_gym_difficulty_comes_from_generator_config():
    easy = {"min_terms": 2, "max_terms": 2, "min_digits": 1, "max_digits": 1}
    env = MathEnv(dataset="reasoning_gym", generators=["chain_sum"], generator_config=easy, size=50)
    for index in range(50):
        numbers = re.findall(r"\d+", env.unwrapped.tasks[index].prompt)
        assert len(numbers) == 2 and all(len(n) == 1 for n in numbers)
    with pytest.raises(ConfigError, match="chain_sum.*rejected generator_config"):
        MathEnv(dataset="reasoning_gym", generators=["chain_sum"], generator_config={"colour": 1}).reset()
