"""The trainer's configuration: one dataclass per component, read from a TOML file.

Each field declares its help text (`gfcr.core.config.setting`, the only place it is written).
Sections of the TOML file map to the dataclasses below; unknown keys are an error that names the
known ones. `[rollout]` is one flat table: the trainer's own keys (`backend`, `prompts_per_step`,
`group_size`, `vllm_options`) and every setting of the runner it configures (`RunnerConfig`, its
`SamplingParams` included: `max_tokens`, `temperature`, `concurrency` …), declared in the runner
alone. The rollout pipeline's stages (`PipelineConfig`: `[control]`, `[generate]`, `[judge]`,
`[overlong_penalty]`, `[replay]`, `[credit]`) are declared in their modules and read the same way by TRL's
`rollout_func`, so one recipe configures both trainers.

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

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gfcr.agents import RunnerConfig
from gfcr.control import ControlConfig, OffPolicyMix
from gfcr.core import config
from gfcr.core.config import setting
from gfcr.errors import ConfigError, UnknownNameError
from gfcr.filter import JudgeConfig
from gfcr.filter.indicators import THRESHOLDS
from gfcr.filter.seed_grpo import SeedGRPO
from gfcr.generate import GenerateConfig
from gfcr.proposals import ProposeConfig
from gfcr.registry import import_modules
from gfcr.skills import SkillTrainingConfig
from gfcr.trainers.batching import ESTIMATORS
from gfcr.trainers.losses import CORRECTIONS, LOSSES

SCHEDULES = ("constant", "linear", "cosine")
BACKENDS = ("hf", "vllm", "served")
# Clip ranges by loss when not given: GRPO/Dr. GRPO 0.2; DAPO clip-higher 0.2/0.28 (Yu et al. 2025);
# GSPO's sequence ratios live much closer to 1: 3e-4/4e-4 (Zheng et al. 2025, §5.1).
DEFAULT_EPSILONS = {"grpo": (0.2, 0.2), "dr_grpo": (0.2, 0.2), "dapo": (0.2, 0.28), "gspo": (3e-4, 4e-4)}


@dataclass(frozen=True)
class ModelConfig:
    path: str = setting(
        help="A local model directory (config.json, weights, tokenizer with a chat template)."
    )
    dtype: str = setting("float32", "How the trained weights are stored: float32 | bfloat16.")
    bf16: bool = setting(True, "bf16 autocast for forward passes where the device supports it (CUDA).")
    lora_rank: int = setting(0, "> 0: train LoRA adapters of this rank (peft) instead of every weight.")
    lora_alpha: int = setting(16, "LoRA's scaling numerator (scale = lora_alpha / lora_rank).")
    lora_targets: tuple[str, ...] = setting(
        ("q_proj", "k_proj", "v_proj", "o_proj"), "Modules that get LoRA adapters."
    )
    device: str | None = setting(None, "Torch device (None: CUDA, then MPS, then CPU).")

    def __post_init__(self) -> None:
        if self.dtype not in ("float32", "bfloat16"):
            raise ConfigError(f"[model] dtype must be 'float32' or 'bfloat16', got {self.dtype!r}")
        if self.lora_rank < 0:
            raise ConfigError(f"[model] lora_rank must be >= 0 (0: full fine-tuning), got {self.lora_rank}")


@dataclass(frozen=True)
class EnvSection:
    id: str = setting(help='A registered env id, e.g. "gfcr/ToolUse-v0".')
    kwargs: dict[str, Any] = setting(default_factory=dict, help="gymnasium.make keywords.")
    num_tasks: int = setting(1000, "Tasks in the training pool (drawn in a seeded order).")
    imports: list[str] = setting(
        default_factory=list, help='Modules to import first, those that register the env, e.g. ["my_envs"].'
    )

    def __post_init__(self) -> None:
        import_modules(self.imports)  # so `id` is known wherever the config is loaded


@dataclass(frozen=True)
class RolloutConfig:
    """`[rollout]`: the trainer's keys below, and the runner's settings (`RunnerConfig`) beside them."""

    backend: str = setting(
        "hf",
        "Generation engine: hf (the trained model generates, CPU/GPU) | vllm (weights synced) | served "
        "(a gfcr serve at server_url; weights pushed).",
    )
    server_url: str | None = setting(
        None,
        "backend served: the URL of `gfcr serve MODEL --allow-weight-updates` serving [model] path, "
        "on a disk this trainer writes to (out_dir/weights).",
    )
    prompts_per_step: int = setting(8, "G: groups per optimizer step.")
    group_size: int = setting(8, "K: samples per prompt (>= 2 for group advantages).")
    vllm_options: dict[str, Any] = setting(
        default_factory=dict, help="vllm.LLM keywords (gpu_memory_utilization …)."
    )
    # The runner's settings, flat in the same table; the runner's own `backend` (local | ray) is
    # `runner_backend` here, `backend` being the generation engine's.
    runner: RunnerConfig = setting(
        default_factory=RunnerConfig, help="How the episodes are run and sampled.", flatten=True
    )

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise UnknownNameError("rollout backend", self.backend, BACKENDS)
        if (self.backend == "served") != (self.server_url is not None):
            raise ConfigError(
                "[rollout] backend = 'served' needs server_url (a gfcr serve --allow-weight-updates), and "
                f"server_url is for that backend alone; got backend = {self.backend!r}, server_url = "
                f"{self.server_url!r}"
            )
        if self.group_size < 2:
            raise ConfigError(
                f"[rollout] group_size must be >= 2 (advantages compare samples), got {self.group_size}"
            )
        if self.prompts_per_step < 1:
            raise ConfigError(f"[rollout] prompts_per_step must be >= 1, got {self.prompts_per_step}")


@dataclass(frozen=True)
class OverlongPenaltyConfig:
    """`[overlong_penalty]`: DAPO's soft overlong punishment (Yu et al. 2025, eq. 13) added to each
    episode's reward, on the policy's own tokens (`gfcr.filter.overlong_penalty`)."""

    enabled: bool = setting(False, "Add the penalty to the task reward of every episode trained on.")
    max_length: int | None = setting(
        None,
        "Policy tokens per episode at which the penalty reaches -1 (None: the episode's token budget, "
        "max_episode_tokens, else max_tokens × turns).",
    )
    cache_length: int | None = setting(
        None,
        "The penalty ramps from 0 to -1 over the last cache_length tokens before max_length "
        "(None: a fifth of max_length, as DAPO's 4,096 of 20,480).",
    )

    def __post_init__(self) -> None:
        for name in ("max_length", "cache_length"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigError(f"[overlong_penalty] {name} must be >= 1 (or unset), got {value}")
        if self.max_length is not None and self.cache_length is not None:
            check_overlong_lengths(self.max_length, self.cache_length)

    def lengths(self, budget: int) -> tuple[int, int]:
        """(max_length, cache_length), the unset ones from the episode's token budget.

        >>> OverlongPenaltyConfig(enabled=True).lengths(1000)
        (1000, 200)
        """
        max_length = self.max_length or budget
        cache_length = self.cache_length or max(1, max_length // 5)
        check_overlong_lengths(max_length, cache_length)
        return max_length, cache_length


def check_overlong_lengths(max_length: int, cache_length: int) -> None:
    if cache_length > max_length:
        raise ConfigError(
            f"[overlong_penalty] cache_length must be <= max_length (the penalty ramps over the last "
            f"cache_length tokens before max_length), got cache_length = {cache_length} > "
            f"max_length = {max_length}; lower cache_length or raise max_length"
        )


@dataclass(frozen=True)
class LossConfig:
    name: str = setting("grpo", "The loss: grpo | dr_grpo | dapo | gspo.")
    estimator: str | None = setting(
        None,
        "Advantages (the credit stage): grpo | dr_grpo | rloo per group, treerl | treerpo per tree node "
        "(None: dr_grpo for the dr_grpo loss, else grpo).",
    )
    epsilon_low: float | None = setting(None, "Lower clip range (None: the loss's default).")
    epsilon_high: float | None = setting(
        None, "Upper clip range (None: the loss's default; DAPO's clip-higher 0.28)."
    )
    beta: float = setting(
        0.0, "KL coefficient to the reference (initial) policy, k3 estimator; 0: no reference."
    )
    tis_cap: float = setting(
        2.0,
        "Truncated importance sampling's cap C: a token's weight is min(π_old/μ, C) against the "
        "policy μ that sampled it ([replay] correction = 'tis', tis_fresh).",
    )
    tis_fresh: bool = setting(
        False,
        "Truncated importance sampling on fresh samples too: the trainer recomputes π_old and weighs "
        "each token by min(π_old/μ, C), μ being the rollout engine's logprobs (vLLM, quantised serving).",
    )

    def __post_init__(self) -> None:
        if self.name not in LOSSES:
            raise UnknownNameError("loss", self.name, LOSSES)
        if self.tis_cap < 1.0:
            raise ConfigError(
                f"[loss] tis_cap must be >= 1 (a weight min(π_old/μ, C) below 1 would shrink on-policy "
                f"tokens), got {self.tis_cap}"
            )
        low, high = DEFAULT_EPSILONS[self.name]
        object.__setattr__(self, "epsilon_low", low if self.epsilon_low is None else self.epsilon_low)
        object.__setattr__(self, "epsilon_high", high if self.epsilon_high is None else self.epsilon_high)
        estimator = self.estimator or ("dr_grpo" if self.name == "dr_grpo" else "grpo")
        if estimator not in ESTIMATORS:
            raise UnknownNameError("advantage estimator", estimator, ESTIMATORS)
        object.__setattr__(self, "estimator", estimator)
        if not 0 <= self.epsilon_low < 1 or self.epsilon_high < 0 or self.beta < 0:  # type: ignore[operator]
            raise ConfigError(
                f"[loss] need 0 <= epsilon_low < 1, epsilon_high >= 0, beta >= 0; "
                f"got {self.epsilon_low}, {self.epsilon_high}, {self.beta}"
            )


@dataclass(frozen=True)
class OptimConfig:
    lr: float = setting(1e-5, "AdamW learning rate (peak, after warmup).")
    weight_decay: float = setting(0.0, "AdamW weight decay.")
    betas: tuple[float, float] = setting((0.9, 0.999), "AdamW betas.")
    schedule: str = setting("constant", "constant | linear | cosine (decay to 0 at the last RL step).")
    warmup_steps: int = setting(0, "RL steps of linear LR warmup.")
    max_grad_norm: float = setting(1.0, "Gradient clipping (0: none).")
    micro_batch_size: int = setting(8, "Sequences per forward/backward pass (gradients are accumulated).")
    updates_per_batch: int = setting(
        1, "Optimizer steps on each rollout batch (GRPO's μ; > 1 is off-policy)."
    )
    recompute_old_logprobs: bool = setting(
        False,
        "Ratio against the trainer's own logprobs, not the rollout's; logs their mismatch (mismatch/*).",
    )

    def __post_init__(self) -> None:
        if self.schedule not in SCHEDULES:
            raise UnknownNameError("lr schedule", self.schedule, SCHEDULES)
        if self.lr <= 0 or self.micro_batch_size < 1 or self.updates_per_batch < 1 or self.warmup_steps < 0:
            raise ConfigError(
                "[optim] need lr > 0, micro_batch_size >= 1, updates_per_batch >= 1, warmup_steps >= 0"
            )


@dataclass(frozen=True)
class SFTConfig:
    steps: int = setting(0, "Supervised warm-start steps before RL (0: none).")
    teacher: str | None = setting(
        None, "Policy spec that writes the data (None: the model itself), e.g. scripted:oracle."
    )
    episodes: int = setting(256, "Episodes the teacher runs; only those passing min_reward are kept.")
    min_reward: float = setting(1.0, "Rejection sampling: keep trajectories with at least this reward.")
    batch_size: int = setting(16, "Sequences per SFT step.")
    lr: float | None = setting(None, "SFT learning rate (None: [optim] lr).")

    def __post_init__(self) -> None:
        if self.steps < 0 or self.episodes < 1 or self.batch_size < 1:
            raise ConfigError("[sft] need steps >= 0, episodes >= 1, batch_size >= 1")


@dataclass(frozen=True)
class CreditSection:
    """`[credit]`: the credit stage's options over the advantages `[loss] estimator` gives."""

    seed_grpo: SeedGRPO = setting(
        default_factory=SeedGRPO, help="SEED-GRPO: damp each group's advantages by its semantic entropy."
    )


