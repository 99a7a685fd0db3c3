"""Every example config parses, and its env is made with its keywords (the GPU runs cannot run here)."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import pytest

from gfcr.trainers import TrainConfig

EXAMPLES = sorted((Path(__file__).parents[2] / "examples").glob("*.toml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_config_is_valid_and_its_env_is_made(path):
    config = TrainConfig.from_toml(path)
    env = gym.make(config.env.id, **config.env.kwargs)
    try:
        obs, info = env.reset(seed=0)
        assert obs and len(env.unwrapped.tasks) >= 1
    finally:
        env.close()
    assert config.rollout.group_size >= 2 and config.total_steps > 0


def test_examples_cover_the_cpu_demo_and_the_gpu_recipes():
    names = {p.name for p in EXAMPLES}
    assert {
        "tooluse_tiny_cpu.toml",
        "math_qwen05b_vllm.toml",
        "code_qwen05b_vllm.toml",
        "sql_qwen05b_vllm.toml",
    } <= names


def test_the_smollm2_demo_runs_one_step_on_the_real_model(smollm2, tmp_path):
    # The demo itself takes about 25 minutes (docs/trainer.md); here: its config, shrunk to one step.
    from gfcr.trainers import Trainer

    data = TrainConfig.from_toml(EXAMPLES[0].with_name("math_smollm2_cpu.toml")).to_dict()
    assert data["model"]["lora_rank"] > 0 and data["env"]["kwargs"]["answer_format"] == "plain"
    data["model"]["path"] = str(smollm2)
    data["rollout"].update(prompts_per_step=2, group_size=2, max_tokens=8)
    data["log"].update(eval_every=1, eval_episodes=2, progress=False, tensorboard=False)
    small = TrainConfig.from_dict({**data, "steps": 1, "out_dir": str(tmp_path / "run")})
    history = Trainer(small).train()
    assert [m["step"] for m in history] == [1] and "eval/reward_mean" in history[-1]
