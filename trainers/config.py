"""The trainer's configuration: one dataclass per component, read from a TOML file.

Each field's comment is its help text (the only place it is written). Sections of the TOML file
map to the dataclasses below; unknown keys are an error that names the known ones.

>>> cfg = TrainConfig.from_dict({"model": {"path": "runs/tiny"}, "env": {"id": "gfcr/ToolUse-v0"},
...                              "loss": {"name": "dapo"}})
>>> cfg.loss.epsilon_high, cfg.steps
(0.28, 100)
>>> TrainConfig.from_dict({"model": {"path": "m"}, "env": {"id": "e"}, "loss": {"nmae": "grpo"}})
Traceback (most recent call last):
...
gfcr.errors.ConfigError: [loss]: unknown key 'nmae'; did you mean 'name'? Known: beta, ...
"""

from __future__ import annotations

import difflib
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from gfcr.errors import ConfigError, UnknownNameError
from gfcr.filter import ADVANTAGE_ESTIMATORS
from gfcr.trainers.losses import LOSSES

SCHEDULES = ("constant", "linear", "cosine")
BACKENDS = ("hf", "vllm")
# Clip ranges by loss when not given: GRPO/Dr. GRPO 0.2; DAPO clip-higher 0.2/0.28 (Yu et al. 2025);
# GSPO's sequence ratios live much closer to 1: 3e-4/4e-4 (Zheng et al. 2025, §5.1).
DEFAULT_EPSILONS = {"grpo": (0.2, 0.2), "dr_grpo": (0.2, 0.2), "dapo": (0.2, 0.28), "gspo": (3e-4, 4e-4)}


@dataclass(frozen=True)
class ModelConfig:
    path: str  # a local model directory (config.json, weights, tokenizer with a chat template)
    dtype: str = "float32"  # how the trained weights are stored: float32 | bfloat16
    bf16: bool = True  # bf16 autocast for forward passes where the device supports it (CUDA with bf16)
    lora_rank: int = 0  # > 0: train LoRA adapters of this rank (peft) instead of every weight
    lora_alpha: int = 16
    lora_targets: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj")
    device: str | None = None  # None: CUDA, then MPS, then CPU

    def __post_init__(self) -> None:
        if self.dtype not in ("float32", "bfloat16"):
            raise ConfigError(f"[model] dtype must be 'float32' or 'bfloat16', got {self.dtype!r}")
        if self.lora_rank < 0:
            raise ConfigError(f"[model] lora_rank must be >= 0 (0: full fine-tuning), got {self.lora_rank}")


@dataclass(frozen=True)
class EnvSection:
    id: str  # a registered env id, e.g. "gfcr/ToolUse-v0"
    kwargs: dict[str, Any] = field(default_factory=dict)  # gymnasium.make keywords
    num_tasks: int = 1000  # tasks in the training pool (drawn in a seeded order)


@dataclass(frozen=True)
class RolloutConfig:
    backend: str = "hf"  # hf (the trained model generates, CPU/GPU) | vllm (a vLLM engine, weights synced)
    prompts_per_step: int = 8  # G: groups per optimizer step
    group_size: int = 8  # K: samples per prompt (>= 2 for group advantages)
    max_tokens: int = 64  # completion tokens per policy turn
    max_episode_tokens: int | None = None  # completion tokens per episode (Dr. GRPO's constant if set)
    max_turns: int | None = None  # policy turns per episode (None: the env's limit)
    temperature: float = 1.0  # 1.0 keeps rollout logprobs (raw logits) equal to the sampling policy's
    top_p: float = 1.0
    concurrency: int = 64  # episodes in flight at once
    selector: str = "uniform"  # Control's prompt selector: uniform | greso | vcrl | thompson
    vllm_options: dict[str, Any] = field(default_factory=dict)  # vllm.LLM keywords (gpu_memory_utilization …)

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise UnknownNameError("rollout backend", self.backend, BACKENDS)
        if self.group_size < 2:
            raise ConfigError(
                f"[rollout] group_size must be >= 2 (advantages compare samples), got {self.group_size}"
            )
        if self.prompts_per_step < 1 or self.max_tokens < 1 or self.concurrency < 1:
            raise ConfigError("[rollout] prompts_per_step, max_tokens and concurrency must be >= 1")


