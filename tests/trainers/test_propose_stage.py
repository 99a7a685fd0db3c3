"""The propose stage inside real pipeline steps (issue 36): a scripted self-play policy proposes math
tasks (one learnable, one duplicate, one whose program fails, one trivial), the real sandbox runs the
answer programs, solver groups are judged by the math env from the generated gold, the proposer is
rewarded by learnability, the learnable task joins the pool, is chosen and trained on, and retires."""

from __future__ import annotations

from collections.abc import Sequence

from gfcr.agents import episodes_for_env
from gfcr.core.policy import Completion, Request
from gfcr.proposals import ProvenanceStore
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
