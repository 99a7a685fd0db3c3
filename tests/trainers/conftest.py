"""Fixtures of the trainer's tests: a tiny chat model (written once per session) and a config maker."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="the hf extra is not installed: pip install -e '.[hf,train]'")
torch.set_num_threads(1)  # a second thread mostly spin-waits on a shared 2-core machine


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    from gfcr.agents.policies.tiny_model import write_tiny_model

    return write_tiny_model(tmp_path_factory.mktemp("tiny-model"), vocab_size=400, corpus_tasks=20)


@pytest.fixture
def make_config(tiny_model, tmp_path, parity_env):
    """A small `TrainConfig` on gfcr/TestParity-v0; keyword sections override its defaults."""
    from gfcr.trainers import TrainConfig

    def make(out: str = "run", **sections):
        data = {
            "model": {"path": str(tiny_model)},
            "env": {"id": parity_env, "num_tasks": 16},
            "rollout": {"prompts_per_step": 2, "group_size": 3, "max_tokens": 6, "concurrency": 1},
            "optim": {"lr": 1e-3, "micro_batch_size": 4},
            "log": {"tensorboard": False, "progress": False},
            "steps": 2,
            "out_dir": str(tmp_path / out),
            "checkpoint_every": 0,
        }
        for key, value in sections.items():
            data[key] = {**data[key], **value} if isinstance(value, dict) and key in data else value
        return TrainConfig.from_dict(data)

    return make


@pytest.fixture
def train_toml(tiny_model, tmp_path):
    """`train_toml(steps)`: a small `gfcr train` config file on gfcr/ToolUse-v0 with the tiny model,
    training into tmp_path/run; returns its path."""

    def write(steps: int) -> Path:
        config = tmp_path / "c.toml"
        config.write_text(
            f"""steps = {steps}
out_dir = "{tmp_path / "run"}"
[model]
path = "{tiny_model}"
[env]
id = "gfcr/ToolUse-v0"
num_tasks = 8
[rollout]
prompts_per_step = 2
group_size = 2
max_tokens = 6
[log]
tensorboard = false
progress = false
"""
        )
        return config

    return write