@dataclass(frozen=True)
class LossConfig:
    name: str = "grpo"  # grpo | dr_grpo | dapo | gspo
    estimator: str | None = None  # advantages: grpo | dr_grpo | rloo (None: dr_grpo for dr_grpo, else grpo)
    epsilon_low: float | None = None  # lower clip range (None: the loss's default)
    epsilon_high: float | None = None  # upper clip range (None: the loss's default; DAPO's clip-higher 0.28)
    beta: float = 0.0  # KL coefficient to the reference (initial) policy, k3 estimator; 0: no reference

    def __post_init__(self) -> None:
        if self.name not in LOSSES:
            raise UnknownNameError("loss", self.name, LOSSES)
        low, high = DEFAULT_EPSILONS[self.name]
        object.__setattr__(self, "epsilon_low", low if self.epsilon_low is None else self.epsilon_low)
        object.__setattr__(self, "epsilon_high", high if self.epsilon_high is None else self.epsilon_high)
        estimator = self.estimator or ("dr_grpo" if self.name == "dr_grpo" else "grpo")
        if estimator not in ADVANTAGE_ESTIMATORS:
            raise UnknownNameError("advantage estimator", estimator, ADVANTAGE_ESTIMATORS)
        object.__setattr__(self, "estimator", estimator)
        if not 0 <= self.epsilon_low < 1 or self.epsilon_high < 0 or self.beta < 0:  # type: ignore[operator]
            raise ConfigError(
                f"[loss] need 0 <= epsilon_low < 1, epsilon_high >= 0, beta >= 0; "
                f"got {self.epsilon_low}, {self.epsilon_high}, {self.beta}"
            )


@dataclass(frozen=True)
class OptimConfig:
    lr: float = 1e-5  # AdamW learning rate (peak, after warmup)
    weight_decay: float = 0.0
    betas: tuple[float, float] = (0.9, 0.999)
    schedule: str = "constant"  # constant | linear | cosine (decay to 0 at the last RL step)
    warmup_steps: int = 0
    max_grad_norm: float = 1.0  # gradient clipping (0: none)
    micro_batch_size: int = 8  # sequences per forward/backward pass (gradients are accumulated)
    updates_per_batch: int = 1  # optimizer steps on each rollout batch (GRPO's μ; > 1 is off-policy)
    recompute_old_logprobs: bool = False  # ratio against the trainer's own logprobs, not the rollout's

    def __post_init__(self) -> None:
        if self.schedule not in SCHEDULES:
            raise UnknownNameError("lr schedule", self.schedule, SCHEDULES)
        if self.lr <= 0 or self.micro_batch_size < 1 or self.updates_per_batch < 1 or self.warmup_steps < 0:
            raise ConfigError(
                "[optim] need lr > 0, micro_batch_size >= 1, updates_per_batch >= 1, warmup_steps >= 0"
            )


@dataclass(frozen=True)
class SFTConfig:
    steps: int = 0  # supervised warm-start steps before RL (0: none)
    teacher: str | None = (
        None  # policy spec that writes the data (None: the model itself), e.g. scripted:oracle
    )
    episodes: int = 256  # episodes the teacher runs; only those passing `min_reward` are kept
    min_reward: float = 1.0  # rejection sampling: keep trajectories with at least this reward
    batch_size: int = 16  # sequences per SFT step
    lr: float | None = None  # None: [optim] lr

    def __post_init__(self) -> None:
        if self.steps < 0 or self.episodes < 1 or self.batch_size < 1:
            raise ConfigError("[sft] need steps >= 0, episodes >= 1, batch_size >= 1")


