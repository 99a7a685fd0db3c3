"""`DialogueVerifier` re-judges saved `gfcr/Dialogue-v0` trajectories to the reward the env gave,
by replaying their tool calls: the oracle's pass, junk and forged conversations do not."""

from __future__ import annotations

import copy

import gymnasium as gym
import pytest

import gfcr  # noqa: F401  (registers the envs)
from gfcr.agents import OraclePolicy, RandomPolicy, Runner, episodes_for_env, rollout
from gfcr.core import Message, Step, Task, ToolCall, Trajectory, Verifier, read_jsonl, write_jsonl
from gfcr.envs.dialogue import DialogueVerifier, gold_state

ENV_ID = "gfcr/Dialogue-v0"
JUDGED = ("db_match", "communicated", "gold_actions_called", "expects_change", "user_ended")


def saved(tmp_path, trajectories: list[Trajectory]) -> list[Trajectory]:
    path = tmp_path / "dialogues.jsonl"
    write_jsonl(trajectories, path)
    return list(read_jsonl(path))


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    source = gym.make(ENV_ID).unwrapped.tasks
    return {task_id: source.get(task_id) for task_id in source.ids()}


@pytest.mark.parametrize("domain", ["airline", "retail"])
def test_saved_oracle_and_random_episodes_get_the_env_s_reward_again(tmp_path, tasks, domain):
    verifier = DialogueVerifier()
    assert isinstance(verifier, Verifier)
    runs = (
        (OraclePolicy(), {"domain": domain}, 1.0),
        (RandomPolicy(seed=11), {"domain": domain, "max_turns": 6}, 0.0),
    )
    compared = 0
    for policy, kwargs, expected in runs:
        result = Runner(policy).run(episodes_for_env(ENV_ID, 4, kwargs=kwargs, seed=2))
        for trajectory in saved(tmp_path, result.trajectories):
            verdict = verifier.verify(tasks[trajectory.task_id], trajectory)
            assert verdict.reward == trajectory.total_reward == expected, trajectory.task_id
            assert verdict.passed is (expected == 1.0)
            if trajectory.signals["format_ok"]:  # the env judged the last step: the same judgement
                assert {k: verdict.signals[k] for k in JUDGED} == {k: trajectory.signals[k] for k in JUDGED}
                compared += 1
    assert compared >= 5  # every oracle episode, and some junk ones


def test_a_conversation_whose_tool_calls_were_removed_is_rejected(tmp_path, tasks):
    env = gym.make(ENV_ID, domain="retail")
    (trajectory,) = saved(tmp_path, [rollout(env, OraclePolicy(), env_id=ENV_ID, task_id="retail/108")])
    task = tasks["retail/108"]  # return three items (a write), and tell the refund
    assert gold_state(task).expects_change and DialogueVerifier().verify(task, trajectory).reward == 1.0
    forged = copy.deepcopy(trajectory)  # the recorded reward and signals stay; only the calls go
    forged.messages = [
        m for m in forged.messages if not (m.role == "assistant" and "<tool_call>" in m.content)
    ]
    forged.messages = [m for m in forged.messages if m.role != "tool"]
    assert forged.total_reward == 1.0 and forged.signals["db_match"] is True
    verdict = DialogueVerifier().verify(task, forged)
    assert (verdict.reward, verdict.passed, verdict.signals["db_match"]) == (0.0, False, False)
    assert verdict.signals["communicated"] is True  # the refund was still said: only the write is missing


def test_the_reward_counts_only_when_the_user_ended_the_conversation(tmp_path, tasks):
    # airline/0: the gold changes nothing and asks nothing said, so the end state is right whatever
    # junk is sent; the scripted user gives up on junk, and the env pays nothing for that ending.
    task = tasks["airline/0"]
    assert not gold_state(task).expects_change and not task.gold["communicate_info"]
    env = gym.make(ENV_ID, domain="airline")
    (trajectory,) = saved(tmp_path, [rollout(env, RandomPolicy(seed=1), env_id=ENV_ID, task_id=task.id)])
    assert trajectory.signals["user_gave_up"] and trajectory.total_reward == 0.0
    assert DialogueVerifier().verify(task, trajectory).reward == 0.0
    judged_alone = DialogueVerifier(require_user_end=False).verify(task, trajectory)
    assert (judged_alone.reward, judged_alone.signals["user_ended"]) == (1.0, False)


@pytest.mark.parametrize(
    "trajectory",
    [
        Trajectory(ENV_ID, "retail/108", "?"),
        Trajectory(ENV_ID, "retail/108", "?", [Step("", "", 0.0, False, True, {"user_ended": True})]),
        Trajectory(ENV_ID, "retail/108", "?", [Step("<tool_call>{broken", "", 0.0, True, False)]),
        Trajectory(  # calls with wrong arguments, to tools that do not exist, and a corrupt message
            ENV_ID,
            "retail/108",
            "?",
            [Step("x", "", 0.0, True, False, {"user_ended": True})],
            [
                Message("assistant", "", (ToolCall("return_delivered_order_items", {"x": 1}),)),
                Message("assistant", "", (ToolCall("no_such_tool", {}),)),
                Message("assistant", None),  # type: ignore[arg-type]
            ],
        ),
    ],
)
def test_malformed_or_empty_trajectories_get_a_zero_verdict_never_an_exception(tasks, trajectory):
    verdict = DialogueVerifier().verify(tasks["retail/108"], trajectory)
    assert (verdict.reward, verdict.passed, verdict.signals["db_match"]) == (0.0, False, False)