@dataclass(frozen=True)
class ReplaySection:
    enabled: bool = setting(False, "Keep rollouts in a replay buffer (out_dir/replay.db).")
    rescue: bool = setting(
        True, "AR3PO: an all-failed group gets a stored correct response (behaviour logprobs kept)."
    )
    max_staleness: int | None = setting(8, "Evict what is more than N policy versions (steps) behind.")
    mix_ratio: float = setting(
        0.0,
        "RePO/ReMix: replayed samples' share of each kept group (0: none); a group of n fresh samples "
        "gets round(n·r/(1-r)) stored ones of its prompt.",
    )
    mix_rule: str = setting(
        "correct", "Which stored samples are mixed in: correct (newest correct) | recent | diverse."
    )
    correction: str = setting(
        "recompute",
        "How replayed samples are corrected for the policy shift: recompute (AR3PO: π_old recomputed "
        "under the current policy) | tis (that, and each token weighed by min(π_old/μ, [loss] tis_cap) "
        "against its behaviour policy μ).",
    )
    skills: SkillTrainingConfig = setting(
        default_factory=SkillTrainingConfig,
        help="The run's skill library: extraction from successful episodes, usage statistics, eviction.",
    )

    def __post_init__(self) -> None:
        if self.correction not in CORRECTIONS:
            raise UnknownNameError("[replay] correction", self.correction, CORRECTIONS)
        try:
            self.mix()
        except ConfigError as e:
            raise ConfigError(f"[replay] mix_ratio, mix_rule: {e}") from e

    def mix(self) -> OffPolicyMix | None:
        """The keep stage's mix of stored samples into each group (None while mix_ratio is 0)."""
        return OffPolicyMix(self.mix_ratio, self.mix_rule) if self.mix_ratio > 0 else None


