"""`Trainer`: the GRPO-family loop — rollout, filter, update, sync, log, checkpoint.

One RL step:

1. the rollout pipeline (`pipeline.py`) runs the step's rollouts: Control chooses the prompts and
   allocates their samples, the vectorized runner generates them with the current policy (groups,
   trees, guidance; token-in-token-out, multi-turn, tools), Filter judges them, Control decides
   what is stopped, dropped or refilled, Replay keeps them (and rescues all-failed groups);
2. its credit stage turns the kept groups into samples with per-token advantages (group or tree
   estimators), old samples with their own behaviour logprobs; the off-policy ones (replayed) get
   their old logprobs recomputed under the current policy, and with `[replay] correction = "tis"`
   truncated importance weights against their behaviour policy (`update.correct_off_policy`);
   the replay buffer records that refresh;
3. the loss (`losses.py`) is accumulated over micro-batches and AdamW takes a clipped step
   (none when every advantage is 0: `update.policy_update`);
4. the rollout engine gets the new weights, metrics are logged, a checkpoint is written every
   `checkpoint_every` steps.

With `[async] max_staleness = S > 0` the rollouts (1.) run ahead on a thread of their own (`overlap.py`):
the batches of the next S steps are generated while this step's update runs, with a copy of the
weights pushed after every update; stale tokens are corrected against the behaviour policy that
sampled them (`[async] correction`), and their shift is logged per staleness level
(`async/staleness_<k>/…`).

A supervised warm start (`[sft] steps > 0`, `sft.py`) runs first on filtered trajectories; RL then
starts with a fresh AdamW and takes the warm-started model as its KL reference (`begin_rl`).
Building a `Trainer` reads the model and writes nothing; `begin()` (run by `train()`) resumes from
out_dir's newest checkpoint or clears what an earlier run left there, and writes the config.

>>> import tempfile
>>> from gfcr.agents.policies.tiny_model import write_tiny_model
>>> out = tempfile.mkdtemp()
>>> config = TrainConfig.from_dict({
...     "model": {"path": str(write_tiny_model(out + "/m", vocab_size=400, corpus_tasks=20))},
...     "env": {"id": "gfcr/ToolUse-v0", "num_tasks": 8},
...     "rollout": {"prompts_per_step": 2, "group_size": 2, "max_tokens": 8},
...     "log": {"tensorboard": False, "progress": False}, "steps": 1, "out_dir": out + "/run"})
>>> Trainer(config).train()[-1]["step"]
1
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from gfcr.agents import Runner, RunnerConfig, episodes_for_env, make_policy
from gfcr.core import EpisodeSpec, Policy, Trajectory, read_jsonl, write_jsonl
from gfcr.core.config import to_dict
from gfcr.errors import ConfigError
from gfcr.filter.indicators import replay_indicators, replayed
from gfcr.proposals import ProvenanceStore
from gfcr.replay import ReplayBuffer, ReplayConfig
from gfcr.trainers import checkpoint as ckpt
from gfcr.trainers.batching import Sample
from gfcr.trainers.config import TrainConfig
from gfcr.trainers.logging import MetricLogger, TrainProgress
from gfcr.trainers.models import load_models
from gfcr.trainers.overlap import RolloutStream
from gfcr.trainers.pipeline import RolloutPipeline, StepBatch, credit_metrics
from gfcr.trainers.sft import filter_trajectories, sft_samples
from gfcr.trainers.update import UpdateSettings, correct_off_policy, policy_update, sft_update
from gfcr.trainers.watch import PathologyWatch

logger = logging.getLogger(__name__)
SFT_DATA = "sft_data.jsonl"  # the teacher's kept trajectories, in out_dir
SFT_SOURCE = "sft_data.source.json"  # the settings that made them (`sft_data_source`)
# the run's databases in out_dir: the replay buffer, the skill library ([replay.skills]) and the
# proposals' provenance ([propose]), each with the journals SQLite keeps beside it
DATABASE_FILES = tuple(
    name + suffix
    for name in ("replay.db", "skills.db", "proposals.db")
    for suffix in ("", "-journal", "-wal", "-shm")
)


class Trainer:
    """Trains `config.model` on `config.env`. `train()` first resumes from the newest checkpoint in
    `out_dir`, or — without one, or with `resume=False` — starts over: what an earlier run wrote
    there is removed (`clear_outputs`); the SFT data is kept only when resuming and made with the
    same settings.
    """

    def __init__(self, config: TrainConfig, *, resume: bool = True) -> None:
        self.config, self.resume = config, resume
        self.out = Path(config.out_dir)
        if config.threads:
            torch.set_num_threads(config.threads)
        seed_everything(config.seed)
        self.models = load_models(config)
        self.model = self.models.model
        self.optimizer = self.new_optimizer()
        pipeline, budget = config.pipeline, episode_token_budget(config)
        self.replay: ReplayBuffer | None = None  # opened by begin(), in out_dir
        self.pipeline = RolloutPipeline.from_config(
            self.models.policy,
            pool_episodes(config, config.env.num_tasks),
            pipeline,
            prompts_per_step=config.rollout.prompts_per_step,
            group_size=config.rollout.group_size,
            seed=config.seed,
            runner=config.rollout.runner,
            estimator=config.loss.estimator or "grpo",
            episode_tokens=budget,
        )
        self.controller = self.pipeline.controller
        self.last_rollout: StepBatch | None = None  # the latest RL step's, for inspection
        self.watch = PathologyWatch(config.diagnose)
        self.settings = UpdateSettings(
            config.loss,
            micro_batch_size=config.optim.micro_batch_size,
            max_grad_norm=config.optim.max_grad_norm,
            max_tokens=budget,
            pad_id=self.models.pad_id,
            device=self.models.device,
            autocast=self.models.autocast,
            correction=pipeline.replay.correction,
            stale_correction=config.async_.correction,
            recompute_old_logprobs=config.optim.recompute_old_logprobs,
            pixels=self.models.pixels,
        )
        self.step = 0
        self.stream: RolloutStream | None = None  # [async]: the rollouts running ahead (`rl_step` starts it)
        self.rollout_state: dict[str, Any] | None = None  # [async]: state after the last batch trained
        self.sft_data: list[Sample] | None = None
        self.begun = self.resumed = False  # begin() has run; it resumed from a checkpoint

    def begin(self) -> None:
        """Where a run starts, once: resume from out_dir's newest checkpoint (unless `resume=False`)
        or clear what an earlier run left there, and write the config beside the metrics (for
        `gfcr diagnose OUT_DIR`). Every step that uses out_dir calls it first (train, rl_step,
        sft_step, collect_sft_data, save); call it yourself to inspect a resumed run."""
        if self.begun:
            return
        self.out.mkdir(parents=True, exist_ok=True)
        latest = ckpt.latest_checkpoint(self.out / "checkpoints") if self.resume else None
        if latest is None:
            self.clear_outputs(keep_sft_data=self.resume)
        replay = self.config.pipeline.replay
        if replay.enabled:
            url = str(self.out / "replay.db")
            self.replay = ReplayBuffer(ReplayConfig(url=url, max_staleness=replay.max_staleness))
            self.pipeline.keep_in(self.replay)
        if replay.skills.enabled:  # the run's skill library, grown by its steps
            self.pipeline.keep_skills(replay.skills.library(str(self.out / "skills.db")))
        if self.pipeline.propose is not None:  # every proposal's provenance, for `gfcr diagnose`
            self.pipeline.propose.store = ProvenanceStore(self.out / "proposals.db")
        if latest is not None:
            self.load(latest)
        self.models.sync(self.step)
        (self.out / "config.json").write_text(
            json.dumps(self.config.to_dict(), indent=2, default=str), encoding="utf-8"
        )
        self.begun, self.resumed = True, latest is not None

    # -- the loop --------------------------------------------------------------------------------

    def train(self, until: int | None = None) -> list[dict[str, Any]]:
        """Run to step `until` (default `config.total_steps`), the sample budget or the time limit,
        then checkpoint (and evaluate, when stopped early); returns the metrics of every step run."""
        self.begin()
        config, history = self.config, []
        continuing = self.resumed or self.step > 0  # a new run's log starts empty
        log = MetricLogger(
            self.out, tensorboard=config.log.tensorboard, resume_step=self.step if continuing else None
        )
        last = config.total_steps if until is None else min(until, config.total_steps)
        started, stopped_for = time.perf_counter(), None
        with self, TrainProgress(config.total_steps, self.step, enabled=config.log.progress) as bar:
            if config.log.eval_every and self.step == 0:
                log.log(0, self.evaluate())
            while self.step < last and stopped_for is None:
                metrics = self.sft_step() if self.step < config.sft.steps else self.rl_step()
                stopped_for = self._stop_reason(time.perf_counter() - started) if self.step < last else None
                if config.log.eval_every and (self.step % config.log.eval_every == 0 or stopped_for):
                    metrics.update(self.evaluate())
                if stopped_for:
                    metrics["run/stopped_for"] = stopped_for
                self.watch.check(self.step, metrics)
                history.append({"step": self.step, **metrics})
                if self.step % config.log.every == 0 or self.step == last or stopped_for:
                    log.log(self.step, metrics)
                bar.update(self.step, metrics)
                if (config.checkpoint_every and self.step % config.checkpoint_every == 0) or stopped_for:
                    self.save()
        if not (self.out / "checkpoints" / f"step-{self.step:06d}").exists():
            self.save()
        log.close()
        if stopped_for == "sample_budget":
            logger.info(
                "stopped at step %d: the sample budget (%d) is spent", self.step, config.sample_budget
            )
        elif self.step < last:  # after the progress display is gone, so that the warning stands out
            logger.warning(
                "STOPPED FOR THE TIME LIMIT (time_limit_s = %g) at step %d of %d, checkpoint saved; "
                "run the same command again to continue, or raise time_limit_s",
                config.time_limit_s,
                self.step,
                last,
            )
        return history

    def __enter__(self) -> Trainer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the rollouts running ahead ([async]), after the batch being made; `train` does it
        when it returns, a caller of `rl_step` when done (or use the trainer as a context manager)."""
        if self.stream is not None:
            self.stream.close()
            self.stream = None

    @property
    def rollouts_trained(self) -> dict[str, int]:
        """The pipeline's counters (`samples_total`: episodes generated, dropped ones included;
        `tokens_total`, `rounds_total`) for the steps trained so far: with [async], not those of
        the batches made ahead."""
        return (
            self.rollout_state["rollouts"] if self.rollout_state is not None else self.pipeline.state_dict()
        )

    @property
    def samples_total(self) -> int:
        """Episodes generated for the steps trained so far (`rollouts_trained`)."""
        return int(self.rollouts_trained["samples_total"])

    def _stop_reason(self, elapsed_s: float) -> str | None:
        """Why the run stops before its last step: "sample_budget", "time_limit", or None."""
        config = self.config
        budget = config.sample_budget
        if budget is not None and budget - self.samples_total < self.pipeline.group_cost:
            return "sample_budget"  # spent, or what is left cannot hold one group
        if config.time_limit_s is not None and elapsed_s > config.time_limit_s:
            return "time_limit"
        return None

    def rl_step(self) -> dict[str, Any]:
        """One RL step: the pipeline's rollouts and credit, the update, the weight sync."""
        self.begin()
        config = self.config
        started = time.perf_counter()
        batch, timing = self._rollouts()
        self.last_rollout = batch
        samples = self.pipeline.credit(batch)
        stats: dict[str, float] = {}
        self._set_lr()
        samples, corrected = correct_off_policy(self.model, samples, self.settings, current_version=self.step)
        if self.replay is not None:  # their logprobs were recomputed under this step's policy
            self.replay.refresh([t.id for t in batch.trained if replayed(t)], version=self.step)
        if samples:
            for _ in range(config.optim.updates_per_batch):
                stats = policy_update(
                    self.model, self.optimizer, samples, self.settings, self.models.reference
                )
                if stats["update/skipped"]:
                    logger.info("step %d: every advantage is 0 (no signal); no optimizer step", self.step + 1)
                    break
        else:
            logger.warning("step %d: no group with policy tokens to train on; no update", self.step + 1)
            stats = {"update/skipped": 1.0}  # logged like a step whose advantages were all 0
        return {
            **batch.metrics,
            **credit_metrics(samples),
            **corrected,
            **replay_indicators(batch.trained, current_version=self.step),  # rescued samples among them
            **staleness_metrics(samples, self.step),
            "rollout/samples_total": self.samples_total,
            "rollout/tokens_total": self.rollouts_trained["tokens_total"],
            **stats,
            **timing,
            **self._advance(started, samples),
        }

    def _rollouts(self) -> tuple[StepBatch, dict[str, float]]:
        """This step's batch, and how long it took: generated now, or with [async] taken from the
        rollouts running ahead (started here at the first RL step) after `async/wait_s` seconds."""
        started, staleness = time.perf_counter(), self.config.async_.max_staleness
        if staleness == 0:
            budget = self.config.sample_budget
            batch = self.pipeline.step(samples_left=None if budget is None else budget - self.samples_total)
            return batch, {"perf/rollout_s": time.perf_counter() - started}
        if self.stream is None:
            self.stream = RolloutStream(self.pipeline, staleness, first_step=self.step)
            self.stream.start()
        produced = self.stream.get(self.step)
        self.rollout_state = produced.state
        return produced.batch, {
            "perf/rollout_s": produced.rollout_s,
            "async/wait_s": time.perf_counter() - started,  # the update waited for its batch
            "async/started_behind": float(self.step - produced.started_at),  # versions behind at its start
            "async/ahead": float(self.stream.ahead),  # batches made for later steps
            "async/generator_idle_s": self.stream.idle_s,  # the generator waited at its bound, in all
        }

    def sft_step(self) -> dict[str, Any]:
        """One supervised warm-start step on a seeded draw of the filtered trajectories."""
        self.begin()
        started = time.perf_counter()
        if self.sft_data is None:
            self.sft_data = self.collect_sft_data()
        rng = np.random.default_rng(self.config.seed * 1_000_003 + self.step)
        size = min(self.config.sft.batch_size, len(self.sft_data))
        batch = [self.sft_data[i] for i in rng.choice(len(self.sft_data), size=size, replace=False)]
        self._set_lr()
        stats = sft_update(self.model, self.optimizer, batch, self.settings)
        return {**stats, **self._advance(started, batch)}

    def begin_rl(self) -> None:
        """After the warm start: RL gets a fresh AdamW (SFT's moments belong to another loss and LR),
        and the KL reference becomes the warm-started model, as in DeepSeekMath (§4.1) and TRL."""
        self.optimizer = self.new_optimizer()
        if self.models.reference is not None:
            self.models.reference.freeze()
        logger.info("step %d: warm start done; RL starts with a fresh optimizer", self.step)

    def _advance(self, started: float, samples: Sequence[Sample]) -> dict[str, float]:
        """After an update: the step moves on and the rollout weights follow; returns the step's
        optimizer and speed metrics."""
        lr = self.optimizer.param_groups[0]["lr"]  # the LR this step's update used
        self.step += 1
        if self.step == self.config.sft.steps:
            self.begin_rl()
        self.models.sync(self.step)
        if self.stream is not None:  # the rollouts running ahead generate with these weights now
            self.stream.advance(self.step)
        step_s = time.perf_counter() - started
        tokens = sum(len(s.input_ids) for s in samples)
        return {
            "optim/lr": lr,
            "perf/step_s": step_s,
            "perf/tokens": tokens,
            "perf/tokens_per_s": tokens / step_s,
        }

    def collect_sft_data(self) -> list[Sample]:
        """Run the teacher, keep what passes `min_reward`. Cached in out_dir/sft_data.jsonl beside
        the settings that made it (`sft_data_source`); made again when those differ."""
        self.begin()
        config, path, source_path = self.config, self.out / SFT_DATA, self.out / SFT_SOURCE
        source = sft_data_source(config)
        stored = json.loads(source_path.read_text(encoding="utf-8")) if source_path.exists() else {}
        if path.exists() and stored == source:
            kept = list(read_jsonl(path))
        else:
            if path.exists():
                changed = sorted(k for k in source.keys() | stored.keys() if source.get(k) != stored.get(k))
                logger.warning(
                    "%s was made with other settings (%s); making it again", path, ", ".join(changed)
                )
            source_path.unlink(missing_ok=True)
            kept = self._run_teacher()
            write_jsonl(kept, path)
            source_path.write_text(json.dumps(source, indent=2), encoding="utf-8")
        if not kept:
            raise ConfigError(
                f"no trajectory reached [sft] min_reward = {config.sft.min_reward}; lower it or use a "
                "stronger teacher (e.g. teacher = 'scripted:oracle')"
            )
        return sft_samples(kept, self.models.chat, config.env.kwargs)

    def _run_teacher(self) -> list[Trajectory]:
        """The teacher's episodes that pass `min_reward`, in the order of their specs."""
        config = self.config
        teacher = make_policy(config.sft.teacher) if config.sft.teacher else self.models.policy
        specs = [  # the training pool's tasks (never the held-out ones), seeded apart from RL's
            dataclasses.replace(spec, seed=config.seed + 1 + i)
            for i, spec in enumerate(pool_episodes(config, config.sft.episodes))
        ]
        result = Runner(teacher, self.runner_config()).run(specs)
        order = {spec.id: i for i, spec in enumerate(specs)}  # the runner yields them as they finish
        finished = sorted(result.trajectories, key=lambda t: order.get(t.id, len(order)))
        kept = filter_trajectories(finished, config.sft.min_reward)
        logger.info("SFT data: kept %d of %d trajectories", len(kept), len(result.trajectories))
        return kept

    def evaluate(self) -> dict[str, float]:
        """Mean reward of the current policy on `eval_episodes` fixed episodes of held-out tasks.

        The tasks come after the training pool in the same seeded order: never trained on. A run
        that trains with its skill library is evaluated as the agent it trains, with the library
        (`eval/reward_mean`, `eval/solved`; `RolloutPipeline.with_skills`: nothing recorded, nothing
        extracted), and also without it (`eval/reward_mean_no_skills`, `eval/solved_no_skills`):
        what the weights alone do, comparable with a run without skills.
        """
        episodes = self.held_out_episodes()
        metrics = self._eval_run(self.models.policy, episodes)
        skilled = self.pipeline.with_skills(self.models.policy, episodes)
        if skilled is None:  # the run's episodes see no skills
            return metrics
        return {f"{key}_no_skills": value for key, value in metrics.items()} | self._eval_run(*skilled)

    def _eval_run(self, policy: Policy, episodes: Sequence[EpisodeSpec]) -> dict[str, float]:
        result = Runner(policy, self.runner_config()).run(episodes)
        solved = result.solved / max(result.episodes, 1)
        return {"eval/reward_mean": result.mean_reward, "eval/solved": solved}

    def held_out_episodes(self) -> list[EpisodeSpec]:
        """The evaluation's episodes (`held_out_episodes`)."""
        return held_out_episodes(self.config)

    # -- settings --------------------------------------------------------------------------------

    def runner_config(self) -> RunnerConfig:
        """How rollouts, SFT data and evaluations are run: `[rollout]`'s runner settings."""
        return self.config.rollout.runner

    def new_optimizer(self) -> torch.optim.Optimizer:
        """AdamW over the trainable weights (its LR is set before each update: `lr_factor`)."""
        optim = self.config.optim
        return torch.optim.AdamW(
            [p for p in self.model.parameters() if p.requires_grad],
            lr=optim.lr,
            betas=optim.betas,
            weight_decay=optim.weight_decay,
        )

    def _set_lr(self) -> None:
        for group in self.optimizer.param_groups:
            group["lr"] = self.config.optim.lr * self.lr_factor(self.step)

    def lr_factor(self, step: int) -> float:
        """LR multiplier at optimizer step `step`: the SFT LR first, then warmup and the schedule."""
        config, optim = self.config, self.config.optim
        if step < config.sft.steps:
            return (config.sft.lr or optim.lr) / optim.lr
        rl_step = step - config.sft.steps
        if rl_step < optim.warmup_steps:
            return (rl_step + 1) / optim.warmup_steps
        progress = (rl_step - optim.warmup_steps) / max(1, config.steps - optim.warmup_steps)
        if optim.schedule == "linear":
            return max(0.0, 1.0 - progress)
        if optim.schedule == "cosine":
            return 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))
        return 1.0

    # -- checkpoints -----------------------------------------------------------------------------

    def clear_outputs(self, *, keep_sft_data: bool) -> None:
        """Starting over: remove the checkpoints and databases (replay buffer, skill library,
        proposals) an earlier run left in out_dir, and its SFT data unless `keep_sft_data` (metrics
        and TensorBoard events: `MetricLogger`)."""
        ckpt.remove_checkpoints(self.out / "checkpoints")
        names = DATABASE_FILES if keep_sft_data else (*DATABASE_FILES, SFT_DATA, SFT_SOURCE)
        for name in names:
            if (self.out / name).exists():
                (self.out / name).unlink()
                logger.info("starting over: removed %s", self.out / name)

    def save(self) -> Path:
        """Write a checkpoint of everything a resumed run needs; keep the newest few."""
        self.begin()
        directory = self.out / "checkpoints"
        reference = self.models.reference
        warm_started = 0 < self.config.sft.steps <= self.step  # the reference is no longer the initial model
        state = {
            "trainable": ckpt.trainable_state(self.model),
            "optimizer": self.optimizer.state_dict(),
            "rng": ckpt.rng_state(),
            # with [async], the pipeline's state after the last batch trained: a resumed run makes
            # the batches that were ahead again
            "controller": self.rollout_state["controller"]
            if self.rollout_state
            else self.controller.state_dict(),
            "rollouts": self.rollouts_trained,
            "replay": self.replay.state_dict() if self.replay is not None else None,
            "skills": self.pipeline.skills.state_dict() if self.pipeline.skills is not None else None,
            "config": self.config.to_dict(),
            "reference": reference.state_dict() if reference is not None and warm_started else None,
        }
        # a vision-language model's processor saves its tokenizer, image processor and chat template
        path = ckpt.save_checkpoint(
            directory, self.step, state, self.model, self.models.processor or self.models.tokenizer
        )
        ckpt.prune_checkpoints(directory, self.config.keep_checkpoints)
        logger.info("checkpoint written: %s", path)
        return path

    def load(self, checkpoint: Path) -> None:
        """Restore a checkpoint written by `save`."""
        state = ckpt.load_state(checkpoint)
        trainable = state["trainable"]
        with torch.no_grad():
            for name, param in self.model.named_parameters():
                if name in trainable:
                    param.copy_(trainable[name].to(param.device, param.dtype))
        self.optimizer.load_state_dict(state["optimizer"])
        if self.models.reference is not None and state.get("reference") is not None:
            self.models.reference.load_state_dict(state["reference"])
        self.controller.load_state_dict(state["controller"])
        if state.get("rollouts") is not None:  # checkpoints before the counters have none
            self.pipeline.load_state_dict(state["rollouts"])
        if self.replay is not None and state.get("replay") is not None:
            self.replay.load_state_dict(state["replay"])
        if self.pipeline.skills is not None and state.get("skills") is not None:
            self.pipeline.skills.load_state_dict(state["skills"])
        ckpt.set_rng_state(state["rng"])
        self.step = int(state["step"])
        logger.info("resumed from %s (step %d)", checkpoint, self.step)


