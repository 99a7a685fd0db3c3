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