@dataclass(frozen=True)
class AsyncConfig:
    """`[async]`: rollouts and updates overlap (`gfcr.trainers.overlap`)."""

    max_staleness: int = setting(
        0,
        "How many policy versions (steps) older than the update a trained token may be: the next "
        "steps' episodes are generated while this step's update runs. 0: synchronous (rollout, then "
        "update).",
    )
    interrupt_turns: bool = setting(
        False,
        "A weight push stops the turns being generated at their next token, and the new weights sample "
        "the rest (partial rollouts; hf backend). false: a push waits for the batch being generated.",
    )
    correction: str = setting(
        "tis",
        "How stale samples are corrected: recompute (decoupled PPO: the ratio's π_old is the current "
        "policy) | tis (that, and each token weighed by min(π_old/μ, [loss] tis_cap) against the "
        "behaviour policy μ that sampled it).",
    )

    def __post_init__(self) -> None:
        if self.max_staleness < 0:
            raise ConfigError(f"[async] max_staleness must be >= 0, got {self.max_staleness}")
        if self.correction not in CORRECTIONS:
            raise UnknownNameError("[async] correction", self.correction, CORRECTIONS)
        if self.interrupt_turns and self.max_staleness == 0:
            raise ConfigError(
                "[async] interrupt_turns stops turns for weight pushes while rollouts run ahead: set "
                "max_staleness >= 1 (with 0, no turn is being generated during a push)"
            )


