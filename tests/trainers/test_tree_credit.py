"""Tree credit reaches the loss: per-token TreeRL advantages of a tiny tree, through samples and
micro-batches, give the gradient a hand computation gives."""

from __future__ import annotations

import math

import pytest
import torch

from gfcr.core import Step, TokenData, Trajectory
from gfcr.trainers.batching import collate, samples_from_groups
from gfcr.trainers.losses import BatchTotals, policy_loss

PROMPT = [7, 8]


def leaf(tid: str, completion: list[int], reward: float, mask: list[int] | None = None) -> Trajectory:
    mask = mask or [1] * len(completion)
    tokens = TokenData(list(PROMPT), completion, mask, [-1.0 * m for m in mask])
    return Trajectory("e", "t", "?", [Step("", "", reward, True, False)], tokens=tokens, id=tid)


# prompt ─ 1 2 ─ 3 "1" (1)      V(root) = 1/3, V(1 2) = 1/2
#          │   └ 4 "2" (0)
#          └ 5 6 "3" (0)
TREE = {"t": [leaf("1", [1, 2, 3], 1.0), leaf("2", [1, 2, 4], 0.0), leaf("3", [5, 6], 0.0)]}
SHARED = ((1 / 2 - 1 / 3) + (1 / 2 - 1 / 3)) / math.sqrt(2)  # TreeRL: global + local, ÷ √leaves
A1, A2, A3 = (1 - 1 / 3) + (1 - 1 / 2), (0 - 1 / 3) + (0 - 1 / 2), (0 - 1 / 3) + (0 - 1 / 3)


@pytest.mark.parametrize("name", ["grpo", "dapo", "dr_grpo"])
def test_gradient_of_a_tiny_tree_matches_a_hand_computation(name):
    batch = collate(samples_from_groups(TREE, "treerl"))
    # targets are shifted one left of input_ids: column 0 predicts the prompt's second token
    expected_advantages = [[0, SHARED, SHARED, A1], [0, SHARED, SHARED, A2], [0, A3, A3, 0]]
    torch.testing.assert_close(batch.advantages, torch.tensor(expected_advantages), check_dtype=False)
    old = batch.old_logprobs.double()
    shift = torch.zeros_like(old)
    shift[0, 3] = 0.5  # "1"'s own token, A > 0: ratio e^0.5 above 1 + ε_high, clipped, no gradient
    shift[1, 2] = 0.1  # a shared token of "2": ratio e^0.1 inside the band
    shift[2, 1] = -0.5  # "3"'s first token, A < 0: ratio e^-0.5 below 1 - ε_low, clipped
    logprobs = (old + shift).requires_grad_(True)
    eps_high = 0.28 if name == "dapo" else 0.2
    out = policy_loss(
        name,
        logprobs,
        old,
        batch.advantages.double(),
        batch.loss_mask.double(),
        BatchTotals(sequences=3, tokens=8, max_tokens=4),
        epsilon_high=eps_high,
    )
    out.loss.backward()
    # d/dlogπ of −min(r·A, clip(r)·A)·w is −A·r·w inside the band, 0 where the clip binds;
    # w = 1/(G·|o_i|) for grpo, 1/(total loss tokens) for dapo, 1/(G·max_tokens) for dr_grpo
    w1, w3 = {"grpo": (1 / 9, 1 / 6), "dapo": (1 / 8, 1 / 8), "dr_grpo": (1 / 12, 1 / 12)}[name]
    expected = [
        [0, -SHARED * w1, -SHARED * w1, 0],
        [0, -SHARED * w1, -SHARED * math.exp(0.1) * w1, -A2 * w1],
        [0, 0, -A3 * w3, 0],
    ]
    torch.testing.assert_close(
        logprobs.grad, torch.tensor(expected, dtype=torch.float64), rtol=1e-6, atol=1e-9
    )
    assert out.clipped_tokens == 2


def test_treerl_gives_shared_prefix_tokens_their_node_and_divergent_tokens_their_leaf():
    # "b" branches from "a" after two tokens of its first turn, then happens to repeat a's
    # observation and second turn; "c" branches from "a" after its whole first turn.
    group = [
        leaf("a", [1, 2, 3, 9, 4], 1.0, mask=[1, 1, 1, 0, 1]),
        leaf("b", [1, 2, 5, 9, 4], 0.0, mask=[1, 1, 1, 0, 1]),
        leaf("c", [1, 2, 3, 9, 6], 0.0, mask=[1, 1, 1, 0, 1]),
    ]
    samples = samples_from_groups({"t": group}, "treerl")
    v_root, v_a_c = 1 / 3, 1 / 2  # "1 2" is shared by all three: V = V(root), advantage 0
    node = ((v_a_c - v_root) + (v_a_c - v_root)) / math.sqrt(2)  # "3 9", shared by a and c
    prompt = [0.0, 0.0]
    assert samples[0].advantages == pytest.approx([*prompt, 0, 0, node, 0, (1 - v_root) + (1 - v_a_c)])
    assert samples[2].advantages == pytest.approx([*prompt, 0, 0, node, 0, (0 - v_root) + (0 - v_a_c)])
    # b's "5 9 4" is its own leaf: its 4 is valued by b's outcome alone, not a's
    b = (0 - v_root) + (0 - v_root)
    assert samples[1].advantages == pytest.approx([*prompt, 0, 0, b, 0, b])
    treerpo = samples_from_groups({"t": group}, "treerpo")  # "3 9" against "5 9 4": ±1/√2
    assert treerpo[1].advantages[4] == pytest.approx(-1 / math.sqrt(2), rel=1e-4)
    grpo = samples_from_groups({"t": group}, "grpo")  # a sequence estimator is broadcast
    assert all(set(s.advantages[2:]) == {0.0, s.advantage} for s in grpo)
    assert grpo[0].advantage == pytest.approx(2 / math.sqrt(3), rel=1e-5)


def test_an_unknown_estimator_names_the_group_and_tree_ones():
    with pytest.raises(KeyError, match="treerl"):
        samples_from_groups(TREE, "tree_rl")
