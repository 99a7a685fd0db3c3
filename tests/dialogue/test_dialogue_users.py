"""The simulated users: the scripted user's rules, and the LLM user's seeding, caching and guards.

The LLM user runs over real gfcr policies: `scripted:random` through `make_policy`, and
`ScriptPolicy`, a policy that plays a customer from a fixed list of lines (there are no model
weights here, and a scripted policy makes the guards' cases exact).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import gymnasium as gym
import pytest

from gfcr.agents import Completion, Request
from gfcr.core import Message
from gfcr.envs.dialogue import LLMUser, Progress, ScriptedUser, load_domain
from gfcr.envs.dialogue.users.scenario import first_person

ENV_ID = "gfcr/Dialogue-v0"
WAITING = Progress(goal_met=False, writes_pending=True, changed=False, transferred=False)
DONE = Progress(goal_met=True, writes_pending=False, changed=False, transferred=False)
RETURN_ALL = {
    "order_id": "#W1679211",
    "item_ids": ["9612497925", "7127170374", "6268080249"],
    "payment_method_id": "paypal_3022415",
}  # retail/108's gold write


def call(name: str, **arguments) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def started(task_id: str, **options) -> ScriptedUser:
    user = ScriptedUser(**options)
    user.start(load_domain(task_id.split("/")[0]).task(task_id), seed=0)
    return user


def say(user, text: str, progress: Progress = WAITING):
    return user.reply([Message("assistant", text)], progress)


def test_scripted_user_answers_questions_by_topic_and_admits_what_it_does_not_know():
    user = started("retail/0")  # Yusuf Rossi in zip 19122, who does not remember his email
    assert (
        say(user, "Could you tell me your name and zip code, please?").text
        == "I am Yusuf Rossi in zip code 19122."
    )
    assert (
        say(user, "What is the email address on your account?").text == "I do not remember my email address."
    )


def test_scripted_user_confirms_only_while_its_goal_needs_changes():
    user = started("airline/0")
    assert (
        say(user, "Shall I cancel reservation EHGLP3 now? Please confirm (yes/no).").text
        == "Yes, please go ahead."
    )
    no_change_needed = Progress(goal_met=False, writes_pending=False, changed=False, transferred=False)
    assert (
        say(user, "Do you want me to proceed with the cancellation?", no_change_needed).text
        == "No, I don't want that."
    )


def test_scripted_user_says_its_held_back_confirmation_line_when_asked_to_confirm():
    user = started("retail/9")  # changes its mind when asked for confirmation
    reply = say(user, "I will exchange the water bottle and the desk lamp. Do you confirm (yes/no)?")
    assert "only exchange the desk lamp" in reply.text and reply.end is None
    assert say(user, "So only the desk lamp then. Do you confirm (yes/no)?").text == "Yes, please go ahead."


def test_scripted_user_goes_through_its_agenda_then_stops_once_the_goal_is_met():
    user = started("airline/0")  # two agenda sentences
    first = say(user, "I am sorry, but this reservation cannot be cancelled under our policy.", DONE)
    second = say(user, "I understand, but the policy does not allow a refund for this booking.", DONE)
    last = say(user, "Is there anything else I can help you with today?", DONE)
    assert "insurance" in first.text and "refund" in second.text
    assert (last.end, "###STOP###" in last.text) == ("stop", True)


def test_scripted_user_does_not_understand_junk_and_gives_up_after_max_stalls():
    user = started("airline/2", max_stalls=2)
    first = say(user, "qz8 {} <> 42 \\boxed{7}")
    assert first.text == "Sorry, I don't understand. Could you say that again?" and first.end is None
    assert say(user, "SELECT 1; DROP TABLE users;").end == "gave_up"


def test_scripted_user_is_transferred_when_told_or_when_the_tool_was_called():
    assert (
        say(started("airline/13"), "YOU ARE BEING TRANSFERRED TO A HUMAN AGENT. PLEASE HOLD ON.").end
        == "transfer"
    )
    called = Progress(goal_met=False, writes_pending=False, changed=False, transferred=True)
    assert say(started("airline/13"), "One moment while I look into that for you.", called).end == "transfer"


@pytest.mark.parametrize(
    ("second_person", "first"),
    [("You are Emma Kim.", "I am Emma Kim."),
     ("If Agent tells you that cancellation is not possible, mention that you were told otherwise.",
      "If Agent tells me that cancellation is not possible, mention that I was told otherwise."),
     ("You want to know how much money you can get back.", "I want to know how much money I can get back."),
     ("You name is Ivan Khan and your zip code is 28243.", "My name is Ivan Khan and my zip code is 28243."),
     ("You're in a hurry; yours is the one you'd keep.", "I'm in a hurry; mine is the one I'd keep.")],
)  # fmt: skip
def test_scenarios_are_spoken_in_the_first_person(second_person, first):
    assert first_person(second_person) == first


# -- the LLM user ---------------------------------------------------------------------------------


class ScriptPolicy:
    """A policy that answers with the given lines in turn and records what it was asked."""

    name = "test:script"
    version = "1"

    def __init__(self, lines: Sequence[str | Exception]) -> None:
        self.lines = list(lines)
        self.requests: list[Request] = []

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        self.requests.extend(requests)
        line = self.lines.pop(0)
        if isinstance(line, Exception):
            raise line
        return [Completion(line)]


def test_llm_user_sees_its_scenario_and_the_conversation_with_roles_swapped():
    policy = ScriptPolicy(["I need to return some items from my order.", "My zip code is 91455."])
    env = gym.make(ENV_ID, domain="retail", user=policy)
    obs, _ = env.reset(seed=3, options={"task_id": "retail/108"})
    obs, reward, terminated, *_ = env.step("Sure. What is your zip code?")
    assert obs == "My zip code is 91455." and (reward, terminated) == (0.0, False)
    request = policy.requests[-1]
    system, greeting, opening, question = request.messages
    assert system.role == "system" and "You want to return everything but a tablet" in system.content
    assert "###STOP###" in system.content  # tau2-bench's simulation guidelines, read from the package
    assert (greeting.role, opening.role, question.role) == ("user", "assistant", "user")
    assert question.content == "Sure. What is your zip code?" and request.sampling.seed is not None


def test_llm_user_stop_while_confirming_is_held_until_the_agent_has_written():
    task_id = "retail/108"
    write = call("return_delivered_order_items", **RETURN_ALL)
    policy = ScriptPolicy(["Please return my items.", "Yes, go ahead, thanks! ###STOP###"])
    env = gym.make(ENV_ID, domain="retail", user=policy)
    env.reset(options={"task_id": task_id})
    obs, _, terminated, _, info = env.step(
        "I can return them to PayPal; you get 346.93 back. Shall I proceed (yes/no)?"
    )
    assert obs == "Yes, go ahead, thanks!" and not terminated and info["signals"]["stop_deferred"]
    env.step(write)
    obs, reward, terminated, _, info = env.step("Done: the return is requested.")
    assert (obs, reward, terminated) == ("###STOP###", 1.0, True)
    assert info["signals"]["stop_deferred"] and not info["signals"]["simulator_failure"]
    assert len(policy.requests) == 2  # the deferred stop needed no further call


@pytest.mark.parametrize(
    ("line", "end_reward", "failure"),
    [("My order is #W9999999, please help.", 0.0, True),  # an order id the scenario never mentioned
     ("I cannot continue with this. ###OUT-OF-SCOPE###", 0.0, True),
     (RuntimeError("server down"), 0.0, True),
     ("", 0.0, True),
     ("Thanks, bye. ###STOP###", 0.0, False)],  # a real stop: the verdict counts (nothing was done)
)  # fmt: skip
def test_llm_user_failures_are_flagged_as_the_simulators(line, end_reward, failure):
    env = gym.make(
        ENV_ID, domain="retail", user=ScriptPolicy(["I need help with an order.", line, "Thanks."])
    )
    env.reset(options={"task_id": "retail/108"})
    _, reward, terminated, _, info = env.step("Hello! Could you tell me more about your order, please?")
    assert reward == end_reward and info["signals"]["simulator_failure"] is failure
    if not isinstance(line, str) or "###" in line or not line:
        assert terminated


def test_llm_user_replies_are_seeded_and_cached_on_disk(tmp_path):
    cache = tmp_path / "user-cache.sqlite"
    first = ScriptPolicy(["Hello, I need to return some items.", "My zip code is 91455."])
    env = gym.make(ENV_ID, domain="retail", user=first, user_cache=str(cache))
    env.reset(seed=5, options={"task_id": "retail/108"})
    reply = env.step("What is your zip code?")[0]
    again = ScriptPolicy([])  # a fresh policy object: every answer must come from the cache file
    env = gym.make(ENV_ID, domain="retail", user=again, user_cache=str(cache))
    assert env.reset(seed=5, options={"task_id": "retail/108"})[0] == "Hello, I need to return some items."
    assert env.step("What is your zip code?")[0] == reply and again.requests == []


def test_llm_user_over_a_policy_spec_runs_episodes_to_the_end():
    env = gym.make(ENV_ID, domain="airline", user="scripted:random", max_turns=6)
    env.reset(seed=0)
    for _ in range(6):
        obs, reward, terminated, truncated, info = env.step("Could you give me your user id, please?")
        assert isinstance(obs, str) and reward == 0.0
        if terminated or truncated:
            break
    assert terminated or truncated


def test_llm_user_rejects_what_is_not_a_policy():
    with pytest.raises(Exception, match="user_policy must be a policy spec or an object with generate"):
        LLMUser(object())