# [rollout] sizes every step, and the trainer's seed seeds Control: [control] leaves them out
CONTROL_FROM_ROLLOUT = ("num_prompts", "group_size", "seed")


@dataclass(frozen=True)
class PipelineConfig:
    """The rollout pipeline's stages (`gfcr.trainers.pipeline`), each declared in its module:
    a recipe's part that `gfcr train` and TRL's `rollout_func` read alike.

    >>> stages = PipelineConfig.from_dict({"control": {"selector": "greso"}, "optim": {"lr": 1e-6}})
    >>> stages.control.selector  # [optim] is the trainer's, left alone
    'greso'
    """

    control: ControlConfig = setting(
        default_factory=ControlConfig,
        help="Control: which prompts (choose), how many samples (allocate), when to stop or refill (decide).",
        exclude=CONTROL_FROM_ROLLOUT,
    )
    generate: GenerateConfig = setting(
        default_factory=GenerateConfig, help="Generate: trees (branches inside turns) and guidance."
    )
    judge: JudgeConfig = setting(
        default_factory=JudgeConfig,
        help="Filter's judge stage: the reward the optimizer sees (verifier weight, gates, terms).",
    )
    overlong_penalty: OverlongPenaltyConfig = setting(
        default_factory=OverlongPenaltyConfig, help="Filter's judge stage: DAPO's overlong reward shaping."
    )
    replay: ReplaySection = setting(default_factory=ReplaySection, help="Replay's keep stage: the buffer.")
    credit: CreditSection = setting(
        default_factory=CreditSection, help="Filter's credit stage: options over the advantages."
    )
    propose: ProposeConfig = setting(
        default_factory=ProposeConfig,
        help="Tasks the policy proposes, verified by execution, solved and trained on (Absolute Zero).",
    )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PipelineConfig:
        """The stages from a recipe's tables; the trainer-only ones ([model], [optim] …) are left alone."""
        return config.from_dict(cls, {key: data[key] for key in PIPELINE_SECTIONS if key in data})

    @classmethod
    def from_toml(cls, path: str | Path) -> PipelineConfig:
        """The stages of a recipe file (e.g. examples/methods/dapo.toml)."""
        return cls.from_dict(read_toml(path))


