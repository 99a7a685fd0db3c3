"""The rollout pipeline: one training step's rollouts, the same object under every trainer.

The survey's lifecycle is the shape of a step (DESIGN.md, "The rollout pipeline"):

    choose → allocate → generate → judge → decide → keep → credit

- choose, allocate and decide are Control (`gfcr.control.RolloutController`): a selector picks
  the prompts, a budget (or the group size) the samples per prompt, and the decide loop samples in
  rounds — early stopping ends decided prompts, dynamic sampling drops groups without a reward
  spread and refills them — recording every group in the prompts' posteriors;
- generate is Generate, inside each round: groups, trees (`[generate]`: branches between turns and
  at token positions inside a turn, only for prompts not yet decided when pruning), guidance
  (`gfcr.generate.guided`), run by the vectorized runner with the step's policy;
- judge is Filter's judge stage (`[judge]`, `gfcr.filter.JudgeStage`), on each round's groups
  before Control decides on them: the env's verifier at a weight, gates, judges, group rubrics
  (TTRL's vote, length terms) and DAPO's overlong penalty, recorded per term in each episode's
  `reward_terms`; an episode a judge could not score is a `judge_failure`, left out;
- keep is Replay: every finished episode is stored, what is more than `max_staleness` policy
  versions old is evicted, an all-failed group gets a stored correct response (AR3PO's rescue),
  each group gets stored samples of its prompt at `[replay] mix_ratio` (RePO's mix,
  `gfcr.control.OffPolicyMix`); old samples keep their behaviour logprobs and version, for the
  trainer's correction; with `[replay.skills]`, the step's successful episodes add their verified
  fragments to the run's skill library, which counts each skill's uses and evicts
  (`gfcr.skills.SkillKeeper`); with `as_tools`, the generate stage offers each prompt's skills as
  tools;
- credit is Filter: advantages per token (`samples_from_groups`, group or tree estimators), each
  group's damped by its semantic entropy with SEED-GRPO (`[credit.seed_grpo]`).

`RolloutPipeline.step()` runs choose → keep and returns a `StepBatch`; `credit(batch)` gives the
bundled trainer its samples. TRL's `rollout_func` runs the same `step()` and leaves credit to TRL.
Every stage logs what it did under its own metric group (`choose/`, `allocate/`, `generate/`,
`judge/`, `decide/`, `keep/`, `credit/`), beside the `rollout/` and `diagnose/` metrics.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

from gfcr.agents import Runner, RunnerConfig
from gfcr.control import Batch, GresoSelector, OffPolicyMix, RolloutController, SecSelector, guided
from gfcr.control.curriculum import Difficulty, task_difficulty
from gfcr.core import Controller, Decision, EnvConfig, EpisodeSpec, Policy, ReplaySink, Task, Trajectory
from gfcr.core.admission import RESOURCES, add_waits
from gfcr.core.hooks import branch_points
from gfcr.core.policy import version_number
from gfcr.errors import ConfigError
from gfcr.filter import JudgeStage, OverlongPenalty
from gfcr.filter.entropy import mean_token_entropy
from gfcr.filter.indicators import batch_indicators, shaping_only, zero_variance
from gfcr.filter.process import ByEnv, PolicyPRM, ProcessScorer
from gfcr.filter.process_credit import ProcessConfig, ProcessJudge
from gfcr.filter.seed_grpo import SeedGRPO
from gfcr.filter.semantic import semantic_entropy
from gfcr.generate import BranchTokens, GuidanceConfig, GuidedPolicy, group_by_task, round_seed
from gfcr.replay import ReplayBuffer
from gfcr.skills import SkillKeeper, SkillLibrary
from gfcr.skills.training import with_skills
from gfcr.trainers.batching import Sample, samples_from_groups
from gfcr.trainers.config import PipelineConfig
from gfcr.trainers.propose import ProposeStage

logger = logging.getLogger(__name__)


@dataclass
class StepBatch:
    """What one step sampled, and the groups that reach the update."""

    groups: dict[str, list[Trajectory]]  # task id -> the group trained on (rescued samples included)
    generated: list[Trajectory] = field(default_factory=list)  # every episode run, dropped ones included
    decided: Batch = field(default_factory=Batch)  # the decide loop's counts
    metrics: dict[str, float] = field(default_factory=dict)  # each stage's log of this step

    @property
    def trained(self) -> list[Trajectory]:
        return [t for group in self.groups.values() for t in group]


class StepHook(Controller):
    """The runner's Control hook inside the generate stage: the episodes run as the decide loop
    planned them; after each step, the controller may stop the episode (prefix stop, length budget)
    or branch it (between turns, and at token positions when `[generate]` asks for it), and a
    prompt already decided is not branched when pruning. Counts what it did, per step."""

    def __init__(self, controller: RolloutController, branch_tokens: BranchTokens | None) -> None:
        self.controller, self.branch_tokens = controller, branch_tokens
        self.stopped = 0
        self.branched = 0

    def after_step(self, trajectory: Trajectory) -> Decision:
        decision = self.controller.after_step(trajectory)
        if decision.stop:
            self.stopped += 1
            return decision
        tokens: tuple[int, ...] = ()
        if self.branch_tokens is not None and not self.controller.pruned(trajectory.task_id):
            tokens = self.branch_tokens.positions(trajectory)
        steps = trajectory.steps
        live = bool(steps) and not (
            steps[-1].terminated or steps[-1].truncated
        )  # turn branches need a next turn
        self.branched += (decision.branches if live else 0) + len(tokens)  # one child per offset
        return Decision(stop=False, branches=decision.branches, branch_tokens=tokens)


class RolloutPipeline:
    """One training step's rollouts: choose → allocate → generate → judge → decide → keep; then
    `credit` for the bundled trainer. Counters of everything generated are checkpointed.

    >>> from gfcr.agents import make_policy, episodes_for_env
    >>> from gfcr.control import ControlConfig
    >>> tasks = episodes_for_env("gfcr/ToolUse-v0", 4, kwargs={"num_tasks": 4})
    >>> controller = RolloutController(ControlConfig(num_prompts=2, group_size=2))
    >>> pipeline = RolloutPipeline(make_policy("scripted:oracle"), tasks, controller)
    >>> batch = pipeline.step()
    >>> len(batch.groups), batch.metrics["choose/prompts"], batch.metrics["generate/episodes"]
    (2, 2.0, 4.0)
    """

    def __init__(
        self,
        policy: Policy,
        tasks: Sequence[EpisodeSpec],
        controller: RolloutController,
        *,
        runner: RunnerConfig | None = None,
        branch_tokens: BranchTokens | None = None,
        judge: JudgeStage | None = None,
        judges: Mapping[str, JudgeStage] | None = None,
        process: ProcessJudge | None = None,
        replay: ReplaySink | None = None,
        rescue: bool = False,
        mix: OffPolicyMix | None = None,
        seed_grpo: SeedGRPO | None = None,
        skills: SkillKeeper | None = None,
        propose: ProposeStage | None = None,
        estimator: str = "grpo",
        seed: int = 0,
    ) -> None:
        self.controller, self.replay, self.rescue = controller, replay, rescue
        self.propose = propose  # [propose]: tasks the policy proposes, solved and trained on each step
        self.judge = judge or JudgeStage()  # the run's; `judges`: those of envs with their own
        self.judges = dict(judges or {})
        self.process = process  # [judge.process]: per-step scores mixed into credit
        self.process_counts = (0, 0)  # this step's units scored, and left unscored
        self.estimator, self.seed = estimator, seed
        self.seed_grpo = seed_grpo  # [credit.seed_grpo]: each group's advantages damped by its entropy
        self.mix, self.mixed = mix, 0  # [replay] mix_ratio, mix_rule; replayed samples mixed in this step
        self.tasks = list(tasks)
        self.templates: dict[str, EpisodeSpec] = {}  # task id -> the pool's first spec of it
        for spec in self.tasks:
            if spec.task_id is not None:
                self.templates.setdefault(spec.task_id, spec)
        self.task_ids = list(self.templates)
        self.hook = StepHook(controller, branch_tokens)
        self.policy, self.branch_tokens = policy, branch_tokens
        # the keep stage stores each round itself, once judged: a stored sample keeps its reward terms
        self.runner = Runner(policy, runner or RunnerConfig(), controller=self.hook)
        self.batch = StepBatch({})  # the step running, or the last one
        self.samples_total = 0  # episodes generated by every step so far (dropped ones included)
        self.tokens_total = 0  # the policy tokens they generated (a shared prefix counted once)
        self.rounds_total = 0  # runs of the runner: each round's fresh sample seeds
        self.trimmed_leaves = self.extra_roots = 0  # this step's exact tree allocation (`_exact`)
        self.batch_judge_failures = 0  # episodes of this step a judge could not score
        # this step's wall seconds with a policy batch, and with an env call, in flight
        self.busy_s = {"policy": 0.0, "env": 0.0}
        self._task_sources: dict[str, Any] = {}  # env key -> its tasks (for judges that read gold)
        self.skills = skills  # [replay.skills]: the keep stage's skill library
        if skills is not None:
            self.keep_skills(skills.library)

    @classmethod
    def from_config(
        cls,
        policy: Policy,
        tasks: Sequence[EpisodeSpec],
        config: PipelineConfig,
        *,
        prompts_per_step: int,
        group_size: int,
        seed: int = 0,
        runner: RunnerConfig | None = None,
        replay: ReplaySink | None = None,
        estimator: str = "grpo",
        episode_tokens: int = 1024,
    ) -> RolloutPipeline:
        """The pipeline a recipe's stages describe, sized by the trainer (`prompts_per_step` groups
        of `group_size`, `seed`); `episode_tokens` is an episode's token budget (the overlong
        penalty's default length)."""
        control = RolloutController(
            dataclasses.replace(
                config.control, num_prompts=prompts_per_step, group_size=group_size, seed=seed
            ),
            difficulties=pool_difficulties(tasks) if config.control.curriculum != "none" else None,
        )
        overlong = config.overlong_penalty
        penalty = OverlongPenalty(*overlong.lengths(episode_tokens)) if overlong.enabled else None
        judge = config.judge.stage(penalty)
        judges = {env_id: config.judge.for_env(env_id).stage(penalty) for env_id in config.judge.envs}
        process = process_judge(config.judge.process, tasks, policy)
        rescue, mix = config.replay.rescue, config.replay.mix()
        kept = replay is not None or config.replay.enabled
        if mix is not None and not kept:
            raise ConfigError(
                f"[replay] mix_ratio = {mix.ratio} mixes stored samples into each group, but no buffer "
                "keeps any: set [replay] enabled = true"
            )
        if kept and rescue and control.config.dynamic_sampling:
            logger.warning(
                "[replay] rescue has nothing to rescue with [control] dynamic_sampling: all-failed groups "
                "are dropped before the keep stage; use one or the other"
            )
        generate = config.generate
        skills = config.replay.skills  # the run's library: in memory until a trainer opens its own
        keeper = SkillKeeper(skills.library("sqlite://"), skills) if skills.enabled else None
        return cls(
            guided(policy, run_skills(generate.guidance, keeper is not None), control.history),
            tasks,
            control,
            runner=runner,
            branch_tokens=generate.branch_tokens,
            judge=judge,
            judges=judges,
            process=process,
            replay=replay,
            rescue=rescue,
            mix=mix,
            seed_grpo=config.credit.seed_grpo if config.credit.seed_grpo.enabled else None,
            skills=keeper,
            propose=ProposeStage.for_pool(config.propose, tasks),
            estimator=estimator,
            seed=seed,
        )

    def keep_in(self, replay: ReplaySink | None) -> None:
        """The keep stage's buffer: every finished episode is stored there (a trainer opens it when
        its run begins, after clearing an earlier run's)."""
        self.replay = replay

    def keep_skills(self, library: SkillLibrary) -> None:
        """The keep stage's skill library (a trainer opens the run's, out_dir/skills.db, when it
        begins); skill guidance retrieves from it, so a skill extracted in one step is in the next
        step's prompts."""
        if self.skills is None:
            raise ConfigError("the pipeline keeps no skills: set [replay.skills] enabled = true")
        self.skills.library = library
        if self.skill_guided:
            self.policy.guide = library  # type: ignore[attr-defined]  # a GuidedPolicy

    @staticmethod
    def reward(trajectory: Trajectory) -> float:
        """The reward each episode's advantages are computed from: the judge stage's."""
        return trajectory.reward

    def step(self, candidates: Sequence[str] | None = None, samples_left: int | None = None) -> StepBatch:
        """Choose → keep: one step's rollouts over `candidates` (task ids; None: the whole pool),
        generating no more than `samples_left` episodes where a group fits in it (a run's unspent
        sample budget, at `group_cost` episodes a group; dynamic sampling's refills stop at it)."""
        self.hook.stopped = self.hook.branched = self.batch_judge_failures = 0
        self.trimmed_leaves = self.extra_roots = 0
        self.busy_s = {"policy": 0.0, "env": 0.0}
        self.batch = batch = StepBatch({})
        if samples_left is not None:  # the decide loop counts the samples it keeps: group_size a group
            samples_left = samples_left * self.controller.config.group_size // self.group_cost
        batch.decided = self.controller.collect(self.sample, list(candidates or self.task_ids), samples_left)
        batch.groups, rescued = self._keep(batch.decided.groups)
        proposed = self.propose.run(self, batch) if self.propose is not None else {}
        skills = self.skills.keep(batch.generated) if self.skills is not None else {}
        if self.process is not None:  # process scores shape credit only: the groups it trains on
            counts = [self.process.annotate(group) for group in batch.groups.values()]
            self.process_counts = (sum(c[0] for c in counts), sum(c[1] for c in counts))
        batch.metrics = self._metrics(batch, rescued) | skills | proposed
        return batch

    def credit(self, batch: StepBatch) -> list[Sample]:
        """The credit stage: every kept episode as a sample with its per-token advantages."""
        credit = self.process.credit if self.process is not None else None
        scale = self.seed_grpo.scale if self.seed_grpo is not None else None
        return samples_from_groups(batch.groups, self.estimator, self.reward, credit, scale=scale)

    def sample(self, plan: Mapping[str, int]) -> list[Trajectory]:
        """One round of the generate stage: `plan[task]` samples of each task, with fresh seeds (the
        decide loop calls it each round; its episodes count in the step's `generated`). With trees,
        each task gets exactly its `plan` samples too (`_exact`)."""
        roots = {task_id: self.roots(n) for task_id, n in plan.items()}
        trajectories = self._run(roots)
        kept = self._exact(plan, roots, trajectories) if self.trees else trajectories
        self._judge(kept)  # before the decide loop reads their rewards
        if self.replay is not None:  # the keep stage: every judged episode is stored
            for trajectory in kept:
                if trajectory.status == "ok":
                    self.replay.store(trajectory)
        return kept

    @property
    def trees(self) -> bool:
        """Whether episodes branch (inside turns, or between them), so a root ends as several samples."""
        return self.leaves_per_root > 1

    @property
    def leaves_per_root(self) -> int:
        """Samples one root episode ends as at most: its token tree (`BranchTokens.leaves_per_root`),
        each leaf copied after the turns `[control] branch_at` names."""
        tokens = self.branch_tokens.leaves_per_root if self.branch_tokens is not None else 1
        return tokens * math.prod(1 + copies for copies in self.controller.branching.turns.values())

    @property
    def group_cost(self) -> int:
        """Episodes one group of `group_size` generates: with trees, its roots' whole trees, the
        leaves past the group included (`_exact` trims them after they ran; more only where a
        task's turns were too short to branch and it needs extra roots).

        A run's sample budget counts every episode generated, so a step cuts its groups, and
        `gfcr train` stops, by this cost."""
        group_size = self.controller.config.group_size
        return self.roots(group_size) * self.leaves_per_root

    def roots(self, samples: int) -> int:
        """Root episodes that give at least `samples` samples when every root grows its whole tree."""
        return math.ceil(samples / self.leaves_per_root)

    def _run(self, roots: Mapping[str, int]) -> list[Trajectory]:
        """`roots[task]` root episodes of each task, run to their end with their branches."""
        specs = self.controller.episodes(
            self.tasks_for(roots), roots, seed=round_seed(self.seed, self.rounds_total)
        )
        if self.skills is not None and self.skills.config.as_tools:  # each prompt's skills, as tools
            specs = self.skills.offer(specs, self.prompt)
        return self.run_specs(specs)

    def run_specs(self, specs: Sequence[EpisodeSpec]) -> list[Trajectory]:
        """One round of the runner over `specs`, counted in the step's episodes, tokens and busy
        seconds; the trajectories in the specs' order, each root before its branches."""
        self.rounds_total += 1
        rank = {spec.id: i for i, spec in enumerate(specs)}
        result = self.runner.run(specs)
        self.busy_s["policy"] += result.policy_busy_s
        self.busy_s["env"] += result.env_busy_s
        trajectories = sorted(  # the specs' order, each root before its branches: not the finish order
            result.trajectories,
            key=lambda t: (rank.get(t.id.split(".")[0], len(rank)), len(branch_points(t.id)), t.id),
        )
        if isinstance(self.policy, GuidedPolicy):
            self.policy.record(trajectories)  # which guidance each episode's prompt carried
        self.batch.generated.extend(trajectories)
        self.samples_total += len(trajectories)
        self.tokens_total += sum(t.cost.tokens_out for t in trajectories)  # a branch counts its own tokens
        return trajectories

    def _exact(
        self, plan: Mapping[str, int], roots: Mapping[str, int], trajectories: list[Trajectory]
    ) -> list[Trajectory]:
        """Trees: each task's samples made exactly `plan[task]`. A task short of them (its turns were
        too short for every branch point) gets more roots, as many as its leaves per root so far
        need (`generate/extra_roots`); then a task over its plan keeps its roots in the order they
        ran, each with its branches shallowest first, and drops the rest (`generate/trimmed_leaves`).
        Which leaves are dropped depends on the tree's shape only, never on an outcome."""
        by_task: dict[str, list[Trajectory]] = {task_id: [] for task_id in plan}
        for trajectory in trajectories:
            by_task.setdefault(trajectory.task_id, []).append(trajectory)
        grown, growing = dict(roots), set(plan)
        while short := {t: plan[t] - len(by_task[t]) for t in growing if len(by_task[t]) < plan[t]}:
            per_root = {t: max(1, len(by_task[t]) // grown[t]) for t in short}  # leaves a root gave
            more = {t: math.ceil(missing / per_root[t]) for t, missing in short.items()}
            self.extra_roots += sum(more.values())
            ran = self._run(more)
            for trajectory in ran:
                by_task[trajectory.task_id].append(trajectory)
            grown = {t: grown[t] + more.get(t, 0) for t in grown}
            growing = {t.task_id for t in ran}  # a task that ran nothing (not in the pool) cannot grow
        kept = []
        for task_id, leaves in by_task.items():  # each in run order, as `_run` sorts them
            n = plan.get(task_id, len(leaves))
            self.trimmed_leaves += len(leaves[n:])
            kept += leaves[:n]
        return kept

    def tasks_for(self, plan: Mapping[str, int]) -> list[EpisodeSpec]:
        """The pool's spec of each task the plan samples (the template of its group)."""
        return [self.templates[task_id] for task_id in plan if task_id in self.templates]

    def _judge(self, trajectories: Sequence[Trajectory]) -> None:
        """The judge stage on one round: each task's samples are judged as one group."""
        for task_id, group in group_by_task(trajectories).items():
            stage = self.judge_of(group[0].env_id)
            self.batch_judge_failures += stage.judge(self.task(task_id, group[0], stage), group)

    def judge_of(self, env_id: str) -> JudgeStage:
        """The judge stage of an env's episodes: its own (`[judge.envs]`), else the run's."""
        return self.judges.get(env_id, self.judge)

    def task(self, task_id: str, trajectory: Trajectory, stage: JudgeStage) -> Task:
        """The env's `Task` of `task_id` (its gold data) for a stage whose terms read it, made once
        per env; the trajectory's id and prompt alone when no term reads more."""
        if not stage.needs_task:
            return Task(task_id, trajectory.prompt)
        return self.task_of(self.templates[task_id])

    def task_of(self, spec: EpisodeSpec) -> Task:
        """The env's `Task` of an episode: a generated task's own, else read from its env's tasks
        (the env made once per configuration)."""
        if spec.task is not None:  # a generated task: its own gold
            return spec.task
        if spec.env.key not in self._task_sources:
            self._task_sources[spec.env.key] = task_source(spec.env)
        return self._task_sources[spec.env.key].get(spec.task_id)

    def prompt(self, spec: EpisodeSpec) -> str:
        """The prompt of an episode's task (what its skills are retrieved by; "" without a task)."""
        return self.task_of(spec).prompt if spec.task_id is not None else ""

    @property
    def skill_guided(self) -> bool:
        """Whether prompts are guided by a skill library (`[generate.guidance] kind = "skills"`)."""
        return isinstance(self.policy, GuidedPolicy) and isinstance(self.policy.guide, SkillLibrary)

    def with_skills(
        self, policy: Policy, specs: Sequence[EpisodeSpec]
    ) -> tuple[Policy, list[EpisodeSpec]] | None:
        """`policy` on `specs` as training gives it the run's skill library: its prompts guided by the
        library (skill guidance; every prompt, whatever `adaptive_below`) and each prompt's skills
        offered as tools (`[replay.skills] as_tools`), none of it recorded: an evaluation neither
        counts uses nor teaches skills. None where the run's episodes see no skills."""
        keeper = self.skills
        if keeper is None or not (self.skill_guided or keeper.config.as_tools):
            return None
        if self.skill_guided:
            policy = GuidedPolicy(policy, keeper.library)
        if keeper.config.as_tools:
            specs = [with_skills(spec, keeper.tools_for(self.prompt(spec))) for spec in specs]
        return policy, list(specs)

    def _keep(self, groups: dict[str, list[Trajectory]]) -> tuple[dict[str, list[Trajectory]], int]:
        """The keep stage, on a replay buffer (`sample` stored every judged episode in it):
        evict what is stale for the policy's version, rescue all-failed groups (AR3PO), then mix
        stored samples of each group's prompt in (RePO), never the step's own episodes. Returns the
        groups and how many were rescued (`self.mixed`: how many samples were mixed in)."""
        buffer, rescued, self.mixed = self.replay, 0, 0
        if not isinstance(buffer, ReplayBuffer):  # a plain ReplaySink only stores
            return groups, 0
        version = version_number(str(getattr(self.policy, "version", "")))
        if version is not None:
            buffer.evict(current_version=version)
        fresh = {t.id for t in self.batch.generated}
        for task_id, group in groups.items():
            if self.rescue:  # the recipe's [replay] rescue
                group, was_rescued = buffer.rescue(group)
                rescued += was_rescued
            if self.mix is not None:
                wanted = self.mix.replay_count(len(group))
                old = buffer.draw(task_id, wanted, self.mix.rule, exclude=fresh | {t.id for t in group})
                group = self.mix.mix(group, old)
                self.mixed += len(old)
            groups[task_id] = group
        return groups, rescued

    def _metrics(self, batch: StepBatch, rescued: int) -> dict[str, float]:
        decided, generated = batch.decided, batch.generated
        trained = batch.trained
        judged = [self.reward(t) for t in trained]
        metrics = {
            "choose/prompts": float(len(decided.allocated)),
            "allocate/samples": float(sum(decided.allocated.values())),
            "generate/episodes": float(len(generated)),
            "generate/branches": float(self.hook.branched),
            "generate/trimmed_leaves": float(self.trimmed_leaves),
            "generate/extra_roots": float(self.extra_roots),
            "generate/tokens": float(sum(t.cost.tokens_out for t in generated)),
            "generate/guided": float(sum(bool(t.guidance) for t in generated)),
            "generate/policy_busy_s": self.busy_s["policy"],  # summed over the step's rounds
            "generate/env_busy_s": self.busy_s["env"],
            "generate/mixed_version_turns": float(sum(mixed_version_turns(t) for t in generated)),
            "decide/rounds": float(decided.rounds),
            "decide/runs": float(decided.runs),
            "decide/dropped_groups": float(decided.dropped),
            "decide/refilled_groups": float(decided.refilled),
            "decide/stopped_prompts": float(len(decided.stopped)),
            "decide/saved_samples": float(decided.saved),
            "decide/stopped_episodes": float(self.hook.stopped),
            "keep/rescued": float(rescued),
            "keep/mixed": float(self.mixed),
            "judge/reward_mean": float(np.mean(judged)) if judged else 0.0,
            "judge/failures": float(self.batch_judge_failures),
        }
        stages = [self.judge, *self.judges.values()]
        names = dict.fromkeys(w.name for stage in stages for w in stage.terms)
        for name in [*names, "gate"]:  # each term's mean part (0 where an env's stage has none)
            parts = [t.reward_terms.get(name, 0.0) for t in trained]
            metrics[f"judge/{name}_mean"] = float(np.mean(parts)) if parts else 0.0
        if any(stage.gates for stage in stages):
            gated = [float("gate" in t.reward_terms) for t in trained]
            metrics["judge/gated_share"] = float(np.mean(gated)) if gated else 0.0
        if self.process is not None:
            scored, unscored = self.process_counts  # steps (or lines) scored, and left unscored
            metrics |= {"judge/process_scored": float(scored), "judge/process_unscored": float(unscored)}
            if isinstance(self.process.scorer, PolicyPRM) and scored + unscored:  # a rule's None: no check
                metrics["diagnose/prm_unscored_share"] = unscored / (scored + unscored)
        spread = [semantic_entropy(group) for group in batch.groups.values()]  # in meaning, nats
        metrics["judge/semantic_entropy_mean"] = float(np.mean(spread)) if spread else 0.0
        entropy = mean_token_entropy(generated)  # None where the policy reports no entropies
        if entropy is not None:
            metrics["generate/entropy_mean"] = entropy
        if self.controller.curriculum is not None:  # the levels the next step chooses from
            metrics |= self.controller.curriculum.metrics()
        if isinstance(self.controller.selector, GresoSelector | SecSelector):  # what it skipped, or chose
            metrics |= self.controller.selector.metrics()
        return metrics | rollout_metrics(batch)

    def state_dict(self) -> dict[str, Any]:
        state: dict[str, Any] = {
            "samples_total": self.samples_total,
            "tokens_total": self.tokens_total,
            "rounds_total": self.rounds_total,
        }
        if self.propose is not None:
            state["propose"] = self.propose.state_dict()
        return state

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.samples_total = int(state["samples_total"])
        self.tokens_total = int(state["tokens_total"])
        self.rounds_total = int(state["rounds_total"])
        if self.propose is not None and "propose" in state:
            self.propose.load_state_dict(state["propose"])
            self.propose.rejoin(self)  # the generated tasks of the checkpoint's pool, rebuilt from the store


def run_skills(guidance: GuidanceConfig, kept: bool) -> GuidanceConfig:
    """Skill guidance without a library URL reads the run's own library (`[replay.skills]`): an
    empty in-memory one stands in until `keep_skills` gives it; the other guidance as it is.

    >>> run_skills(GuidanceConfig(kind="skills"), kept=True).skills
    'sqlite://'
    """
    if guidance.kind != "skills":
        return guidance
    if not kept and not guidance.skills:
        raise ConfigError(
            "[generate.guidance] kind = 'skills' without a skills library retrieves from the run's own: "
            "set [replay.skills] enabled = true, or give skills = PATH"
        )
    if kept and guidance.skills:
        raise ConfigError(
            f"[generate.guidance] skills = {guidance.skills!r} and [replay.skills] enabled: the guidance "
            "would not read the library training grows; leave skills unset to guide from the run's own"
        )
    return guidance if guidance.skills else dataclasses.replace(guidance, skills="sqlite://")


def process_judge(config: ProcessConfig, tasks: Sequence[EpisodeSpec], policy: Policy) -> ProcessJudge | None:
    """`[judge.process]`'s scorer (None while off): with "rules", each env's own
    (`TextEnv.process_rules`); lines are cut with the policy's `decode`."""
    if not config.enabled:
        return None
    rules: ProcessScorer | None = None
    if config.scorer == "rules":
        envs = {spec.env.env_id: spec.env for spec in tasks}
        by_env = {env_id: env_rules(env) for env_id, env in envs.items()}
        found = [r for r in by_env.values() if r is not None]
        rules = found[0] if len(by_env) == 1 and found else ByEnv(by_env) if found else None
    envs_named = ", ".join(sorted({spec.env.env_id for spec in tasks})) or "the env"
    return config.build(rules, getattr(policy, "decode", None), envs_named)


def env_rules(env: EnvConfig) -> ProcessScorer | None:
    """The env family's process rules (`TextEnv.process_rules`; None where it has none)."""
    made = gym.make(env.env_id, **env.kwargs)
    try:
        return getattr(made.unwrapped, "process_rules", None)
    finally:
        made.close()


def task_source(env: EnvConfig) -> Any:
    """The tasks of an env configuration (`TextEnv.tasks`): the env is made once and closed; its
    task source stays readable."""
    made = gym.make(env.env_id, **env.kwargs)
    try:
        return made.unwrapped.tasks  # type: ignore[attr-defined]  # every gfcr env is a TextEnv
    finally:
        made.close()


def pool_difficulties(tasks: Sequence[EpisodeSpec]) -> dict[str, Difficulty]:
    """Each pool task's category and level (`task_difficulty`), read once from its env's tasks."""
    sources: dict[Any, Any] = {}
    difficulties = {}
    for spec in tasks:
        if spec.task_id is not None and spec.task_id not in difficulties:
            if spec.env.key not in sources:
                sources[spec.env.key] = task_source(spec.env)
            difficulties[spec.task_id] = task_difficulty(sources[spec.env.key].get(spec.task_id))
    return difficulties


def mixed_version_turns(trajectory: Trajectory) -> int:
    """Turns of `trajectory` sampled by more than one policy version: turns a weight push
    interrupted and the new weights finished ([async] interrupt_turns), or token branches of an
    older parent; 0 without recorded versions.

    >>> from gfcr.core import TokenData
    >>> tokens = TokenData([1], [5, 6, 7, 8, 9], [1, 1, 0, 1, 1], [0.0] * 5, versions=[0, 1, -1, 1, 1])
    >>> mixed_version_turns(Trajectory("e", "t", "?", tokens=tokens))
    1
    """
    tokens = trajectory.tokens
    if tokens is None or tokens.versions is None:
        return 0
    mixed, turn = 0, set()
    for version, sampled in zip([*tokens.versions, -1], [*tokens.loss_mask, 0], strict=True):
        if sampled:
            turn.add(version)
        elif turn:  # an observation token (or the end) closes the turn
            mixed, turn = mixed + (len(turn) > 1), set()
    return mixed


def rollout_metrics(batch: StepBatch) -> dict[str, float]:
    """Reward, spread and length statistics of one step: of every episode generated (dropped
    groups included), and of the groups trained on, with the rewards their advantages use (their
    zero-variance share, and the share whose spread is length shaping alone); and the
    seconds its episodes queued for each shared resource, summed (`rollout/wait_s/sandbox`, …)."""
    generated = batch.generated
    rewards = np.array([t.total_reward for t in generated if t.status == "ok"] or [0.0])
    zero_std = [zero_variance([t.total_reward for t in g]) for g in group_by_task(generated).values()]
    trained = [zero_variance([t.reward for t in g]) for g in batch.groups.values()]
    shaped = [shaping_only(g) for g in batch.groups.values()]
    lengths = [sum(t.tokens.loss_mask) for t in generated if t.tokens is not None]
    turns = [len(t.steps) for t in generated]
    metrics = {
        "rollout/reward_mean": float(rewards.mean()),
        "rollout/reward_std": float(rewards.std()),
        "rollout/frac_zero_std": float(np.mean(zero_std)) if zero_std else 0.0,
        "rollout/zero_variance_share": float(np.mean(trained)) if trained else 0.0,
        "diagnose/shaping_only_share": float(np.mean(shaped)) if shaped else 0.0,
        "rollout/groups": len(batch.groups),
        "rollout/dropped_groups": batch.decided.dropped,
        "rollout/stopped_groups": len(batch.decided.stopped),
        "rollout/rounds": batch.decided.runs,
        "rollout/episodes": len(generated),
        "rollout/failed": sum(t.status == "failed" for t in generated),
        "rollout/turns_mean": float(np.mean(turns)) if turns else 0.0,
        "rollout/completion_tokens_mean": float(np.mean(lengths)) if lengths else 0.0,
    }
    waits = functools.reduce(add_waits, (t.cost.wait_s for t in generated), dict.fromkeys(RESOURCES, 0.0))
    metrics |= {f"rollout/wait_s/{resource}": seconds for resource, seconds in waits.items()}  # summed
    return metrics | batch_indicators(generated)


def credit_metrics(samples: Sequence[Sample]) -> dict[str, float]:
    """The credit stage's log: how many samples reach the loss, the spread of their loss tokens'
    advantages, and the share of samples whose every token has advantage 0 (no signal).

    >>> signal = Sample([1, 2, 3], [0, 1, 1], [0.0] * 3, [0.0, 1.0, -1.0])
    >>> silent = Sample([1], [1], [0.0], [0.0])
    >>> credit_metrics([signal, silent])["credit/zero_advantage_share"]
    0.5
    """
    advantages = [a for s in samples for a, m in zip(s.advantages, s.loss_mask, strict=True) if m]
    silent = [not any(a for a, m in zip(s.advantages, s.loss_mask, strict=True) if m) for s in samples]
    return {
        "credit/samples": float(len(samples)),
        "credit/advantage_abs_mean": float(np.mean(np.abs(advantages))) if advantages else 0.0,
        "credit/zero_advantage_share": float(np.mean(silent)) if silent else 0.0,
    }
