"""Config files: defaults by loss, clear errors for bad values, CLI overrides."""

from __future__ import annotations

import pytest

from gfcr.apps.model_commands import apply_overrides
from gfcr.errors import ConfigError
from gfcr.trainers import TrainConfig
from gfcr.trainers.trainer import pool_episodes

BASE = {"model": {"path": "m"}, "env": {"id": "gfcr/ToolUse-v0"}}


@pytest.mark.parametrize(
    ("name", "low", "high", "estimator"),
    [
        ("grpo", 0.2, 0.2, "grpo"),
        ("dr_grpo", 0.2, 0.2, "dr_grpo"),
        ("dapo", 0.2, 0.28, "grpo"),
        ("gspo", 3e-4, 4e-4, "grpo"),
    ],
)
def test_each_loss_gets_its_papers_defaults(name, low, high, estimator):
    loss = TrainConfig.from_dict({**BASE, "loss": {"name": name}}).loss
    assert (loss.epsilon_low, loss.epsilon_high, loss.estimator) == (low, high, estimator)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"loss": {"name": "ppo"}}, "unknown loss 'ppo'"),
        ({"rollout": {"group_size": 1}}, "group_size must be >= 2"),
        ({"optim": {"schedule": "cosin"}}, "did you mean 'cosine'"),
        ({"rollout": {"backend": "sglang"}}, "unknown rollout backend"),
        ({"modle": {}}, "did you mean 'model'"),
        ({"model": {"path": "m", "lora_rank": -1}}, "lora_rank must be >= 0"),
        (
            {"control": {"selector": "thomson"}},
            r"\[control\] unknown selector 'thomson'; did you mean 'thompson'\?",
        ),
        ({"control": {"oversample": 0.5}}, r"\[control\] oversample must be >= 1.0"),
        ({"control": {"max_round": 0}}, "did you mean 'max_rounds'"),
        ({"control": {"group_size": 4}}, r"\[control\]: unknown key 'group_size'"),  # [rollout]'s
        ({"rollout": {"selector": "greso"}}, r"\[rollout\] selector moved to \[control\] selector"),
        (
            {"dynamic_sampling": {"filter_groups": True}},
            r"\[dynamic_sampling\] moved to \[control\] dynamic_sampling",
        ),
        ({"early_stopping": {"enabled": True}}, r"\[early_stopping\] moved to \[control\] early_stopping"),
        ({"overlong_penalty": {"max_length": 0}}, r"\[overlong_penalty\] max_length must be >= 1"),
        ({"overlong_penalty": {"cache_length": -4}}, r"\[overlong_penalty\] cache_length must be >= 1"),
        (
            {"overlong_penalty": {"max_length": 100, "cache_length": 200}},
            r"cache_length must be <= max_length .* got cache_length = 200 > max_length = 100; lower cache_length",
        ),
    ],
)
def test_bad_values_are_errors_that_say_what_is_allowed(data, message):
    with pytest.raises(ConfigError, match=message):
        TrainConfig.from_dict({**BASE, **data})


def test_overlong_lengths_default_to_the_episode_budget_and_are_checked_against_it():
    from gfcr.trainers.config import OverlongPenaltyConfig

    assert OverlongPenaltyConfig(enabled=True).lengths(1000) == (1000, 200)  # DAPO's 4,096 of 20,480
    assert OverlongPenaltyConfig(max_length=300, cache_length=50).lengths(1000) == (300, 50)
    with pytest.raises(ConfigError, match="cache_length = 64 > max_length = 18"):
        OverlongPenaltyConfig(cache_length=64).lengths(18)  # max_length unset: the budget, 18


def test_missing_section_is_named():
    with pytest.raises(ConfigError, match=r"missing section \[env\]"):
        TrainConfig.from_dict({"model": {"path": "m"}})