def episode_token_budget(config: TrainConfig) -> int:
    """The most completion tokens one episode can hold, Dr. GRPO's constant L_max: the runner's
    `max_episode_tokens`, else `max_tokens` per turn times the turns (`max_turns`, else the env's).

    >>> from gfcr.trainers import TrainConfig
    >>> episode_token_budget(TrainConfig.from_dict({"model": {"path": "m"}, "env": {"id": "gfcr/ToolUse-v0"},
    ...                                             "rollout": {"max_tokens": 24}}))  # the env's 3 turns
    72
    """
    runner = config.rollout.runner
    if runner.max_episode_tokens is not None:
        return runner.max_episode_tokens
    turns = runner.max_turns
    if turns is None:
        env = gym.make(config.env.id, **config.env.kwargs)
        turns = int(getattr(env.unwrapped, "max_turns", 1))  # every gfcr env (a TextEnv) has one
        env.close()
    return runner.sampling.max_tokens * turns


def sft_data_source(config: TrainConfig) -> dict[str, Any]:
    """The settings that decide the SFT data (`sft_data.jsonl` is made again when they change):
    the teacher, its episodes and filter, the env and its training pool, the seed and the runner's
    settings."""
    source = {
        "sft.teacher": config.sft.teacher or f"the model {config.model.path}",
        "sft.episodes": config.sft.episodes,
        "sft.min_reward": config.sft.min_reward,
        "env.id": config.env.id,
        "env.kwargs": config.env.kwargs,
        "env.num_tasks": config.env.num_tasks,  # the teacher runs on the training pool only
        "seed": config.seed,
        "rollout": to_dict(config.rollout.runner),
    }
    return json.loads(json.dumps(source, default=str))  # as it reads back from the file


