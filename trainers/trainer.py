"""`Trainer`: the GRPO-family loop — rollout, filter, update, sync, log, checkpoint.

One RL step:

1. Control picks `prompts_per_step` prompts and `group_size` samples each; the vectorized runner
   plays them (token-in-token-out, multi-turn, tools) with the current policy;
2. Filter turns each group's rewards into advantages (`gfcr.filter.group_advantages`); with a
   replay buffer, an all-failed group gets a stored correct response (AR3PO rescue) that keeps
   its old policy's logprobs;
3. the loss (`losses.py`) is accumulated over micro-batches and AdamW takes a clipped step;
4. the rollout engine gets the new weights, metrics are logged, a checkpoint is written every
   `checkpoint_every` steps.

A supervised warm start (`[sft] steps > 0`, `sft.py`) runs first on filtered trajectories.

>>> import tempfile
>>> from gfcr.apps.tiny_model import write_tiny_model
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

import logging
import math
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from gfcr.agents import Runner, RunnerConfig, episodes_for_env, make_policy
from gfcr.control import ControlConfig, RolloutController
from gfcr.core import Trajectory, read_jsonl, write_jsonl
from gfcr.generate.groups import group_by_task
from gfcr.replay import ReplayBuffer, ReplayConfig
from gfcr.trainers import checkpoint as ckpt
from gfcr.trainers.batching import Sample, samples_from_groups
from gfcr.trainers.config import TrainConfig
from gfcr.trainers.logging import MetricLogger, TrainProgress
from gfcr.trainers.models import load_models
from gfcr.trainers.sft import filter_trajectories, sft_samples
from gfcr.trainers.update import UpdateSettings, fill_old_logprobs, policy_update, sft_update

logger = logging.getLogger(__name__)


class Trainer:
    """Trains `config.model` on `config.env`; resumes from the newest checkpoint in `out_dir`."""

    def __init__(self, config: TrainConfig, *, resume: bool = True) -> None:
        self.config = config
        self.out = Path(config.out_dir)
        self.out.mkdir(parents=True, exist_ok=True)
        if config.threads:
            torch.set_num_threads(config.threads)
        seed_everything(config.seed)
        self.models = load_models(config)
        self.model = self.models.model
        optim = config.optim
        self.optimizer = torch.optim.AdamW(
            [p for p in self.model.parameters() if p.requires_grad],
            lr=optim.lr,
            betas=optim.betas,
            weight_decay=optim.weight_decay,
        )
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, self.lr_factor)
        rollout = config.rollout
        self.controller = RolloutController(
            ControlConfig(
                selector=rollout.selector,
                num_prompts=rollout.prompts_per_step,
                group_size=rollout.group_size,
                seed=config.seed,
            )
        )
        self.replay = (
            ReplayBuffer(
                ReplayConfig(url=str(self.out / "replay.db"), max_staleness=config.replay.max_staleness)
            )
            if config.replay.enabled
            else None
        )
        self.runner = Runner(
            self.models.policy, self.runner_config(), controller=self.controller, replay=self.replay
        )
        self.tasks = episodes_for_env(
            config.env.id, config.env.num_tasks, kwargs=config.env.kwargs, seed=config.seed
        )
        self.settings = UpdateSettings(
            config.loss,
            micro_batch_size=optim.micro_batch_size,
            max_grad_norm=optim.max_grad_norm,
            max_tokens=rollout.runner.max_episode_tokens or rollout.runner.sampling.max_tokens,
            pad_id=self.models.pad_id,
            device=self.models.device,
            autocast=self.models.autocast,
        )
        self.step = 0
        self.sft_data: list[Sample] | None = None
        latest = ckpt.latest_checkpoint(self.out / "checkpoints") if resume else None
        if latest is not None:
            self.load(latest)
        self.models.sync(self.step)
        self.metrics = MetricLogger(
            self.out,
            tensorboard=config.log.tensorboard,
            resume_step=self.step if latest is not None else None,
        )

    # -- the loop --------------------------------------------------------------------------------

    def train(self, until: int | None = None) -> list[dict[str, Any]]:
        """Run to step `until` (default `config.total_steps`) or the time limit, then checkpoint;
        returns the metrics of every step run."""
        config, history = self.config, []
        last = config.total_steps if until is None else min(until, config.total_steps)
        started = time.perf_counter()
        with TrainProgress(config.total_steps, self.step, enabled=config.log.progress) as bar:
            if config.log.eval_every and self.step == 0:
                self.metrics.log(0, self.evaluate())
            while self.step < last:
                metrics = self.sft_step() if self.step < config.sft.steps else self.rl_step()
                if config.log.eval_every and self.step % config.log.eval_every == 0:
                    metrics.update(self.evaluate())
                history.append({"step": self.step, **metrics})
                if self.step % config.log.every == 0 or self.step == last:
                    self.metrics.log(self.step, metrics)
                bar.update(self.step, metrics)
                out_of_time = (
                    config.time_limit_s is not None and time.perf_counter() - started > config.time_limit_s
                )
                if (config.checkpoint_every and self.step % config.checkpoint_every == 0) or out_of_time:
                    self.save()
                if out_of_time:
                    logger.info("time limit of %s s reached at step %d", config.time_limit_s, self.step)
                    break
        if not (self.out / "checkpoints" / f"step-{self.step:06d}").exists():
            self.save()
        self.metrics.close()
        return history

    def rl_step(self) -> dict[str, Any]:
        """One RL step: rollout, advantages, update, weight sync."""
        config = self.config
        started = time.perf_counter()
        result = self.runner.run(self.tasks)
        rollout_s = time.perf_counter() - started
        self.controller.observe(result.trajectories)
        groups = group_by_task(result.trajectories)
        rescued = 0
        if self.replay is not None and config.replay.rescue:
            for task_id, group in groups.items():
                groups[task_id], was_rescued = self.replay.rescue(group)
                rescued += was_rescued
        samples = samples_from_groups(groups, config.loss.estimator or "grpo")
        stats: dict[str, float] = {}
        if samples:
            samples = fill_old_logprobs(
                self.model, samples, self.settings, force=config.optim.recompute_old_logprobs
            )
            for _ in range(config.optim.updates_per_batch):
                stats = policy_update(
                    self.model, self.optimizer, samples, self.settings, self.models.reference
                )
        else:
            logger.warning("step %d: no trajectory with policy tokens; no update", self.step + 1)
        if self.replay is not None:
            self.replay.evict(current_version=self.step + 1)  # the version this step produces
        return {
            **rollout_metrics(result.trajectories, groups),
            "rollout/rescued": rescued,
            **stats,
            "perf/rollout_s": rollout_s,
            **self._advance(started, samples),
        }

    def sft_step(self) -> dict[str, Any]:
        """One supervised warm-start step on a seeded draw of the filtered trajectories."""
        started = time.perf_counter()
        if self.sft_data is None:
            self.sft_data = self.collect_sft_data()
        rng = np.random.default_rng(self.config.seed * 1_000_003 + self.step)
        size = min(self.config.sft.batch_size, len(self.sft_data))
        batch = [self.sft_data[i] for i in rng.choice(len(self.sft_data), size=size, replace=False)]
        stats = sft_update(self.model, self.optimizer, batch, self.settings)
        return {**stats, **self._advance(started, batch)}

    def _advance(self, started: float, samples: Sequence[Sample]) -> dict[str, float]:
        """After an update: the LR schedule and the step move on and the rollout weights follow;
        returns the step's optimizer and speed metrics."""
        lr = self.optimizer.param_groups[0]["lr"]  # the LR this step's update used
        self.scheduler.step()
        self.step += 1
        self.models.sync(self.step)
        step_s = time.perf_counter() - started
        tokens = sum(len(s.input_ids) for s in samples)
        return {
            "optim/lr": lr,
            "perf/step_s": step_s,
            "perf/tokens": tokens,
            "perf/tokens_per_s": tokens / step_s,
        }

    def collect_sft_data(self) -> list[Sample]:
        """Run the teacher, keep what passes `min_reward` (cached in out_dir/sft_data.jsonl)."""
        config, path = self.config, self.out / "sft_data.jsonl"
        if path.exists():
            kept = list(read_jsonl(path))
        else:
            teacher = make_policy(config.sft.teacher) if config.sft.teacher else self.models.policy
            specs = episodes_for_env(
                config.env.id, config.sft.episodes, kwargs=config.env.kwargs, seed=config.seed + 1
            )
            result = Runner(teacher, self.runner_config()).run(specs)
            order = {spec.id: i for i, spec in enumerate(specs)}  # the runner yields them as they finish
            finished = sorted(result.trajectories, key=lambda t: order.get(t.id, len(order)))
            kept = filter_trajectories(finished, config.sft.min_reward)
            logger.info("SFT data: kept %d of %d trajectories", len(kept), len(result.trajectories))
            write_jsonl(kept, path)
        if not kept:
            from gfcr.errors import ConfigError

            raise ConfigError(
                f"no trajectory reached [sft] min_reward = {config.sft.min_reward}; lower it or use a "
                "stronger teacher (e.g. teacher = 'scripted:oracle')"
            )
        chat = self.models.policy.chat  # type: ignore[attr-defined]  # hf: and vllm: policies have one
        return sft_samples(kept, chat, config.env.kwargs)

    def evaluate(self) -> dict[str, float]:
        """Mean reward of the current policy on `eval_episodes` fixed episodes."""
        config = self.config
        specs = episodes_for_env(
            config.env.id, config.log.eval_episodes, kwargs=config.env.kwargs, seed=config.seed + 2
        )
        result = Runner(self.models.policy, self.runner_config()).run(specs)
        return {
            "eval/reward_mean": result.mean_reward,
            "eval/solved": result.solved / max(result.episodes, 1),
        }

    # -- settings --------------------------------------------------------------------------------

    def runner_config(self) -> RunnerConfig:
        """How rollouts, SFT data and evaluations are run: `[rollout]`'s runner settings."""
        return self.config.rollout.runner

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

    def save(self) -> Path:
        """Write a checkpoint of everything a resumed run needs; keep the newest few."""
        directory = self.out / "checkpoints"
        state = {
            "trainable": ckpt.trainable_state(self.model),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "rng": ckpt.rng_state(),
            "controller": self.controller.state_dict(),
            "replay": self.replay.state_dict() if self.replay is not None else None,
            "config": self.config.to_dict(),
        }
        path = ckpt.save_checkpoint(directory, self.step, state, self.model, self.models.tokenizer)
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
        self.scheduler.load_state_dict(state["scheduler"])
        self.controller.load_state_dict(state["controller"])
        if self.replay is not None and state.get("replay") is not None:
            self.replay.load_state_dict(state["replay"])
        ckpt.set_rng_state(state["rng"])
        self.step = int(state["step"])
        logger.info("resumed from %s (step %d)", checkpoint, self.step)


