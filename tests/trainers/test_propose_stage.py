"""The propose stage inside real pipeline steps (issue 36): a scripted self-play policy proposes math
tasks (one learnable, one duplicate, one whose program fails, one trivial), the real sandbox runs the
answer programs, solver groups are judged by the math env from the generated gold, the proposer is
rewarded by learnability, the learnable task joins the pool, is chosen and trained on, and retires;
a resumed trainer rebuilds the generated tasks of its checkpoint's pool from the provenance store."""

from __future__ import annotations

from collections.abc import Sequence

from gfcr.agents import episodes_for_env
from gfcr.core.policy import Completion, Request
from gfcr.proposals import ProvenanceStore
from gfcr.trainers import Trainer
from gfcr.trainers.config import PipelineConfig
from gfcr.trainers.pipeline import RolloutPipeline


class SelfPlay:
    """Proposes four math tasks per step (by the step in its prompt's task id); as the solver, it
    always solves the "easy" ones and every other attempt of the rest."""

    name, version = "scripted:self-play", "3"

    def __init__(self) -> None:
        self.attempts = self.proposed = 0

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        return [Completion(self.reply(request)) for request in requests]

    def reply(self, request: Request) -> str:
        assert request.task is not None
        if request.env_id == "gfcr/Propose-v0":
            step = int(request.task.id.rsplit("/", 1)[1])
            self.proposed += 1
            return PROPOSALS[(self.proposed - 1) % len(PROPOSALS)].format(a=10 + step, b=20 + step)
        if "easy" in request.task.prompt:
            return f"\\boxed{{{request.task.gold}}}"
        self.attempts += 1
        return f"\\boxed{{{request.task.gold if self.attempts % 2 else -1}}}"


PROPOSALS = [
    "<problem>What is {a} times {b} plus seven?</problem><program>print({a} * {b} + 7)</program>",
    "<problem>What is {a} times {b} plus seven?</problem><program>print({a} * {b} + 7)</program>",
    "<problem>Divide {a} by zero.</problem><program>print({a} / 0)</program>",
    "<problem>An easy one: how much is {b} minus {a} in total?</problem><program>print({b} - {a})</program>",
]


def test_proposals_are_verified_solved_rewarded_added_trained_on_and_retired(tmp_path):
    tasks = episodes_for_env("gfcr/Math-v0", 4)
    config = PipelineConfig.from_dict(
        {"propose": {"enabled": True, "proposals_per_step": 4, "solver_attempts": 4, "max_age": 1}}
    )
    pipeline = RolloutPipeline.from_config(SelfPlay(), tasks, config, prompts_per_step=1, group_size=2)
    assert pipeline.propose is not None
    pipeline.propose.store = store = ProvenanceStore(tmp_path / "proposals.db")

    batch = pipeline.step()
    metrics = batch.metrics
    counts = {
        k: metrics[f"propose/{k}"] for k in ("proposed", "valid", "duplicate", "invalid", "trivial", "added")
    }
    assert counts == {"proposed": 4, "valid": 1, "duplicate": 1, "invalid": 1, "trivial": 1, "added": 1}
    proposer_group = batch.groups["propose/gfcr/Math-v0/0"]
    assert sorted(t.reward for t in proposer_group) == [0.0, 0.0, 0.0, 0.5]  # 1 − success 0.5, else 0
    (generated,) = [t for t in pipeline.task_ids if t.startswith("gen/")]
    assert [t.total_reward for t in batch.groups[generated]] == [1.0, 0.0, 1.0, 0.0]  # graded from its gold
    assert metrics["propose/solver_success"] == 0.75  # the learnable task's 0.5, the trivial one's 1.0
    assert metrics["propose/pool_share"] == 1 / 5
    assert metrics["propose/trained_share"] == 2 / 4  # 2 solver groups of 4: + the chosen and proposer ones

    records = {r.verdict: r for r in store.records()}
    assert set(records) == {"valid", "duplicate", "invalid", "trivial"}
    assert (
        "ZeroDivisionError" in records["invalid"].reason and "similarity 1.00" in records["duplicate"].reason
    )
    kept = records["valid"]
    assert (kept.id, kept.gold, kept.proposer_version, kept.step_added, kept.solver_success) == (
        generated,
        '"207"',
        "3",
        0,
        0.5,
    )
    assert len(kept.parent_ids) == 2 and all(p in pipeline.templates for p in kept.parent_ids)

    later = pipeline.step(candidates=[generated])  # the choose stage picks the generated task
    assert [t.total_reward for t in later.groups[generated]] == [1.0, 0.0]
    assert later.metrics["propose/retired"] == 1 and generated not in pipeline.task_ids  # max_age 1
    assert {r.id: r.step_retired for r in store.records()}[generated] == 1


def test_a_resumed_trainer_keeps_its_generated_tasks_in_the_pool_and_forgets_what_came_after(make_config):
    config = make_config(
        env={"id": "gfcr/Math-v0", "num_tasks": 4},
        steps=1,
        propose={"enabled": True, "proposals_per_step": 4, "solver_attempts": 4, "max_age": 10},
    )
    trainer = Trainer(config)
    trainer.begin()
    pipeline, model_policy = trainer.pipeline, trainer.pipeline.policy
    # the trainer's pipeline steps with the scripted self-play policy (the tiny model proposes junk):
    # one learnable task joins the pool, then the checkpoint, then a step the resumed run forgets
    pipeline.policy = pipeline.runner.policy = SelfPlay()
    pipeline.step()
    (generated,) = [t for t in pipeline.task_ids if t.startswith("gen/")]
    task = pipeline.templates[generated].task
    trainer.save()
    pipeline.step()
    assert len(ProvenanceStore(config.out_dir + "/proposals.db").records()) == 8
    pipeline.policy = pipeline.runner.policy = model_policy

    resumed = Trainer(config)
    resumed.begin()
    stage = resumed.pipeline.propose
    assert resumed.resumed and stage is not None and stage.steps == 1 and stage.added == {generated: 0}
    back = resumed.pipeline.templates[generated].task
    assert generated in resumed.pipeline.task_ids and back == task and back.gold == "207"
    assert [r.id for r in stage.store.records() if r.active] == [generated]  # its provenance, still active
    assert {r.step_proposed for r in stage.store.records()} == {0}  # step 1's proposals rewound
    history = resumed.train()  # the tiny model's own step: junk proposals, the generated task stays
    assert history[-1]["propose/step"] == 1 and history[-1]["propose/pool_share"] == 1 / 5
    assert generated in resumed.pipeline.task_ids