def pool_episodes(config: TrainConfig, num_episodes: int) -> list[EpisodeSpec]:
    """Episodes over the training pool: the first `[env] num_tasks` tasks of the seeded order."""
    return episodes_for_env(
        config.env.id, num_episodes, kwargs=config.env.kwargs, seed=config.seed, pool=config.env.num_tasks
    )


def held_out_episodes(config: TrainConfig) -> list[EpisodeSpec]:
    """The evaluation's episodes: tasks after the training pool in its seeded order; with
    `[log] eval_env_kwargs`, tasks of the env made with those keywords (over `[env] kwargs`),
    the training pool's tasks left out (e.g. task kinds never trained on). Another trainer given
    the same config (benchmarks/trl_learning.py) is evaluated on the very same episodes."""
    if config.log.eval_env_kwargs:
        trained = {str(spec.task_id) for spec in pool_episodes(config, config.env.num_tasks)}
        kwargs = config.env.kwargs | config.log.eval_env_kwargs
        return episodes_for_env(
            config.env.id, config.log.eval_episodes, kwargs=kwargs, seed=config.seed, exclude=trained
        )
    return episodes_for_env(
        config.env.id, config.log.eval_episodes, kwargs=config.env.kwargs, seed=config.seed,
        skip=config.env.num_tasks,
    )  # fmt: skip


def staleness_metrics(samples: Sequence[Sample], version: int) -> dict[str, float]:
    """How many versions older than `version` the loss tokens of `samples` are, where their
    versions are known: `async/staleness_mean` and `async/staleness_max` (0 in synchronous
    training); {} where none is.

    >>> sample = Sample([1, 2, 3], [0, 1, 1], [0.0] * 3, [0.0] * 3, versions=[-1, 4, 5])
    >>> staleness_metrics([sample], 5)
    {'async/staleness_mean': 0.5, 'async/staleness_max': 1.0}
    """
    ages = [
        version - v
        for s in samples
        if s.versions is not None
        for v, m in zip(s.versions, s.loss_mask, strict=True)
        if m
    ]
    if not ages:
        return {}
    return {"async/staleness_mean": float(np.mean(ages)), "async/staleness_max": float(max(ages))}


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def main(config: TrainConfig, *, resume: bool = True) -> list[dict[str, Any]]:
    """Train as `config` says (the `gfcr train` command); returns the metrics of the steps run."""
    return Trainer(config, resume=resume).train()
