"""The propose stage inside real pipeline steps (issue 36): a scripted self-play policy proposes math
tasks (one learnable, one duplicate, one whose program fails, one trivial), the real sandbox runs the
answer programs, solver groups are judged by the math env from the generated gold, the proposer is
rewarded by learnability, the learnable task joins the pool, is chosen and trained on, and retires;
a yes/no task the solver only guesses is rejected as guessable against its blind attempts (the
question withheld) and pays nothing; a resumed trainer rebuilds the generated tasks of its
checkpoint's pool from the provenance store."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from gfcr.agents import episodes_for_env
from gfcr.core.policy import Completion, Request
from gfcr.proposals import BLIND_PROMPT, ProvenanceStore
from gfcr.trainers import Trainer
from gfcr.trainers.config import PipelineConfig
from gfcr.trainers.pipeline import RolloutPipeline, StepBatch


class SelfPlay:
    """Proposes math tasks (`proposals` in turn, numbered by the step in its prompt's task id). As
    the solver it reads the question it is shown: it always works out "how much is b minus a", works
    out "a times b plus seven" on every other attempt of a task (failing the rest), and answers
    anything else — a yes/no question, a question withheld — with "yes" or "no" in turn: a guess."""

    name, version = "scripted:self-play", "3"

    def __init__(self, proposals: Sequence[str] | None = None) -> None:
        self.proposals = proposals or PROPOSALS
        self.proposed = 0
        self.attempts: Counter[str] = Counter()  # a task's attempts so far, by task id

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        return [Completion(self.reply(request)) for request in requests]

    def reply(self, request: Request) -> str:
        assert request.task is not None
        if request.env_id == "gfcr/Propose-v0":
            step = int(request.task.id.rsplit("/", 1)[1])
            self.proposed += 1
            return self.proposals[(self.proposed - 1) % len(self.proposals)].format(a=10 + step, b=20 + step)
        shown = request.messages[-1].text  # the question as the env renders it: never the gold
        self.attempts[request.task.id] += 1
        attempt = self.attempts[request.task.id]
        if minus := re.search(r"how much is (\d+) minus (\d+)", shown):
            return f"\\boxed{{{int(minus[1]) - int(minus[2])}}}"
        if times := re.search(r"What is (\d+) times (\d+) plus seven", shown):
            return f"\\boxed{{{int(times[1]) * int(times[2]) + 7 if attempt % 2 else -1}}}"
        return f"\\boxed{{{'yes' if attempt % 2 else 'no'}}}"


PROPOSALS = [
    "<problem>What is {a} times {b} plus seven?</problem><program>print({a} * {b} + 7)</program>",
    "<problem>What is {a} times {b} plus seven?</problem><program>print({a} * {b} + 7)</program>",
    "<problem>Divide {a} by zero.</problem><program>print({a} / 0)</program>",
    "<problem>An easy one: how much is {b} minus {a} in total?</problem><program>print({b} - {a})</program>",
]
# the attack: a yes/no answer the solver hits half the time by chance, squarely inside the band
GUESSABLE = (
    "<problem>Is the product of {a} and {b} divisible by four? Answer yes or no.</problem>"
    "<program>print('yes' if {a} * {b} % 4 == 0 else 'no')</program>"
)


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
    # graded from its gold: half the attempts work it out (which ones follows the runner's dispatch order)
    assert sorted(t.total_reward for t in batch.groups[generated]) == [0.0, 0.0, 1.0, 1.0]
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
    assert sorted(t.total_reward for t in later.groups[generated]) == [0.0, 1.0]
    assert later.metrics["propose/retired"] == 1 and generated not in pipeline.task_ids  # max_age 1
    assert {r.id: r.step_retired for r in store.records()}[generated] == 1


def guarded_step(tmp_path, blind_attempts: int) -> tuple[RolloutPipeline, StepBatch]:
    """One step whose proposer writes a learnable task and a guessable one."""
    config = PipelineConfig.from_dict(
        {"propose": {"enabled": True, "proposals_per_step": 2, "blind_attempts": blind_attempts}}
    )
    policy = SelfPlay([PROPOSALS[0], GUESSABLE])
    tasks = episodes_for_env("gfcr/Math-v0", 4)
    pipeline = RolloutPipeline.from_config(policy, tasks, config, prompts_per_step=1, group_size=2)
    assert pipeline.propose is not None
    pipeline.propose.store = ProvenanceStore(tmp_path / f"proposals-{blind_attempts}.db")
    return pipeline, pipeline.step()


def test_a_task_whose_answer_the_solver_guesses_is_rejected_as_guessable_and_pays_nothing(tmp_path):
    pipeline, batch = guarded_step(tmp_path, blind_attempts=4)
    metrics = batch.metrics
    assert (metrics["propose/valid"], metrics["propose/guessable"], metrics["propose/added"]) == (1, 1, 1)
    assert metrics["propose/solver_success"] == 0.5  # both tasks sit in the band …
    assert metrics["propose/blind_success"] == 0.25  # … but one is guessed as often blind: (0 + 0.5) / 2
    assert sorted(t.reward for t in batch.groups["propose/gfcr/Math-v0/0"]) == [0.0, 0.5]
    assert pipeline.propose is not None
    records = {r.verdict: r for r in pipeline.propose.store.records()}
    guessed, kept = records["guessable"], records["valid"]
    assert (guessed.gold, guessed.solver_success, guessed.blind_success, guessed.step_added) == (
        '"yes"',
        0.5,
        0.5,
        None,
    )
    assert "guess rate 0.50 (its question withheld) by less than min_gain 0.25" in guessed.reason
    assert (kept.solver_success, kept.blind_success, kept.step_added) == (0.5, 0.0, 0)
    # the learnable task joins the pool and its solver group trains; the guessed one's does not
    assert kept.id in batch.groups and kept.id in pipeline.task_ids
    assert guessed.id not in batch.groups and guessed.id not in pipeline.task_ids
    # blind episodes: the question withheld, the same gold grades them, never trained on, but paid for
    blind = [t for t in batch.generated if t.task_id.endswith("/blind")]
    assert len(blind) == 8 and all(t.prompt.startswith(BLIND_PROMPT) for t in blind)
    assert sorted(t.total_reward for t in blind if t.task_id == f"{guessed.id}/blind") == [0.0, 0.0, 1.0, 1.0]
    assert not any(task_id.endswith("/blind") for task_id in batch.groups)
    assert metrics["generate/episodes"] == 2 + 2 + 2 * 4 + 2 * 4  # chosen, proposer, solvers, blind


def test_without_blind_attempts_the_guessed_task_is_paid_as_a_learnable_one(tmp_path):
    _, batch = guarded_step(tmp_path, blind_attempts=0)  # the check off: the hole it closes
    assert (batch.metrics["propose/valid"], batch.metrics["propose/guessable"]) == (2, 0)
    assert [t.reward for t in batch.groups["propose/gfcr/Math-v0/0"]] == [0.5, 0.5]
    assert batch.metrics["generate/episodes"] == 2 + 2 + 2 * 4


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