PIPELINE_SECTIONS = ("control", "generate", "judge", "overlong_penalty", "replay", "credit", "propose")
MOVED = {  # (section, key or None for all of it) -> where it is now
    ("rollout", "selector"): "[control] selector",
    ("dynamic_sampling", None): "[control] dynamic_sampling = true (filter_groups), oversample, max_rounds",
    ("early_stopping", None): "[control] early_stopping = true (enabled), wave, confidence",
}


@dataclass(frozen=True)
class DiagnoseConfig:
    """`[diagnose]`: the pathology indicators logged each RL step (`diagnose/*`, see docs/diagnose.md)
    and the thresholds at which the trainer warns, once per pathology until it clears. The defaults
    are the "medium" severity of `gfcr diagnose` (`gfcr.filter.indicators.THRESHOLDS`)."""

    warn: bool = setting(True, "Log a warning when an indicator crosses its threshold.")
    zero_variance_share: float = setting(
        THRESHOLDS["zero_variance_share"][1], "Share of trained groups whose rewards are all equal."
    )
    wasted_token_share: float = setting(
        THRESHOLDS["wasted_token_share"][1], "Share of generated tokens on groups with no reward spread."
    )
    rewarded_incorrect_share: float = setting(
        THRESHOLDS["rewarded_incorrect_share"][1],
        "Share of rewarded episodes the correctness signal rejects.",
    )
    truncated_share: float = setting(
        THRESHOLDS["truncated_share"][1], "Share of episodes cut off by a limit."
    )
    failed_share: float = setting(
        THRESHOLDS["failed_share"][1], "Share of episodes failed by infrastructure."
    )
    replay_lag: float = setting(THRESHOLDS["replay_lag"][1], "Mean policy-version lag of replayed samples.")
    shaping_only_share: float = setting(
        THRESHOLDS["shaping_only_share"][1],
        "Share of trained groups whose reward spread is length shaping alone (the outcomes all equal).",
    )
    prm_unscored_share: float = setting(
        THRESHOLDS["prm_unscored_share"][1],
        "Share of the steps (or lines) a PRM (a model as [judge.process] scorer) left unscored.",
    )


@dataclass(frozen=True)
class LogConfig:
    every: int = setting(1, "Log metrics every N steps.")
    tensorboard: bool = setting(True, "Also write TensorBoard events (out_dir/tensorboard).")
    progress: bool = setting(True, "A rich progress display.")
    eval_every: int = setting(
        0, "Evaluate the policy every N steps (and before the first) on fixed episodes (0: never)."
    )
    eval_episodes: int = setting(64, "Episodes per evaluation.")
    eval_env_kwargs: dict[str, Any] = setting(
        default_factory=dict,
        help="gymnasium.make keywords of the evaluation's env, over [env] kwargs (e.g. task kinds never "
        "trained on); the training pool's tasks are left out. Empty: held-out tasks of the training env.",
    )


