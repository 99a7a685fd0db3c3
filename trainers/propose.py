"""The propose stage: the policy proposes tasks, the env verifies them by execution, the policy
solves them, and the proposer is rewarded for learnable ones (Absolute Zero, Zhao et al. 2025).

Each step (`[propose]`, `gfcr.proposals.ProposeConfig`), after the keep stage:

1. generated tasks that have had their time (`max_age` steps) or that Control's posterior calls
   decided (no reward spread left to learn from) leave the choose pool: retired;
2. one proposer prompt shows `parents` pool tasks of the family (`gfcr.envs.proposals`); the policy
   samples `proposals_per_step` proposals of it, one group, in the proposer env;
3. each proposal is verified by execution in the family's env (`ProposalFamily.verify`: invalid
   with a reason otherwise), then checked for novelty against every task known (`duplicate`);
4. each valid new task gets `solver_attempts` solver episodes in the family's env, and
   `blind_attempts` more of it with its question withheld (`ProposalFamily.withheld`), in the same
   round, all judged by the run's judge stage; the solver's success rate s places it: `too_hard`
   (s at or below the band), `trivial` (at or above it), `guessable` (inside it, but less than
   `min_gain` above the blind success p0, the policy's guess rate on its answer), else it joins
   the choose pool for later steps;
5. each proposer episode's reward is `learnability(s)` (0 for a rejected proposal); the proposer
   group and the solver groups are trained in this step with the chosen groups — but not a
   guessable task's solver group (its successes are guesses), nor any blind episode (a
   measurement, not data; their cost counts in the step's episodes and tokens);
6. every proposal is recorded with its provenance (`gfcr.proposals.ProvenanceStore`).

A resumed run rewinds the store to the checkpoint's step and rebuilds the generated tasks that were
in the pool from it (`load_state_dict`, then `rejoin`): they stay in the pool, with their provenance.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np

from gfcr.core import EnvConfig, EpisodeSpec, Task, Trajectory, solved
from gfcr.envs.base import TextEnv
from gfcr.envs.proposals import FAMILIES, PROPOSE_ENV, Verified, family_of, proposer_prompt, restored_task
from gfcr.errors import ConfigError, DataError
from gfcr.generate import round_seed
from gfcr.proposals import (
    REJECTIONS,
    NoveltyFilter,
    ProposeConfig,
    ProvenanceRecord,
    ProvenanceStore,
    Rejected,
    guessable,
    learnability,
)
from gfcr.proposals.provenance import gold_text

if TYPE_CHECKING:
    from gfcr.trainers.pipeline import RolloutPipeline, StepBatch

logger = logging.getLogger(__name__)
VERDICTS = ("valid", *REJECTIONS)


class ProposeStage:
    """Proposals of one env family's tasks, each step; generated tasks it added to the pool."""

    def __init__(
        self, config: ProposeConfig, family_env: EnvConfig, *, store: ProvenanceStore | None = None
    ) -> None:
        self.config, self.family_env = config, family_env
        self.family = family_of(family_env.env_id)
        made = gym.make(family_env.env_id, **family_env.kwargs).unwrapped
        assert isinstance(made, TextEnv)  # every env that takes proposals is a gfcr TextEnv
        self.env = made  # verifies proposals (its sandbox, its databases) and holds the parents
        self.store = store or ProvenanceStore()
        self.novelty: NoveltyFilter | None = None  # the pool's prompts, known from the first step
        self.added: dict[str, int] = {}  # generated task in the pool -> the step it was added
        self.restored: list[Task] = []  # generated tasks of a checkpoint, until `rejoin` pools them
        self.steps = 0  # steps run

    @classmethod
    def for_pool(cls, config: ProposeConfig, tasks: Sequence[EpisodeSpec]) -> ProposeStage | None:
        """The stage `[propose]` describes over the task pool `tasks` (None while off)."""
        if not config.enabled:
            return None
        envs = {spec.env.env_id: spec.env for spec in tasks}
        family = config.family or next((env_id for env_id in envs if env_id in FAMILIES), "")
        if family not in envs or family not in FAMILIES:
            raise ConfigError(
                f"[propose] family {family!r} must be an env of the task pool that takes proposals; "
                f"pool: {sorted(envs)}, taking proposals: {sorted(FAMILIES)}"
            )
        return cls(config, envs[family])

    def run(self, pipeline: RolloutPipeline, batch: StepBatch) -> dict[str, float]:
        """One step of proposals: retire, propose, verify, solve, reward, add. The proposer group and
        the solver groups join `batch` (trained this step); returns the `propose/` metrics."""
        step, self.steps = self.steps, self.steps + 1
        retired = self._retire(pipeline, step)
        generated = {*self.added, *retired}  # chosen this step, some may have just retired
        pool = [t for t in pipeline.task_ids if pipeline.templates[t].env.key == self.family_env.key]
        parents = self._parents([t for t in pool if t not in self.added], step)
        if self.novelty is None:
            self.novelty = NoveltyFilter(
                # a resumed run's pool holds generated tasks, which only their templates carry
                ((pipeline.templates[t].task or self.env.tasks.get(t)).prompt for t in pool),
                max_similarity=self.config.max_similarity,
                n=self.config.ngram,
            )
        prompt = Task(
            f"propose/{self.family_env.env_id}/{step}", proposer_prompt(self.family, parents, self.env)
        )
        seed = round_seed(pipeline.seed, pipeline.rounds_total)
        specs = [
            EpisodeSpec(PROPOSE_ENV, prompt.id, seed + i, sample=i, task=prompt)
            for i in range(self.config.proposals_per_step)
        ]
        proposals = pipeline.run_specs(specs)
        verified = {p.id: self._verify(p, parents) for p in proposals}
        tasks = {p.id: v.task for p in proposals if isinstance(v := verified[p.id], Verified)}
        solvers, guesses = self._solve(pipeline, list(tasks.values()))
        counts = dict.fromkeys(VERDICTS, 0)
        successes = []
        for proposal in proposals:
            outcome, success, guess = verified[proposal.id], None, None
            if isinstance(outcome, Verified):
                success, guess = success_rate(solvers[outcome.task.id]), guesses[outcome.task.id]
                successes += [success] if success is not None else []
            verdict = self._place(success, guess) if isinstance(outcome, Verified) else outcome.kind
            counts[verdict] += 1
            # 1 − s inside the band; 0 outside it, and for a rejected or guessable proposal
            reward = (
                learnability(success, self.config.band) if verdict == "valid" and success is not None else 0.0
            )
            proposal.reward_terms = {"learnability": reward}
            if isinstance(outcome, Verified) and verdict != "guessable":
                batch.groups[outcome.task.id] = solvers[outcome.task.id]  # trains the solver this step
            if isinstance(outcome, Verified) and verdict == "valid":
                self._join(pipeline, outcome.task, step)
            self.store.record(self._record(proposal, outcome, verdict, success, guess, parents, step))
        batch.groups[prompt.id] = proposals
        in_pool = [t for t in pipeline.task_ids if pipeline.templates[t].env.key == self.family_env.key]
        generated |= {task.id for task in tasks.values()}
        rates = [guess for guess in guesses.values() if guess is not None]
        return {
            "propose/step": float(step),  # the step of the provenance store's records (`gfcr diagnose`)
            "propose/proposed": float(len(proposals)),
            **{f"propose/{verdict}": float(n) for verdict, n in counts.items()},
            "propose/added": float(counts["valid"]),
            "propose/retired": float(len(retired)),
            "propose/pool_share": len(self.added) / len(in_pool) if in_pool else 0.0,
            # groups trained this step on generated tasks (solver groups, chosen ones) over all of them
            "propose/trained_share": sum(t in generated for t in batch.groups) / len(batch.groups),
            "propose/solver_success": float(np.mean(successes)) if successes else 0.0,
            # the guess rate: success with the question withheld, over the verified proposals
            "propose/blind_success": float(np.mean(rates)) if rates else 0.0,
            "propose/reward_mean": float(np.mean([p.reward for p in proposals])) if proposals else 0.0,
        }

    def _record(
        self,
        proposal: Trajectory,
        outcome: Verified | Rejected,
        verdict: str,
        success: float | None,
        guess: float | None,
        parents: Sequence[Task],
        step: int,
    ) -> ProvenanceRecord:
        """The provenance of one proposal (a rejected one keeps its text as its prompt)."""
        verified = outcome if isinstance(outcome, Verified) else None
        if verified is None:
            reason = outcome.reason  # type: ignore[union-attr]  # a Rejected
        elif verdict == "guessable":
            reason = (
                f"solver success {success:.2f} beats the guess rate {guess:.2f} (its question withheld) "
                f"by less than min_gain {self.config.min_gain}"
            )
        else:
            reason = (
                ""
                if verdict == "valid"
                else f"solver success {success:.2f} outside the band {self.config.band}"
            )
        return ProvenanceRecord(
            id=verified.task.id if verified else f"gen/{proposal.id}",
            family=self.family_env.env_id,
            prompt=verified.task.prompt if verified else proposal_text(proposal),
            gold=gold_text(verified.task.gold) if verified else "",
            proposer_version=str(proposal.provenance.policy_version),
            parent_ids=tuple(parent.id for parent in parents),
            verdict=verdict,
            reason=reason,
            step_proposed=step,
            solver_success=success,
            blind_success=guess,
            claimed_agrees=verified.claimed_agrees if verified else None,
            rerun_agrees=verified.rerun_agrees if verified else None,
            task_source=verified.task.source if verified else None,
            task_metadata=dict(verified.task.metadata) if verified else None,
            step_added=step if verdict == "valid" else None,
        )

    def _parents(self, pool: Sequence[str], step: int) -> list[Task]:
        """`parents` pool tasks of the family, drawn afresh each step (seeded by the step)."""
        if not pool:
            raise ConfigError(
                f"[propose] the task pool holds no task of {self.family_env.env_id} to show as parents"
            )
        rng = np.random.default_rng([step, len(pool)])
        chosen = rng.choice(len(pool), size=min(self.config.parents, len(pool)), replace=False)
        return [self.env.tasks.get(pool[int(i)]) for i in chosen]

    def _verify(self, proposal: Trajectory, parents: Sequence[Task]) -> Verified | Rejected:
        """The proposal's task, verified by execution and new; or why it is rejected."""
        try:
            verified = self.family.verify(proposal_text(proposal), self.env, f"gen/{proposal.id}", parents)
        except Rejected as rejected:
            return rejected
        assert self.novelty is not None  # set before the first proposal
        similarity, _ = self.novelty.nearest(verified.task.prompt)
        if similarity >= self.config.max_similarity:
            return Rejected("duplicate", f"n-gram Jaccard similarity {similarity:.2f} to a known task")
        self.novelty.add(verified.task.prompt)
        return verified

    def _solve(
        self, pipeline: RolloutPipeline, tasks: Sequence[Task]
    ) -> tuple[dict[str, list[Trajectory]], dict[str, float | None]]:
        """`solver_attempts` solver episodes of each task and `blind_attempts` of it with its question
        withheld, in one round: the solver groups, and each task's guess rate (None: no blind ones)."""
        blinds = {task.id: self.family.withheld(task) for task in tasks} if self.config.blind_attempts else {}
        groups = self._attempt(
            pipeline,
            [(task, self.config.solver_attempts) for task in tasks]
            + [(blind, self.config.blind_attempts) for blind in blinds.values()],
        )
        guesses = {
            task.id: success_rate(groups[blinds[task.id].id]) if task.id in blinds else None for task in tasks
        }
        return {task.id: groups[task.id] for task in tasks}, guesses

    def _attempt(
        self, pipeline: RolloutPipeline, attempts: Sequence[tuple[Task, int]]
    ) -> dict[str, list[Trajectory]]:
        """`n` episodes of each `(task, n)` in the family's env, in one round, judged as groups."""
        seed = round_seed(pipeline.seed, pipeline.rounds_total)
        tasks = [task for task, _ in attempts]
        specs = [
            EpisodeSpec(self.family_env, task.id, seed + j, sample=j, task=task)
            for task, n in attempts
            for j in range(n)
        ]
        ran = pipeline.run_specs(specs) if specs else []
        groups: dict[str, list[Trajectory]] = {task.id: [] for task in tasks}
        for trajectory in ran:
            groups[trajectory.task_id].append(trajectory)
        stage = pipeline.judge_of(self.family_env.env_id)
        for task in tasks:
            pipeline.batch_judge_failures += stage.judge(task, groups[task.id])
        return groups

    def _place(self, success: float | None, guess: float | None) -> str:
        """A valid new task's verdict from its solver success: inside the band, or not; and inside
        it, above its guess rate (None: no blind attempts) by `min_gain`, or not."""
        low, high = self.config.band
        assert success is not None  # a verified proposal has solver episodes
        if success <= low or success >= high:
            return "too_hard" if success <= low else "trivial"
        return (
            "guessable" if guess is not None and guessable(success, guess, self.config.min_gain) else "valid"
        )

    def _join(self, pipeline: RolloutPipeline, task: Task, step: int) -> None:
        """Put a generated task in the choose pool, as added at `step`."""
        pipeline.templates[task.id] = EpisodeSpec(self.family_env, task.id, task=task)
        pipeline.task_ids.append(task.id)
        self.added[task.id] = step

    def _retire(self, pipeline: RolloutPipeline, step: int) -> list[str]:
        """Retire generated tasks past `max_age` steps, or decided by Control's posterior; their ids."""
        leaving = [
            task_id
            for task_id, added in self.added.items()
            if step - added >= self.config.max_age or pipeline.controller.decided(task_id)
        ]
        for task_id in leaving:
            del self.added[task_id], pipeline.templates[task_id]
            pipeline.task_ids.remove(task_id)
            self.store.retire(task_id, step=step)
        return leaving

    def state_dict(self) -> dict[str, Any]:
        """The step count and the generated tasks in the pool, by id (their tasks are in the store)."""
        return {"steps": self.steps, "added": dict(self.added)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume the step count, rewind the provenance store to it (what a killed run recorded
        after its checkpoint is made again), and rebuild the generated tasks that were in the pool
        from their provenance; `rejoin` puts them back in the pipeline's pool. A task whose record
        cannot be rebuilt (a store written before tasks were kept whole) is retired at this step."""
        self.steps = int(state["steps"])
        self.store.rewind(self.steps)
        records = {record.id: record for record in self.store.records()}
        self.added, self.restored = {}, []
        for task_id, added in state["added"].items():
            if task_id not in records:
                raise DataError(
                    f"the checkpoint's generated task {task_id!r} is not in {self.store.engine.url}: resume "
                    "with the run's own proposals.db beside its checkpoints, or start afresh (resume=False)"
                )
            try:
                self.restored.append(restored_task(records[task_id]))
            except DataError as e:
                logger.warning("generated task %s leaves the pool on resume: %s", task_id, e)
                self.store.retire(task_id, step=self.steps)
                continue
            self.added[task_id] = int(added)

    def rejoin(self, pipeline: RolloutPipeline) -> None:
        """Put the generated tasks `load_state_dict` rebuilt back in `pipeline`'s choose pool."""
        for task in self.restored:
            if task.id not in pipeline.templates:
                self._join(pipeline, task, self.added[task.id])
        self.restored = []


def success_rate(group: Sequence[Trajectory]) -> float | None:
    """The share of a judged group's episodes that solved their task (None: an empty group)."""
    return float(np.mean([solved(t.total_reward) for t in group])) if group else None


def proposal_text(proposal: Trajectory) -> str:
    """What a proposer episode wrote (empty when it failed before writing)."""
    return proposal.steps[0].action if proposal.status == "ok" and proposal.steps else ""
