"""Trees that train under TRL: `TreeGRPOTrainer` takes each token's advantage from its tree.

A real TRL step of the tiny model on gfcr/TestParity-v0 (an odd-length answer pays, so a random
model's tree has a reward spread): the advantages that reach TRL's loss are gfcr's
`token_tree_advantages` of the rows' own trajectories, token by token, and the gradient TRL takes
is the hand-written policy gradient with them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl", reason="the trl extra is not installed: pip install -e '.[trl]'")

from test_trl import ENV, KWARGS, _quiet_trl, grpo_trainer  # noqa: E402, F401  (autouse fixture)

from gfcr.errors import ConfigError  # noqa: E402
from gfcr.generate import token_tree_advantages  # noqa: E402
from gfcr.integrations import trl as gfcr_trl  # noqa: E402
from gfcr.trainers.config import PipelineConfig  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
# one branch point a turn, 3 children: a prompt's 4 completions are one root and its 3 branches
BRANCHES = {"generate": {"tree": {"entropy_points": 1, "children": 3}}}
TREE = PipelineConfig.from_dict(BRANCHES)


def policy_gradient_loss(model, inputs, advantages):
    """DAPO's token-mean policy gradient (TRL's default loss_type), written out: minus the sum of
    advantage x log-probability over the batch's loss tokens, over their count. On-policy, TRL's
    clipped ratio has this gradient."""
    completion = inputs["completion_ids"]  # (B, T)
    ids = torch.cat([inputs["prompt_ids"], completion], dim=1)
    attention = torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], dim=1)
    logits = model(input_ids=ids, attention_mask=attention).logits[:, -completion.size(1) - 1 : -1]
    logps = torch.log_softmax(logits.float(), dim=-1).gather(-1, completion.unsqueeze(-1)).squeeze(-1)
    mask = inputs["completion_mask"] * inputs.get("tool_mask", 1)
    return -(advantages * logps * mask).sum() / mask.sum()


def recording_trainer(rollout):
    """A TreeGRPOTrainer that keeps what reaches TRL's loss, the loss and its gradient, with the
    advantages gfcr's trees give the same rows and the hand-written loss's gradient with them (both
    before the optimizer steps)."""

    class Recording(gfcr_trl.TreeGRPOTrainer):
        seen: list = []

        def _compute_loss(self, model, inputs):
            loss = super()._compute_loss(model, inputs)
            params = [p for p in model.parameters() if p.requires_grad]
            grads = torch.autograd.grad(loss, params, retain_graph=True)
            expected = expected_advantages(rollout, inputs, "treerl")
            hand = torch.autograd.grad(policy_gradient_loss(model, inputs, expected), params)
            self.seen.append((inputs, loss.detach(), grads, expected, hand))
            return loss

    return Recording


def row_trajectories(rollout, inputs, episodes=None) -> list:
    """The trajectory of each row TRL trains on, among `episodes` (None: the step's groups); rows
    are shuffled by TRL: a row is found by its tokens (two leaves of a tree with the same tokens lie
    on the same path, so they agree)."""
    by_tokens = {
        (tuple(t.tokens.prompt_ids), tuple(t.tokens.completion_ids)): t
        for t in (rollout.last_batch.trained if episodes is None else episodes)
    }
    rows = []
    for i in range(inputs["completion_ids"].size(0)):
        prompt = inputs["prompt_ids"][i][inputs["prompt_mask"][i].bool()].tolist()
        completion = inputs["completion_ids"][i][inputs["completion_mask"][i].bool()].tolist()
        rows.append(by_tokens[tuple(prompt), tuple(completion)])
    return rows


def per_row(inputs, rows: list[list[float]]) -> torch.Tensor:
    """(B, T): each row's per-token values, right-padded with 0 as TRL pads the completions."""
    out = torch.zeros_like(inputs["completion_ids"], dtype=torch.float32)
    for i, row in enumerate(rows):
        out[i, : len(row)] = torch.tensor(row)
    return out


def expected_advantages(rollout, inputs, estimator: str) -> torch.Tensor:
    """Each row's advantages from its own trajectory's tree."""
    by_id = {}
    for group in rollout.last_batch.groups.values():
        by_id |= token_tree_advantages(group, estimator, outcome=rollout.pipeline.reward)
    return per_row(inputs, [by_id[t.id] for t in row_trajectories(rollout, inputs)])


def test_tree_grpo_trainer_trains_on_the_trees_per_token_advantages(tiny_model, tmp_path, parity_env):
    env = (parity_env, {"num_tasks": 8})
    rollout = gfcr_trl.rollout_func(parity_env, config=TREE, **env[1])
    trainer = grpo_trainer(
        tiny_model, tmp_path, rows=4, generations=4, completion_tokens=8, env=env,
        trainer_class=recording_trainer(rollout), rollout_func=rollout, reward_funcs=gfcr_trl.env_reward,
    )  # fmt: skip
    trainer.train()
    batch = rollout.last_batch
    assert [len(group) for group in batch.groups.values()] == [4] * 4  # num_generations leaves each
    assert batch.metrics["generate/branches"] > 0 and rollout.estimator == "treerl"
    [(inputs, loss, grads, expected, hand)] = trainer.seen
    advantages, mask = inputs["advantages"], inputs["completion_mask"]
    assert advantages.shape == inputs["completion_ids"].shape  # (B, T): one per token
    torch.testing.assert_close(advantages * mask, expected)
    varying = [len(set(a[m.bool()].tolist())) > 1 for a, m in zip(advantages, mask, strict=True)]
    assert any(varying)  # tokens of one completion credited apart: no per-sequence advantage does that
    # TRL's loss on-policy (ratio 1) is minus the mean loss-token advantage; its gradient the hand one's
    torch.testing.assert_close(loss, -(expected * mask).sum() / mask.sum())
    for trl_grad, hand_grad in zip(grads, hand, strict=True):
        torch.testing.assert_close(trl_grad, hand_grad, rtol=1e-4, atol=1e-6)


def test_trees_under_trls_own_grpo_trainer_ask_for_tree_grpo_trainer(tiny_model, tmp_path):
    rollout = gfcr_trl.rollout_func(ENV, config=TREE, **KWARGS)
    trainer = grpo_trainer(tiny_model, tmp_path, rollout_func=rollout, reward_funcs=gfcr_trl.env_reward)
    with pytest.raises(ConfigError, match=r"GRPOTrainer trains every completion on one advantage.*TreeGRPO"):
        trainer.train()


def test_tree_grpo_trainer_refuses_a_rollout_without_trees(tiny_model, tmp_path):
    rollout = gfcr_trl.rollout_func(ENV, config=PipelineConfig(), **KWARGS)
    trainer = grpo_trainer(
        tiny_model, tmp_path, trainer_class=gfcr_trl.TreeGRPOTrainer, rollout_func=rollout,
        reward_funcs=gfcr_trl.env_reward,
    )  # fmt: skip
    with pytest.raises(ConfigError, match="this batch has none"):
        trainer.train()


@pytest.mark.parametrize("name", ["treerl", "treerpo"])
def test_a_tree_recipes_estimator_is_the_rollouts(name):
    rollout = gfcr_trl.rollout_func(ENV, config=ROOT / "examples" / "methods" / f"{name}.toml", **KWARGS)
    assert rollout.estimator == name and rollout.config.generate.trees


def test_trees_need_a_tree_estimator_under_trl(tmp_path):
    with pytest.raises(ConfigError, match=r"tree estimator .* got estimator 'grpo'"):
        gfcr_trl.rollout_func(ENV, config=TREE, estimator="grpo", **KWARGS)
    recipe = tmp_path / "recipe.toml"
    recipe.write_text('[generate.tree]\nsegments = 2\n[loss]\nestimator = "rloo"\n')
    with pytest.raises(ConfigError, match=r"tree estimator .* got estimator 'rloo'"):
        gfcr_trl.rollout_func(ENV, config=recipe, **KWARGS)
