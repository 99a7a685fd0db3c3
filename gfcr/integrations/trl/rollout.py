"""`rollout_func(env_id)`: TRL's `GRPOTrainer` rolls out through gfcr's rollout pipeline.

Each TRL batch is one step of the same `RolloutPipeline` that `gfcr train` runs: the recipe's
`[control]`, `[generate]`, `[overlong_penalty]` and `[replay]` sections choose prompts, sample,
decide and keep exactly as there, with the trainer's current weights, multi-turn and
token-in-token-out (observation tokens get `env_mask` 0). TRL computes its own advantages from
`env_reward`, so the credit stage is TRL's; with trees or process scores it is gfcr's per token:
each completion carries its per-token advantages from its prompt's tree (`gfcr_advantages`) and
its steps' process advantages (`gfcr_process`), which `TreeGRPOTrainer` trains on.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

import gymnasium as gym

from gfcr.agents.policies.hf import HFPolicy
from gfcr.agents.runner import RunnerConfig, env_config
from gfcr.agents.runner.episode import keeps_tokens
from gfcr.core import (
    EnvConfig,
    EpisodeSpec,
    Image,
    Message,
    ReplaySink,
    SamplingParams,
    TokenPolicy,
    Trajectory,
)
from gfcr.core.policy import Policy
from gfcr.errors import ConfigError
from gfcr.generate import TREE_ESTIMATORS, group_by_task, token_tree_advantages
from gfcr.suites import make_suite
from gfcr.trainers.config import PipelineConfig, read_toml
from gfcr.trainers.pipeline import RolloutPipeline, StepBatch

logger = logging.getLogger(__name__)


def env_reward(
    completions: list[Any], gfcr_reward: list[float | None] | None = None, **kwargs: Any
) -> list[float | None]:
    """A TRL reward function for `rollout_func` runs: gfcr's judged reward of each completion (the
    env's reward, shaped by the recipe's judge stage).

    None (TRL leaves it out of its group baseline) for an episode the infrastructure failed.
    """
    if gfcr_reward is None:
        raise ConfigError(
            "env_reward reads the `gfcr_reward` field of gfcr's rollout_func; use it with "
            "GRPOTrainer(rollout_func=rollout_func(...)), or final_answer with environment_factory"
        )
    return list(gfcr_reward)


class GfcrRollout:
    """`rollout_func(...)`'s result: plays TRL's batches as steps of gfcr's rollout pipeline.

    TRL passes each prompt `num_generations` times in a row; each run of identical prompts is one
    group of the prompt's task (found by its dataset row). With the uniform selector and no stage
    that drops groups, the step samples exactly TRL's prompts; otherwise Control chooses among
    TRL's prompts and then every dataset task, as in `gfcr train` (so reward functions must read
    `gfcr_reward`/`task_id`, as `env_reward` does, not the prompts). A step short of groups (dynamic
    sampling ran out of rounds) is topped up with the full groups it dropped, then with plain groups
    of TRL's prompts. The policy is the trainer's model (`HFPolicy.from_model`) unless one is given.
    `pipeline` is built on the first call (it needs TRL's batch shape); `last_batch` is the latest
    step's `StepBatch`.

    With trees (`[generate.tree]`, `[control] branch_at`) a prompt's `num_generations` completions
    are the leaves of its tree: ceil(num_generations / leaves per root) roots, the pipeline's exact
    allocation dropping surplus leaves; each completion gets `gfcr_advantages`, one per completion
    token from its group's tree (`token_tree_advantages` with `estimator`), for `TreeGRPOTrainer`.

    With `[judge.process]` each completion also gets `gfcr_process`, its process advantage per
    completion token (`ProcessCredit.token_advantages` over its group), and `gfcr_process_weight`;
    `TreeGRPOTrainer` adds weight · process advantage to the outcome advantage of each token (its
    tree's, or else TRL's own for the sequence), as `gfcr train`'s credit stage does.
    """

    def __init__(
        self,
        envs: Sequence[EnvConfig],
        policy: Policy | None,
        config: PipelineConfig,
        runner_config: RunnerConfig | None,
        replay: ReplaySink | None,
        estimator: str = "treerl",
        sample_budget: int | None = None,
    ) -> None:
        check_trl_pipeline(config, estimator)
        self.envs = {c.key: c for c in envs}
        self.policy, self.config, self.runner_config, self.replay = policy, config, runner_config, replay
        self.estimator, self.sample_budget = estimator, sample_budget
        self.pipeline: RolloutPipeline | None = None
        self.last_batch: StepBatch | None = None
        self._tasks: dict[str, EpisodeSpec] = {}  # prompt key -> its task
        self._prompts: dict[str, Any] = {}  # task id -> its dataset prompt

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        policy = self._policy(trainer)
        size = trainer.num_generations if trainer.model.training else trainer.num_generations_eval
        tasks = [self._task(prompt, trainer) for prompt in prompts]
        groups = tasks[::size]
        if len(tasks) % size or any(task != groups[i // size] for i, task in enumerate(tasks)):
            raise ConfigError(
                f"expected each prompt {size} times in a row (num_generations), got {len(tasks)}"
            )
        pipeline = self._pipeline(policy, trainer, len(groups), size)
        check_token_trainer(trainer, pipeline)
        batch_ids = [spec.task_id or "" for spec in groups]
        candidates = batch_ids + self._others(batch_ids) if self._chooses(pipeline) else batch_ids
        batch = pipeline.step(candidates, self._samples_left(pipeline, len(tasks)))
        self.last_batch = batch
        ordered = self._ordered(batch, batch_ids, size, pipeline)
        reward = pipeline.reward
        out_prompts = [self._prompts.get(t.task_id, t.prompt) for t in ordered]
        fields = trl_fields(ordered, out_prompts, cast(TokenPolicy, policy), _eos_id(trainer), reward)
        if "gfcr_images" in fields:
            check_vision_trainer(trainer)
        if pipeline.trees:
            fields["gfcr_advantages"] = tree_fields(ordered, size, self.estimator, reward)
        if (process := pipeline.process) is not None:
            for start in range(0, len(ordered), size):  # the step scored the groups it kept, not top-ups
                if ordered[start].task_id not in batch.groups:
                    process.annotate([t for t in ordered[start : start + size] if _spoke(t)])
            fields["gfcr_process"] = per_token_fields(ordered, size, process.credit.token_advantages)
            fields["gfcr_process_weight"] = [process.credit.weight] * len(ordered)
        return fields

    def _samples_left(self, pipeline: RolloutPipeline, batch_size: int) -> int | None:
        """What this step may generate under `sample_budget` (None: no budget): the budget's unspent
        samples, and TRL's whole batch at least (its step cannot train on fewer)."""
        if self.sample_budget is None:
            return None
        return max(self.sample_budget - pipeline.samples_total, batch_size)

    def _chooses(self, pipeline: RolloutPipeline) -> bool:
        """Whether Control may pick other prompts than TRL's batch (a selector, a stage that drops, a
        curriculum that keeps each category's current level)."""
        control = pipeline.controller.config
        return (
            control.selector != "uniform"
            or control.dynamic_sampling
            or control.early_stopping
            or control.curriculum != "none"
        )

    def _others(self, batch_ids: Sequence[str]) -> list[str]:
        taken = set(batch_ids)
        return [spec.task_id for spec in self._tasks.values() if spec.task_id and spec.task_id not in taken]

    def _ordered(
        self, batch: StepBatch, batch_ids: Sequence[str], size: int, pipeline: RolloutPipeline
    ) -> list[Trajectory]:
        """`len(batch_ids)` groups of `size`, group by group: the kept ones, then the dropped full
        groups, then plain groups of TRL's own prompts run now. A prompt TRL's batch holds twice
        (two dataset rows with one text) gets a fresh group each time, as TRL's own generation gives it."""
        failed = [t for t in batch.generated if t.status == "failed"]  # they reach TRL as reward None
        groups = [
            (task_id, padded)
            for task_id, group in batch.groups.items()
            if len(padded := _padded(group, failed, size)) == size
        ]
        wanted = len(batch_ids)
        if len(groups) < min(wanted, len(batch.decided.allocated)):
            logger.warning(
                "the step kept %d of %d groups; topping up with dropped groups", len(groups), wanted
            )
            kept = {task_id for task_id, _ in groups}
            for task_id, group in group_by_task(batch.generated).items():
                if len(groups) < wanted and task_id not in kept:
                    if len(padded := _padded(group, failed, size)) == size:
                        groups.append((task_id, padded))
        missing = Counter(batch_ids) - Counter(task_id for task_id, _ in groups)
        missing = Counter(list(missing.elements())[: wanted - len(groups)])
        if missing:
            plan = {task_id: size * times for task_id, times in missing.items()}
            for task_id, group in group_by_task(pipeline.sample(plan)).items():
                groups += [(task_id, group[i * size : (i + 1) * size]) for i in range(missing[task_id])]
        order = {task_id: i for i, task_id in reversed(list(enumerate(batch_ids)))}
        groups.sort(key=lambda g: order.get(g[0], wanted))  # TRL's own prompts in TRL's order, then Control's
        ordered = [t for _, group in groups[:wanted] for t in group]
        if len(ordered) != wanted * size:
            raise ConfigError(
                f"the step gave {len(ordered)} episodes, but TRL needs {size} (num_generations) for each of "
                f"{wanted} prompts; episodes failed by the infrastructure are left out of groups: see the "
                "trajectories' failure reasons (rollout.last_batch.generated)"
            )
        return ordered

    def _pipeline(self, policy: Policy, trainer: Any, num_prompts: int, size: int) -> RolloutPipeline:
        if self.pipeline is None:
            runner = self.runner_config or _trainer_runner_config(trainer.args, num_prompts * size)
            pool = list({spec.task_id: spec for spec in self._tasks.values()}.values())
            self.pipeline = RolloutPipeline.from_config(
                policy,
                pool,
                self.config,
                prompts_per_step=num_prompts,
                group_size=size,
                seed=int(trainer.args.seed),
                runner=runner,
                replay=self.replay,
            )
        return self.pipeline

    def _policy(self, trainer: Any) -> Policy:
        if self.policy is None:
            processing = trainer.processing_class  # a tokenizer, or a vision-language model's processor
            tokenizer = getattr(processing, "tokenizer", processing)
            processor = processing if getattr(processing, "image_processor", None) is not None else None
            model = trainer.accelerator.unwrap_model(trainer.model)
            self.policy = HFPolicy.from_model(model, tokenizer, name="hf:trl", processor=processor)
        if not keeps_tokens(type(self.policy)):
            raise ConfigError(
                f"rollout_func needs a policy that keeps token ids (hf:, vllm:); {self.policy.name} does not"
            )
        self.policy.version = str(trainer.state.global_step)  # type: ignore[misc]  # the weights' step
        return self.policy

    def _task(self, prompt: Any, trainer: Any) -> EpisodeSpec:
        """The task of a prompt, from the trainer's datasets' rows (indexed on first use)."""
        key = _prompt_key(prompt)
        if key not in self._tasks:
            for rows in (trainer.train_dataset, getattr(trainer, "eval_dataset", None)):
                self._index(rows)
        if key not in self._tasks:
            raise ConfigError(
                f"no dataset row has the prompt {str(prompt)[:80]}…; build the dataset with "
                "gfcr.integrations.trl.dataset(...) (columns prompt, task_id, env_id, env_kwargs)"
            )
        return self._tasks[key]

    def _index(self, rows: Any) -> None:
        if isinstance(rows, dict):  # several eval datasets
            for part in rows.values():
                self._index(part)
            return
        names = getattr(rows, "column_names", None) or []  # None for a streaming dataset
        if "task_id" not in names:
            return
        columns = {
            name: rows[name] for name in ("prompt", "task_id", "env_id", "env_kwargs") if name in names
        }
        only = next(iter(self.envs.values())) if len(self.envs) == 1 else None
        for i, prompt in enumerate(columns["prompt"]):
            env_id = columns["env_id"][i] if "env_id" in columns else None
            kwargs = columns["env_kwargs"][i] if "env_kwargs" in columns else None
            env = only if env_id is None and only is not None else self._env(env_id, kwargs)
            spec = EpisodeSpec(env, columns["task_id"][i])
            self._prompts.setdefault(spec.task_id or "", prompt)
            previous = self._tasks.setdefault(_prompt_key(prompt), spec)
            if previous != spec:
                logger.warning(
                    "tasks %s and %s have the same prompt; it runs as %s",
                    previous.task_id,
                    spec.task_id,
                    previous.task_id,
                )

    def _env(self, env_id: str | None, kwargs: str | None) -> EnvConfig:
        key = json.dumps([env_id, json.loads(kwargs or "{}")], sort_keys=True, default=str)
        if key not in self.envs:
            raise ConfigError(
                f"a dataset row is for env {env_id!r} with {kwargs}, which this rollout_func does not run "
                f"(it runs {[c.env_id for c in self.envs.values()]}); build both from one env id and kwargs"
            )
        return self.envs[key]


def rollout_func(
    env_id_or_suite: str,
    policy: Policy | None = None,
    *,
    config: PipelineConfig | str | Path | None = None,
    runner_config: RunnerConfig | None = None,
    replay: ReplaySink | None = None,
    estimator: str | None = None,
    sample_budget: int | None = None,
    **env_kwargs: Any,
) -> GfcrRollout:
    """A `GRPOTrainer(rollout_func=...)` whose every batch is one step of gfcr's rollout pipeline.

    `config` is the pipeline's stages: a `PipelineConfig`, or the path of a `gfcr train` recipe
    (e.g. `examples/methods/dapo.toml`: its `[control]`, `[generate]`, `[overlong_penalty]` and
    `[replay]` sections; the trainer-only sections are for `gfcr train` and left alone here), so a
    recipe configured for one trainer runs unchanged in the other. `num_prompts` and `group_size`
    follow TRL's batch (its prompts and `num_generations`). Episodes are multi-turn with the env's
    tools, token-in-token-out: `completion_ids` are the policy's sampled tokens and the observation
    tokens between turns (`env_mask` 0, logprob 0.0). Sampling follows the trainer's `temperature`,
    `top_p` and `max_completion_length` (the token budget of a whole episode) unless
    `runner_config` is given. `policy` defaults to the trainer's model; any `TokenPolicy` works.
    `replay` stores every finished trajectory (and rescues all-failed groups when the recipe's
    `[replay] rescue` is on). With trees or `[judge.process]`, train with `TreeGRPOTrainer` (it
    takes each token's advantage from the tree, and adds its step's process advantage);
    `estimator` is the tree's ("treerl" or "treerpo"; None: the recipe's `[loss] estimator`, else
    "treerl"). `sample_budget` caps the episodes the run generates as `gfcr train`'s does: dynamic
    sampling's refills stop once the run has generated that many (`rollout.pipeline.samples_total`),
    but each step still fills TRL's batch, so stop TRL (`max_steps` or a callback) once the budget
    cannot hold another batch.

    Extra fields for reward functions: `gfcr_reward`, `gfcr_signals`, `task_id`, `trajectory_id`;
    and where the episodes show a vision-language policy images (a trainer whose `processing_class`
    is a processor), `gfcr_images`: each completion's images (`gfcr.core.Image`), in the order of
    their placeholder runs in `prompt_ids + completion_ids`, which `VisionGRPOTrainer` (and
    `TreeGRPOTrainer`) feed to every forward pass; any other trainer is refused (`ConfigError`).

    >>> f = rollout_func("gfcr/ToolUse-v0", num_tasks=10)
    >>> [c.env_id for c in f.envs.values()], f.config.control.selector
    (['gfcr/ToolUse-v0'], 'uniform')
    """
    if env_id_or_suite in gym.registry:
        envs = [env_config(env_id_or_suite, env_kwargs)]
    elif env_kwargs:
        raise ConfigError(
            f"suite {env_id_or_suite!r} fixes its envs' keywords; got {sorted(env_kwargs)}: drop them"
        )
    else:
        suite = make_suite(env_id_or_suite)
        envs = [env_config(entry.env_id, entry.kwargs) for entry in suite.entries]
    if estimator is None and config is not None and not isinstance(config, PipelineConfig):
        estimator = read_toml(config).get("loss", {}).get("estimator")
    if not isinstance(config, PipelineConfig):
        config = PipelineConfig() if config is None else PipelineConfig.from_toml(config)
    return GfcrRollout(envs, policy, config, runner_config, replay, estimator or "treerl", sample_budget)


def check_trl_pipeline(config: PipelineConfig, estimator: str = "treerl") -> None:
    """Refuse what TRL's batch cannot hold, naming the stage and why."""
    control = config.control
    if config.credit.seed_grpo.enabled:
        raise ConfigError(
            "[credit.seed_grpo] scales the advantages gfcr's credit stage computes, but under TRL "
            "GRPOTrainer computes them from the reward functions (a reward scaled per group is "
            "normalised away); drop [credit.seed_grpo] under TRL (gfcr train runs it)"
        )
    if control.sample_budget is not None or control.token_budget is not None:
        raise ConfigError(
            "[control] sample_budget/token_budget allocate a different number of samples to each prompt, "
            "but TRL's batch holds num_generations samples of every prompt; drop the budget under TRL "
            "(gfcr train runs it)"
        )
    if config.replay.mix_ratio > 0:
        raise ConfigError(
            f"[replay] mix_ratio = {config.replay.mix_ratio} adds stored samples to each prompt's group "
            "(RePO), but TRL's batch holds exactly num_generations samples of every prompt; mix under gfcr "
            "train, or use [replay] rescue under TRL (it replaces a sample within the group)"
        )
    if config.replay.correction != "recompute":
        raise ConfigError(
            f"[replay] correction = {config.replay.correction!r} weighs replayed tokens in gfcr train's "
            "loss; under TRL the loss is TRL's, which takes every sample's old logprobs from the current "
            "policy (the 'recompute' correction) and weighs tokens against rollout_func's logprobs only "
            "with GRPOConfig(use_vllm=True, vllm_importance_sampling_correction=True); leave correction "
            "= 'recompute' under TRL"
        )
    if (config.generate.trees or control.branch_at) and estimator not in TREE_ESTIMATORS:
        raise ConfigError(
            f"[generate] trees and [control] branch_at are credited per token by a tree estimator under "
            f"TRL, one of {list(TREE_ESTIMATORS)}; got estimator {estimator!r}: set [loss] estimator (or "
            "rollout_func(estimator=...)) to one, or drop the tree"
        )


def check_token_trainer(trainer: Any, pipeline: RolloutPipeline) -> None:
    """Trees and process scores train on per-token advantages, which only `TreeGRPOTrainer` takes
    from the rollout."""
    from gfcr.integrations.trl.tree import TreeGRPOTrainer  # TRL is loaded: a trainer exists

    reasons = []
    if pipeline.trees:
        reasons.append("[generate] trees and [control] branch_at credit each token from its tree")
    if pipeline.process is not None:
        reasons.append("[judge.process] adds each step's process advantage to its tokens'")
    if reasons and not isinstance(trainer, TreeGRPOTrainer):
        raise ConfigError(
            f"{'; '.join(reasons)}, but {type(trainer).__name__} trains every completion on one advantage "
            "from its reward functions; build the trainer as gfcr.integrations.trl.TreeGRPOTrainer(...) "
            "(the same arguments)"
        )


def check_vision_trainer(trainer: Any) -> None:
    """Episodes that show the model images train only where every forward pass gets their pixels,
    which TRL's `GRPOTrainer` does not give on the `rollout_func` path."""
    from gfcr.integrations.trl.vision import VisionGRPOTrainer  # TRL is loaded: a trainer exists

    if not isinstance(trainer, VisionGRPOTrainer):
        raise ConfigError(
            f"the episodes show the model images (gfcr_images), but {type(trainer).__name__} gives its "
            "forward passes only the pixels of the dataset's image columns: the model would train on its "
            "image placeholder tokens with no picture behind them; build the trainer as "
            "gfcr.integrations.trl.VisionGRPOTrainer(...) (the same arguments; TreeGRPOTrainer takes "
            "images too)"
        )


def tree_fields(
    trajectories: Sequence[Trajectory], size: int, estimator: str, reward: Any
) -> list[list[float]]:
    """Each completion's per-token advantages from its group's tree (`per_token_fields`)."""

    def tree(group: list[Trajectory]) -> list[list[float]]:
        by_id = token_tree_advantages(group, estimator, outcome=reward)
        return [by_id[t.id] for t in group]

    return per_token_fields(trajectories, size, tree)


def per_token_fields(
    trajectories: Sequence[Trajectory],
    size: int,
    advantages: Callable[[list[Trajectory]], list[list[float]]],
) -> list[list[float]]:
    """Each completion's per-token `advantages` within its group (every `size` trajectories in a row
    are one prompt's), aligned with `trl_fields`' `completion_ids` (a placeholder gets [0.0])."""
    out: list[list[float]] = []
    for start in range(0, len(trajectories), size):
        group = trajectories[start : start + size]
        # over the completions TRL scores: one with reward None (no token) is left out, as TRL does
        rows = iter(advantages([t for t in group if _spoke(t)]))
        out += [next(rows) if _spoke(t) else [0.0] for t in group]
    return out


def _trainer_runner_config(args: Any, num_episodes: int) -> RunnerConfig:
    """The runner settings that follow TRL's: sampling, and the completion budget of an episode."""
    sampling = SamplingParams(
        temperature=float(args.temperature),
        top_p=float(args.top_p),
        max_tokens=int(args.max_completion_length),
    )
    return RunnerConfig(
        concurrency=num_episodes, sampling=sampling, max_episode_tokens=int(args.max_completion_length)
    )


def trl_fields(
    trajectories: Sequence[Trajectory],
    prompts: Sequence[Any],
    policy: TokenPolicy,
    eos_id: int,
    reward: Any = None,
) -> dict[str, list[Any]]:
    """TRL's rollout fields from trajectories' token data, with each episode's judged `reward`
    (None: the env's); an episode that failed before the policy spoke gets its prompt's ids, one
    end-of-turn token masked out, and reward None. Where any episode's ids show images, each
    completion's images too (`gfcr_images`, in placeholder order; text-only batches have none)."""
    keys = ("prompt_ids", "completion_ids", "logprobs", "env_mask", "gfcr_reward", "gfcr_signals")
    out: dict[str, list[Any]] = {key: [] for key in (*keys, "task_id", "trajectory_id")}
    images: list[list[Image]] = []  # each completion's, in placeholder order
    for trajectory, prompt in zip(trajectories, prompts, strict=True):
        tokens = trajectory.tokens
        spoke = _spoke(trajectory)
        if tokens is not None and spoke:
            out["prompt_ids"].append(list(tokens.prompt_ids))
            out["completion_ids"].append(list(tokens.completion_ids))
            out["logprobs"].append(list(tokens.logprobs))
            out["env_mask"].append(list(tokens.loss_mask))
            images.append(list(tokens.images))
        else:
            messages = (
                [Message.from_dict(m) for m in prompt]
                if isinstance(prompt, list)
                else [Message("user", prompt)]
            )
            out["prompt_ids"].append(
                list(tokens.prompt_ids) if tokens else policy.encode_prompt(messages, ())
            )
            out["completion_ids"].append([eos_id])
            out["logprobs"].append([0.0])
            out["env_mask"].append([0])
            sees = getattr(policy, "sees_images", False)  # the prompt's ids hold its images' placeholders
            images.append([image for m in messages for image in m.images] if sees else [])
        judged = reward(trajectory) if reward is not None else trajectory.total_reward
        out["gfcr_reward"].append(judged if spoke else None)
        out["gfcr_signals"].append(dict(trajectory.signals))
        out["task_id"].append(trajectory.task_id)
        out["trajectory_id"].append(trajectory.id)
    if any(images):
        out["gfcr_images"] = images
    return out


def _padded(group: Sequence[Trajectory], failed: Sequence[Trajectory], size: int) -> list[Trajectory]:
    """`size` episodes of a group's task: its kept ones, then those the infrastructure or a judge
    failed (TRL gets them with reward None and leaves them out of its group baseline)."""
    task_id = group[0].task_id
    return [*group, *(t for t in failed if t.task_id == task_id)][:size]


def _spoke(trajectory: Trajectory) -> bool:
    """Whether the policy sampled any token of the episode (else TRL gets a placeholder)."""
    tokens = trajectory.tokens
    return tokens is not None and sum(tokens.loss_mask) > 0 and trajectory.status == "ok"


def _eos_id(trainer: Any) -> int:
    tokenizer = getattr(trainer.processing_class, "tokenizer", trainer.processing_class)
    return int(tokenizer.eos_token_id)


def _prompt_key(prompt: Any) -> str:
    return json.dumps(prompt, sort_keys=True, ensure_ascii=False, default=str)