def test_toml_round_trip_and_overrides(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(
        'steps = 3\n[model]\npath = "m"\n[env]\nid = "gfcr/ToolUse-v0"\n[optim]\nlr = 0.01\n'
        '[control]\nselector = "thompson"\ndynamic_sampling = true\noversample = 2.0\nmax_rounds = 4\n'
        "[generate.tree]\nentropy_points = 2\n"
        "[overlong_penalty]\nenabled = true\nmax_length = 512\ncache_length = 128\n"
    )
    config = TrainConfig.from_toml(path)
    assert (config.steps, config.optim.lr) == (3, 0.01)
    control, overlong = config.pipeline.control, config.pipeline.overlong_penalty
    assert (control.selector, control.dynamic_sampling, control.oversample, control.max_rounds) == (
        "thompson",
        True,
        2.0,
        4,
    )
    assert (overlong.enabled, overlong.max_length, overlong.cache_length) == (True, 512, 128)
    assert config.pipeline.generate.tree.entropy_points == 2
    defaults = TrainConfig.from_dict(BASE)
    assert not defaults.pipeline.control.dynamic_sampling and not defaults.pipeline.overlong_penalty.enabled
    data = apply_overrides(
        config.to_dict(),
        ["steps=5", "optim.lr=2e-3", "loss.name=dapo", "model.path=other", "control.max_rounds=6"],
    )
    again = TrainConfig.from_dict(data)
    assert (again.steps, again.optim.lr, again.loss.name, again.model.path) == (5, 2e-3, "dapo", "other")
    assert again.pipeline.control.max_rounds == 6
    assert TrainConfig.from_dict(config.to_dict()) == config


def test_lr_schedule_runs_sft_lr_then_warmup_then_decay(make_config):
    from gfcr.trainers import Trainer

    config = make_config(
        sft={"steps": 2, "lr": 5e-3}, optim={"lr": 1e-3, "schedule": "linear", "warmup_steps": 2}, steps=6
    )
    trainer = Trainer(config)
    factors = [trainer.lr_factor(step) for step in range(8)]
    assert factors[:2] == [5.0, 5.0]  # SFT at its own LR
    assert factors[2:4] == [0.5, 1.0]  # warmup
    assert factors[4:] == pytest.approx([1.0, 0.75, 0.5, 0.25])  # linear decay over the remaining RL steps


def test_logged_lr_is_the_one_each_step_used(make_config):
    """Regression: the LR was read after the scheduler had moved on to the next step's."""
    from gfcr.trainers import Trainer

    config = make_config(
        sft={"steps": 1, "lr": 5e-3, "teacher": "scripted:oracle", "episodes": 4, "min_reward": 0.0},
        optim={"lr": 1e-3, "schedule": "linear"},
        steps=2,
    )
    history = Trainer(config).train()
    assert [m["optim/lr"] for m in history] == pytest.approx([5e-3, 1e-3, 5e-4])


def test_rollout_is_one_flat_table_of_the_trainers_keys_and_the_runners_settings():
    from gfcr.agents import RunnerConfig, SamplingParams
    from gfcr.core.config import settings
    from gfcr.trainers.config import RolloutConfig

    table = {"group_size": 4, "max_tokens": 32, "top_p": 0.9, "max_turns": 3, "concurrency": 4}
    rollout = TrainConfig.from_dict({**BASE, "rollout": {**table, "runner_backend": "ray"}}).rollout
    assert (rollout.backend, rollout.group_size) == ("hf", 4)
    sampling = SamplingParams(max_tokens=32, top_p=0.9)
    assert rollout.runner == RunnerConfig(concurrency=4, max_turns=3, backend="ray", sampling=sampling)
    assert TrainConfig.from_dict(BASE).rollout.runner == RunnerConfig()  # one default per setting
    with pytest.raises(ConfigError, match="did you mean 'max_tokens'") as error:
        TrainConfig.from_dict({**BASE, "rollout": {"max_token": 32}})
    assert all(s.name in str(error.value) for s in settings(RolloutConfig))  # the runner's keys too
    with pytest.raises(ConfigError, match=r"\[rollout\] top_p must be in \(0, 1\]"):
        TrainConfig.from_dict({**BASE, "rollout": {"top_p": 0}})
    data = apply_overrides(TrainConfig.from_dict(BASE).to_dict(), ["rollout.max_tokens=48"])
    assert TrainConfig.from_dict(data).rollout.runner.sampling.max_tokens == 48


def test_every_trainer_setting_declares_its_help_text():
    from dataclasses import is_dataclass

    from gfcr.core.config import settings

    sections = [s.type for s in settings(TrainConfig) if is_dataclass(s.type)]
    assert len(sections) == 16  # [judge], [credit], [async] and [propose] among them
    for cls in (TrainConfig, *sections):
        assert all(s.help.strip() for s in settings(cls)), cls.__name__


def test_dr_grpo_constant_is_the_episode_token_budget(make_config):
    """Regression: without `max_episode_tokens`, Dr. GRPO divided by one turn's `max_tokens`, so a
    multi-turn episode could hold more tokens than the constant it is normalised by."""
    from gfcr.trainers import Trainer
    from gfcr.trainers.trainer import episode_token_budget

    def budget(**rollout):
        return episode_token_budget(TrainConfig.from_dict({**BASE, "rollout": {"max_tokens": 6, **rollout}}))

    assert budget() == 6 * 3  # ToolUse's own 3 turns
    assert budget(max_turns=2) == 6 * 2
    assert budget(max_turns=2, max_episode_tokens=10) == 10
    trainer = Trainer(make_config(loss={"name": "dr_grpo"}, rollout={"max_tokens": 6, "max_turns": 2}))
    assert trainer.settings.max_tokens == 12


def test_evaluation_and_sft_data_never_use_a_task_of_the_training_pool(tmp_path, tiny_model):
    from gfcr.agents import episodes_for_env
    from gfcr.trainers.trainer import Trainer

    config = TrainConfig.from_dict(
        {
            "out_dir": str(tmp_path / "run"),
            "model": {"path": str(tiny_model)},
            "env": {"id": "gfcr/ToolUse-v0", "num_tasks": 30, "kwargs": {"num_tasks": 60}},
            "log": {"eval_episodes": 40},
            "sft": {"episodes": 50},
        }
    )
    trainer = Trainer(config)
    pool = {spec.task_id for spec in pool_episodes(config, 200)}
    assert len(pool) == 30 and pool == {spec.task_id for spec in trainer.pipeline.tasks}
    held_out = {spec.task_id for spec in trainer.held_out_episodes()}
    assert len(held_out) == 30 and not pool & held_out
    with pytest.raises(ConfigError, match="none is left after skipping 60"):
        episodes_for_env("gfcr/ToolUse-v0", 4, kwargs={"num_tasks": 60}, skip=60)


def test_eval_env_kwargs_evaluate_on_kinds_never_trained_on(tmp_path, tiny_model):
    from gfcr.trainers.trainer import Trainer

    def trainer(eval_kinds: list[str]) -> Trainer:
        config = {
            "out_dir": str(tmp_path / "run"),
            "model": {"path": str(tiny_model)},
            "env": {"id": "gfcr/Shop-v0", "num_tasks": 40, "kwargs": {"kinds": ["convert", "coupon"], "max_turns": 5}},
            "log": {"eval_episodes": 48, "eval_env_kwargs": {"kinds": eval_kinds}},
        }
        return Trainer(TrainConfig.from_dict(config))

    unseen = trainer(["coupon_convert", "tax"])
    pool = {spec.task_id for spec in unseen.pipeline.tasks}
    assert {task_id.split("/")[1] for task_id in pool} == {"convert", "coupon"}
    held_out = unseen.held_out_episodes()
    assert {spec.task_id.split("/")[1] for spec in held_out} == {"coupon_convert", "tax"}
    assert len({spec.task_id for spec in held_out}) == 48  # 128 tasks of those kinds: none repeated
    assert {spec.env.kwargs["max_turns"] for spec in held_out} == {5}  # [env] kwargs kept where not overridden
    # an eval env that also holds the training kinds: the training pool's tasks are left out
    every = {spec.task_id for spec in trainer(["convert", "coupon", "tax"]).held_out_episodes()}
    assert not every & pool and "convert" in {task_id.split("/")[1] for task_id in every}


def test_held_out_questions_never_repeat_a_training_pool_question():
    # reasoning-gym draws questions with replacement: 300 draws of 200 possible one-digit sums repeat
    import gymnasium as gym

    from gfcr.agents import episodes_for_env

    easy = {"min_terms": 2, "max_terms": 2, "min_digits": 1, "max_digits": 1}
    kwargs = {"dataset": "reasoning_gym", "generators": ["chain_sum"], "size": 300, "generator_config": easy}
    tasks = gym.make("gfcr/Math-v0", **kwargs).unwrapped.tasks
    prompt = {tasks[i].id: tasks[i].prompt for i in range(len(tasks))}
    pool = [prompt[s.task_id] for s in episodes_for_env("gfcr/Math-v0", 100, kwargs=kwargs, pool=100)]
    held_out = [prompt[s.task_id] for s in episodes_for_env("gfcr/Math-v0", 64, kwargs=kwargs, skip=100)]
    assert len(set(pool)) < 100 and len(set(prompt.values())) < 300  # the generator repeats itself
    assert len(held_out) == 64 and not set(pool) & set(held_out)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_model_dtype_is_the_configured_one_whatever_the_checkpoint_stores(make_config, tiny_model, tmp_path, dtype):
    """Regression: a checkpoint saved in bf16 (as most on a hub are) trained in bf16 under the
    default `[model] dtype = "float32"`; on a CPU without bf16 instructions that is also ~45x slower."""
    import shutil

    import torch
    from transformers import AutoModelForCausalLM

    from gfcr.trainers.models import load_models

    bf16_checkpoint = tmp_path / "bf16"
    shutil.copytree(tiny_model, bf16_checkpoint)
    AutoModelForCausalLM.from_pretrained(tiny_model).to(torch.bfloat16).save_pretrained(bf16_checkpoint)
    model = load_models(make_config(model={"path": str(bf16_checkpoint), "dtype": dtype})).model
    assert {p.dtype for p in model.parameters()} == {getattr(torch, dtype)}