def rollout_metrics(
    trajectories: Sequence[Trajectory], groups: dict[str, list[Trajectory]]
) -> dict[str, float]:
    """Reward, spread and length statistics of one step's rollouts."""
    rewards = np.array([t.total_reward for t in trajectories if t.status == "ok"] or [0.0])
    zero_std = [float(np.std([t.total_reward for t in g]) == 0.0) for g in groups.values()]
    lengths = [sum(t.tokens.loss_mask) for t in trajectories if t.tokens is not None]
    return {
        "rollout/reward_mean": float(rewards.mean()),
        "rollout/reward_std": float(rewards.std()),
        "rollout/frac_zero_std": float(np.mean(zero_std)) if zero_std else 0.0,
        "rollout/episodes": len(trajectories),
        "rollout/failed": sum(t.status == "failed" for t in trajectories),
        "rollout/turns_mean": float(np.mean([len(t.steps) for t in trajectories])) if trajectories else 0.0,
        "rollout/completion_tokens_mean": float(np.mean(lengths)) if lengths else 0.0,
    }


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def main(config: TrainConfig, *, resume: bool = True) -> list[dict[str, Any]]:
    """Train as `config` says (the `gfcr train` command); returns the metrics of the steps run."""
    return Trainer(config, resume=resume).train()
