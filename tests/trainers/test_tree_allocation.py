"""Trees give each prompt exactly the samples Control allocated (`RolloutPipeline._exact`).

A root grows at most `leaves_per_root` leaves, so a prompt's roots are rounded up and the
surplus leaves are dropped before credit, by the tree's shape only; a prompt whose turns were too
short for every branch point gets more roots. Real `gfcr train` steps of the tiny model.
"""

from __future__ import annotations

from gfcr.core.hooks import branch_points
from gfcr.trainers import Trainer


def test_surplus_leaves_are_dropped_to_the_allocation_before_credit(make_config):
    # 1 entropy point x 2 children: up to 3 leaves a root, so 4 samples are 2 roots (up to 6 leaves)
    config = make_config(generate={"tree": {"entropy_points": 1, "children": 2}}, rollout={"group_size": 4})
    trainer = Trainer(config)
    metrics = trainer.rl_step()
    batch = trainer.last_rollout
    assert trainer.pipeline.roots(4) == 2
    assert [len(group) for group in batch.groups.values()] == [4, 4]
    assert metrics["credit/samples"] == 8 == metrics["allocate/samples"]
    assert metrics["generate/trimmed_leaves"] == len(batch.generated) - 8
    for task_id, group in batch.groups.items():
        # kept: the roots in the order they were planned, each with its branches shallowest first
        grown = [t for t in batch.generated if t.task_id == task_id]
        rank = {root: i for i, root in enumerate(dict.fromkeys(t.id.split(".")[0] for t in grown))}
        assert grown == sorted(grown, key=lambda t: (rank[t.id.split(".")[0]], len(branch_points(t.id))))
        assert [t.id for t in group] == [t.id for t in grown[:4]]


def test_a_prompt_short_of_branch_points_gets_more_roots(make_config):
    # 4 segments x 2 children: up to 7 leaves a root, so 8 samples are 2 roots; but a turn of at most
    # 2 tokens has one boundary inside it (offset 1), so a root gives at most 3 leaves: 6 < 8
    config = make_config(generate={"tree": {"segments": 4}}, rollout={"group_size": 8, "max_tokens": 2})
    trainer = Trainer(config)
    metrics = trainer.rl_step()
    batch = trainer.last_rollout
    assert [len(group) for group in batch.groups.values()] == [8, 8]
    assert metrics["generate/extra_roots"] > 0
    roots = {t.id.split(".")[0] for t in batch.generated}
    assert len(roots) == 4 + metrics["generate/extra_roots"]  # 2 prompts x 2 roots, and the extra ones


def test_a_tree_run_never_passes_its_sample_budget(make_config):
    # 1 entropy point x 2 children: a group of 4 is 2 roots of up to 3 leaves, so it costs 6 episodes
    # (the surplus leaves ran before they were trimmed). 2 prompts a step: 12; with a budget of 20,
    # step 2 has 8 left, room for one group of 6. Counted as groups of 4, it ran two: 24 episodes
    config = make_config(
        steps=5, sample_budget=20, generate={"tree": {"entropy_points": 1, "children": 2}},
        rollout={"group_size": 4}, log={"eval_every": 0},
    )  # fmt: skip
    trainer = Trainer(config)
    history = trainer.train()
    assert trainer.pipeline.group_cost == 6
    assert history[-1]["run/stopped_for"] == "sample_budget"
    assert history[-1]["rollout/samples_total"] <= 20
    assert [m["rollout/groups"] for m in history] == [2, 1]