@dataclass(frozen=True)
class TrainConfig:
    model: ModelConfig = setting(help="The trained model.")
    env: EnvSection = setting(help="The training env.")
    rollout: RolloutConfig = setting(default_factory=RolloutConfig, help="Rollouts: Control and the runner.")
    loss: LossConfig = setting(default_factory=LossConfig, help="The policy loss.")
    optim: OptimConfig = setting(default_factory=OptimConfig, help="The optimizer.")
    sft: SFTConfig = setting(default_factory=SFTConfig, help="The supervised warm start.")
    pipeline: PipelineConfig = setting(
        default_factory=PipelineConfig, help="The rollout pipeline's stages.", flatten=True
    )
    async_: AsyncConfig = setting(
        default_factory=AsyncConfig, help="Asynchronous training: rollouts overlap updates."
    )
    log: LogConfig = setting(default_factory=LogConfig, help="Metrics, progress and evaluation.")
    diagnose: DiagnoseConfig = setting(
        default_factory=DiagnoseConfig, help="Pathology indicators and their warning thresholds."
    )
    steps: int = setting(100, "RL optimizer steps (after the SFT steps).")
    seed: int = setting(0, "Seed of the task order, sampling, Control and the weights' updates.")
    out_dir: str = setting("runs/train", "Logs, checkpoints, replay buffer.")
    checkpoint_every: int = setting(10, "Steps between checkpoints (0: only at the end).")
    keep_checkpoints: int = setting(2, "Newest checkpoints kept on disk.")
    threads: int | None = setting(None, "Torch CPU threads (None: torch's default).")
    time_limit_s: float | None = setting(None, "Stop (with a checkpoint) after this much wall time.")
    sample_budget: int | None = setting(
        None,
        "Stop (with a checkpoint) once RL has generated this many episodes, dropped ones included, "
        "or what is left cannot hold one group: an equal budget when comparing settings (dynamic "
        "sampling spends more per step). A step generates no more than what is left (its rounds "
        "are cut to the groups that fit; a tree's group costs its roots' whole trees); [async] "
        "batches made ahead are not cut.",
    )

    def __post_init__(self) -> None:
        if self.steps < 0 or self.checkpoint_every < 0 or self.keep_checkpoints < 1:
            raise ConfigError("need steps >= 0, checkpoint_every >= 0, keep_checkpoints >= 1")
        if self.sample_budget is not None and self.sample_budget < 1:
            raise ConfigError(f"sample_budget must be >= 1 (or unset), got {self.sample_budget}")
        if self.async_.interrupt_turns and self.rollout.backend != "hf":
            raise ConfigError(
                f"[async] interrupt_turns needs [rollout] backend = 'hf' (its generation stops for a push); "
                f"the {self.rollout.backend!r} backend finishes each batch first: set interrupt_turns = false"
            )
        control = self.pipeline.control
        if control.early_stopping and control.wave > self.rollout.group_size:
            raise ConfigError(
                f"[control] wave must be <= [rollout] group_size ({self.rollout.group_size}), "
                f"got {control.wave}"
            )

    @property
    def total_steps(self) -> int:
        """SFT steps, then RL steps: the step counter runs over both."""
        return self.sft.steps + self.steps

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        """Build from nested dicts (a parsed TOML file); relative paths stay as written. Keys of
        earlier versions that moved are errors that name their new place."""
        for (section, key), moved in MOVED.items():
            if section in data and (key is None or key in (data[section] or {})):
                old = f"[{section}]" + (f" {key}" if key else "")
                raise ConfigError(f"{old} moved to {moved}: the rollout pipeline's Control stage")
        return config.from_dict(cls, data)

    @classmethod
    def from_toml(cls, path: str | Path) -> TrainConfig:
        """Read a TOML config file (see examples/ and examples/methods/)."""
        return cls.from_dict(read_toml(path))

    def to_dict(self) -> dict[str, Any]:
        """The config as the nested dicts `from_dict` reads (`[rollout]` flat, as in the file)."""
        return config.to_dict(self)


def read_toml(path: str | Path) -> dict[str, Any]:
    """A TOML file's tables, with errors that name the file."""
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError as e:
        raise ConfigError(f"config file {str(path)!r} not found") from e
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML: {e}") from e
