"""Generate: groups for the runner, tree values and advantages computed by hand, and guidance
reaching the policy (text and token policies) through the real runner."""

from __future__ import annotations

import math
import statistics

import pytest

from gfcr.agents import EpisodeSpec, OraclePolicy, Runner, episodes_for_env, rollout
from gfcr.core import Step, Trajectory
from gfcr.errors import ConfigError, UnknownNameError
from gfcr.generate import (
    BranchAt,
    FewShot,
    GuidedPolicy,
    Plan,
    build_tree,
    expand_groups,
    group_by_task,
    tree_advantages,
)


def path(tid: str, actions: str, reward: float) -> Trajectory:
    steps = [Step(a, "", 0.0, False, False) for a in actions]
    steps[-1].reward = reward
    return Trajectory("e", "t", "?", steps, id=tid)


def test_expand_groups_gives_k_distinct_samples_per_task_for_the_runner():
    specs = episodes_for_env("gfcr/Math-v0", 3, kwargs={"split": "AIME2024"})
    grouped = expand_groups(specs, 4, seed=100)
    assert len(grouped) == 12 and len({s.id for s in grouped}) == 12
    assert all(isinstance(s, EpisodeSpec) for s in grouped)
    assert [s.seed for s in grouped[:4]] == [100, 101, 102, 103]
    result = Runner(OraclePolicy()).run(grouped)
    groups = group_by_task(result.trajectories)
    assert sorted(len(g) for g in groups.values()) == [4, 4, 4]
    with pytest.raises(ConfigError):
        expand_groups([EpisodeSpec(specs[0].env, None)], 2)


def test_tree_values_and_advantages_match_a_hand_computation():
    # root ─ a ─ x (1) │ y (0) │ z (1)      root value 3/5
    #      └ b ─ u (0) │ w (0)
    group = [
        path("1", "ax", 1.0),
        path("2", "ay", 0.0),
        path("3", "az", 1.0),
        path("4", "bu", 0.0),
        path("5", "bw", 0.0),
    ]
    root = build_tree(group)
    assert root.value == pytest.approx(2 / 5) and root.children["a"].value == pytest.approx(2 / 3)
    treerl = tree_advantages(group, "treerl")
    v_root, v_a, v_b = 2 / 5, 2 / 3, 0.0
    assert treerl["1"] == pytest.approx([((v_a - v_root) * 2) / math.sqrt(3), (1 - v_root) + (1 - v_a)])
    assert treerl["4"] == pytest.approx([((v_b - v_root) * 2) / math.sqrt(2), (0 - v_root) + (0 - v_b)])
    treerpo = tree_advantages(group, "treerpo", eps=0.0)
    level1 = [v_a, v_b]
    z = (v_a - statistics.mean(level1)) / statistics.stdev(level1)
    leaves_a = [1.0, 0.0, 1.0]
    z_x = (1.0 - statistics.mean(leaves_a)) / statistics.stdev(leaves_a)
    assert treerpo["1"] == pytest.approx([z, z_x])
    assert treerpo["4"][1] == 0.0  # siblings u and w both failed: no spread, no signal
    with pytest.raises(UnknownNameError):
        tree_advantages(group, "mcts")


def test_branch_at_validates_and_counts_by_turn():
    t = path("1", "ab", 0.0)
    assert BranchAt({2: 4}).branches(t) == 4 and BranchAt({1: 4}).branches(t) == 0
    with pytest.raises(ConfigError):
        BranchAt({1: -1})


def test_guidance_reaches_a_text_policy_through_rollout():
    seen = []

    class Spy(OraclePolicy):
        def generate(self, requests):
            seen.extend(requests)
            return super().generate(requests)

    import gymnasium as gym

    env = gym.make("gfcr/Math-v0", dataset="mmath", split="AIME2024")
    guided = GuidedPolicy(Spy(), FewShot((("1+1?", "\\boxed{2}"),)))
    assert guided.name == "scripted:oracle" and not hasattr(guided, "encode_prompt")
    trajectory = rollout(env, guided, env_id="gfcr/Math-v0", task_id="mmath/AIME2024/0")
    assert trajectory.total_reward == 1.0
    system = seen[0].messages[0]
    assert system.role == "system" and "Task: 1+1?" in system.content
    assert trajectory.messages[0].role == "user"  # the episode's own record is not rewritten


def test_guidance_enters_the_prompt_ids_of_a_token_policy():
    class Tokens:
        name, version = "tok", "1"

        def generate(self, requests):
            return []

        def encode_prompt(self, messages, tools):
            return [len(m.content) for m in messages]

        def encode_observation(self, messages, after):
            return []

    guided = GuidedPolicy(Tokens(), Plan("check units"))
    from gfcr.core import Message

    ids = guided.encode_prompt([Message("user", "abc")], [])
    assert ids == [len("Follow this plan:\ncheck units"), 3]
    assert guided.encode_observation([], []) == []
    with pytest.raises(ConfigError):
        GuidedPolicy(object(), Plan("x"))