@dataclass(frozen=True)
class ReplaySection:
    enabled: bool = False  # keep rollouts in a replay buffer (out_dir/replay.db)
    rescue: bool = True  # AR3PO: an all-failed group gets a stored correct response (old logprobs kept)
    max_staleness: int | None = 8  # evict what is more than N policy versions (steps) behind


@dataclass(frozen=True)
class LogConfig:
    every: int = 1  # log metrics every N steps
    tensorboard: bool = True  # also write TensorBoard events (out_dir/tensorboard)
    progress: bool = True  # a rich progress display
    eval_every: int = (
        0  # evaluate the policy every N steps (and before the first) on fixed episodes (0: never)
    )
    eval_episodes: int = 64


@dataclass(frozen=True)
class TrainConfig:
    model: ModelConfig
    env: EnvSection
    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    loss: LossConfig = field(default_factory=LossConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    sft: SFTConfig = field(default_factory=SFTConfig)
    replay: ReplaySection = field(default_factory=ReplaySection)
    log: LogConfig = field(default_factory=LogConfig)
    steps: int = 100  # RL optimizer steps (after the SFT steps)
    seed: int = 0
    out_dir: str = "runs/train"  # logs, checkpoints, replay buffer
    checkpoint_every: int = 10  # steps between checkpoints (0: only at the end)
    keep_checkpoints: int = 2  # newest checkpoints kept on disk
    threads: int | None = None  # torch CPU threads (None: torch's default)
    time_limit_s: float | None = None  # stop (with a checkpoint) after this much wall time

    def __post_init__(self) -> None:
        if self.steps < 0 or self.checkpoint_every < 0 or self.keep_checkpoints < 1:
            raise ConfigError("need steps >= 0, checkpoint_every >= 0, keep_checkpoints >= 1")

    @property
    def total_steps(self) -> int:
        """SFT steps, then RL steps: the step counter runs over both."""
        return self.sft.steps + self.steps

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        """Build from nested dicts (a parsed TOML file); relative paths stay as written."""
        return _build(cls, data, "top level")

    @classmethod
    def from_toml(cls, path: str | Path) -> TrainConfig:
        """Read a TOML config file (see examples/)."""
        try:
            with open(path, "rb") as f:
                return cls.from_dict(tomllib.load(f))
        except FileNotFoundError as e:
            raise ConfigError(f"config file {str(path)!r} not found") from e
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"{path}: not valid TOML: {e}") from e

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        return asdict(self)


def _build(cls: type, data: dict[str, Any], where: str) -> Any:
    """A dataclass from a dict, recursing into section fields; clear errors on bad keys."""
    if not isinstance(data, dict):
        raise ConfigError(f"[{where}] must be a table, got {type(data).__name__}")
    known = {f.name: f for f in fields(cls)}
    values: dict[str, Any] = {}
    for key, value in data.items():
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ConfigError(f"[{where}]: unknown key {key!r}{hint} Known: {', '.join(sorted(known))}")
        section = SECTIONS.get(key) if cls is TrainConfig else None
        if section is not None:
            value = _build(section, value, key)
        elif isinstance(value, list) and isinstance(_default(known[key]), tuple):
            value = tuple(value)
        values[key] = value
    if cls is TrainConfig:
        for name in ("model", "env"):
            if name not in values:
                raise ConfigError(f"[{where}]: missing section [{name}]")
    try:
        return cls(**values)
    except TypeError as e:
        raise ConfigError(f"[{where}]: {e}") from e


def _default(f: Any) -> Any:
    from dataclasses import MISSING

    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:
        return f.default_factory()
    return None


SECTIONS: dict[str, type] = {
    "model": ModelConfig,
    "env": EnvSection,
    "rollout": RolloutConfig,
    "loss": LossConfig,
    "optim": OptimConfig,
    "sft": SFTConfig,
    "replay": ReplaySection,
    "log": LogConfig,
}
