"""Token-level tree advantages (TreeRL, TreeRPO) computed by hand on a small radix tree, with an
observation between turns and branches that share exact token prefixes."""

from __future__ import annotations

import math
import statistics

import pytest

from gfcr.core import Step, TokenData, Trajectory
from gfcr.errors import UnknownNameError
from gfcr.generate import build_token_tree, token_tree_advantages, tree_advantages

PROMPT = [100]


def leaf(tid: str, completion: list[int], mask: list[int], reward: float) -> Trajectory:
    tokens = TokenData(list(PROMPT), completion, mask, [-0.5 * m for m in mask])
    return Trajectory("e", "t", "?", [Step("", "", reward, True, False)], tokens=tokens, id=tid)


# prompt 100 ─ 5 ─ 1 2 ─ 9 (observation) ─ 3 a (1)
#                  │     │                └ 4 b (0)
#                  │     └ 8 (observation) 3 c (1)
#                  └ 6 d (0)
GROUP = [
    leaf("a", [5, 1, 2, 9, 3], [1, 1, 1, 0, 1], 1.0),
    leaf("b", [5, 1, 2, 9, 4], [1, 1, 1, 0, 1], 0.0),
    leaf("c", [5, 1, 2, 8, 3], [1, 1, 1, 0, 1], 1.0),
    leaf("d", [5, 6], [1, 1], 0.0),
]


def test_radix_tree_keeps_maximal_shared_runs_and_splits_on_observations():
    root = build_token_tree(GROUP)
    start = root.children[100]  # the prompt and token 5: every leaf shares them, one node
    shared = start.children[1]
    assert (start.depth, shared.depth, shared.value) == (2, 4, pytest.approx(2 / 3))
    assert list(shared.children) == [9, 8]  # a different observation is a different child
    assert shared.children[8].depth == 6 and shared.children[8].leaves == [1.0]  # "8 3": one node
    assert list(shared.children[9].children) == [3, 4]


def test_treerl_per_token_advantages_match_a_hand_computation():
    got = token_tree_advantages(GROUP, "treerl")
    v_root, v_shared = 1 / 2, 2 / 3
    s = ((v_shared - v_root) + (v_shared - v_root)) / math.sqrt(3)  # tokens 1 2, three leaves
    # token 5 is shared by every leaf: V = V(root) = V(parent), advantage 0; observations are 0
    assert got["a"] == pytest.approx([0.0, s, s, 0.0, (1 - v_root) + (1 - 1 / 2)])
    assert got["b"] == pytest.approx([0.0, s, s, 0.0, (0 - v_root) + (0 - 1 / 2)])
    assert got["c"] == pytest.approx([0.0, s, s, 0.0, (1 - v_root) + (1 - v_shared)])
    assert got["d"] == pytest.approx([0.0, (0 - v_root) + (0 - 1 / 2)])


def test_treerpo_per_token_advantages_match_a_hand_computation():
    got = token_tree_advantages(GROUP, "treerpo", eps=0.0)

    def z(value, siblings):
        return (value - statistics.mean(siblings)) / statistics.stdev(siblings)

    assert got["a"] == pytest.approx([0.0, z(2 / 3, [2 / 3, 0]), z(2 / 3, [2 / 3, 0]), 0.0, z(1, [1, 0])])
    assert got["b"][4] == pytest.approx(z(0, [1, 0]))
    assert got["c"][4] == pytest.approx(z(1, [1 / 2, 1]))  # "8 3" against the "9 …" sibling
    assert got["d"] == pytest.approx([0.0, z(0, [2 / 3, 0])])


def test_a_leaf_that_stops_early_and_one_without_tokens_count_in_the_values_above_them():
    short = leaf("e", [5, 1], [1, 1], 0.0)  # ends inside the shared run "1 2"
    silent = Trajectory("e", "t", "?", [Step("", "", 1.0, True, False)], id="f")  # no token data
    root = build_token_tree([*GROUP, short, silent])
    one = root.children[100].children[1]
    assert one.depth == 3 and one.leaves == [1.0, 0.0, 1.0, 0.0]  # "1" alone now: e stops after it
    assert root.value == pytest.approx(3 / 6) and len(root.leaves) == 6
    got = token_tree_advantages([*GROUP, short, silent], "treerl")
    assert got["f"] == [] and len(got["e"]) == 2


def test_one_token_per_turn_gives_the_step_level_advantages():
    """The formulas are shared: a tree whose every token is a whole turn (and every node branches)
    gives the token level the step level's advantages."""

    def both(tid: str, actions: list[int], reward: float) -> Trajectory:
        t = leaf(tid, actions, [1] * len(actions), reward)
        t.steps = [Step(str(a), "", 0.0, False, False) for a in actions]
        t.steps[-1].reward = reward
        return t

    group = [both("1", [1, 3], 1.0), both("2", [1, 4], 0.0), both("3", [2, 5], 0.0), both("4", [2, 6], 0.0)]
    for estimator in ("treerl", "treerpo"):
        steps = tree_advantages(group, estimator)
        tokens = token_tree_advantages(group, estimator)
        assert all(tokens[t.id] == pytest.approx(steps[t.id]) for t in group)
        assert any(a != 0.0 for t in group for a in tokens[t.id])
    with pytest.raises(UnknownNameError, match="treerl"):
        token_tree_advantages(group, "mcts")
