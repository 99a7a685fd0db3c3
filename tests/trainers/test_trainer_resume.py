"""Checkpoint and resume: a run stopped half-way and resumed ends exactly where an unbroken run ends."""

from __future__ import annotations

import json
import logging

import pytest
import torch

from gfcr.trainers import Trainer
from gfcr.trainers.checkpoint import checkpoints


def _parameters(trainer: Trainer) -> dict[str, torch.Tensor]:
    return {name: p.detach().clone() for name, p in trainer.model.named_parameters()}


def test_resumed_run_ends_with_identical_parameters(make_config):
    """N steps in one go vs N/2, a new process-like Trainer resuming from the checkpoint, N/2 more.

    SFT then RL steps, a linear LR schedule, Thompson prompt selection (Control's posteriors and
    RNG) and a replay buffer with rescue all carry state that must survive the checkpoint.
    """
    sections = {
        "sft": {"steps": 2, "teacher": "scripted:oracle", "episodes": 8, "batch_size": 4, "min_reward": 0.0},
        "optim": {"schedule": "linear", "warmup_steps": 1},
        "control": {"selector": "thompson"},
        "replay": {"enabled": True},
        "steps": 4,
    }
    whole = Trainer(make_config("whole", **sections))
    whole.train()
    halves = Trainer(make_config("halves", **sections))
    halves.train(until=3)
    assert [p.name for p in checkpoints(halves.out / "checkpoints")][-1] == "step-000003"
    resumed = Trainer(make_config("halves", **sections))
    resumed.begin()
    assert resumed.step == 3
    resumed.train()
    expected, got = _parameters(whole), _parameters(resumed)
    assert expected.keys() == got.keys()
    for name in expected:
        assert torch.equal(expected[name], got[name]), name
    assert resumed.optimizer.param_groups[0]["lr"] == whole.optimizer.param_groups[0]["lr"]
    steps = [json.loads(line)["step"] for line in (resumed.out / "metrics.jsonl").read_text().splitlines()]
    assert steps == [1, 2, 3, 4, 5, 6]
    assert len(resumed.replay) == len(whole.replay)


def test_training_changes_parameters_and_logs_the_documented_keys(make_config):
    trainer = Trainer(make_config(steps=1))
    before = _parameters(trainer)
    history = trainer.train()
    after = _parameters(trainer)
    assert any(not torch.equal(before[n], after[n]) for n in before)
    for key in (
        "rollout/reward_mean",
        "rollout/frac_zero_std",
        "loss/policy",
        "loss/kl",
        "perf/tokens_per_s",
        "update/skipped",
    ):
        assert key in history[-1], key
    assert (trainer.out / "checkpoints" / "step-000001" / "model" / "config.json").exists()


def test_no_resume_starts_clean(make_config):
    """Regression: --no-resume left the earlier run's checkpoints and TensorBoard events in
    out_dir, so its curves overlapped the new run's."""
    config = make_config(log={"tensorboard": True}, steps=1, checkpoint_every=1)
    first = Trainer(config)
    first.train()
    events = list((first.out / "tensorboard").glob("events.out.tfevents.*"))
    assert events and checkpoints(first.out / "checkpoints")
    again = Trainer(config, resume=False)
    again.begin()
    assert again.step == 0 and not checkpoints(again.out / "checkpoints")
    again.train()
    assert not any(path.exists() for path in events)
    assert [json.loads(line)["step"] for line in (again.out / "metrics.jsonl").read_text().splitlines()] == [
        1
    ]


def test_time_limit_stop_is_loud(make_config, caplog):
    """Regression: a run cut short by `time_limit_s` looked like any other. It warns, and its
    last metrics say why it stopped."""
    trainer = Trainer(make_config(steps=3, time_limit_s=0.0))
    with caplog.at_level(logging.WARNING):
        history = trainer.train()
    assert [m["step"] for m in history] == [1]
    assert history[-1]["run/stopped_for"] == "time_limit"
    assert json.loads((trainer.out / "metrics.jsonl").read_text().splitlines()[-1])["run/stopped_for"] == (
        "time_limit"
    )
    assert any(r.levelno == logging.WARNING and "TIME LIMIT" in r.getMessage() for r in caplog.records)
    assert (trainer.out / "checkpoints" / "step-000001").exists()


@pytest.mark.parametrize(("budget", "steps", "spent"), [(10, [1, 2], 9), (7, [1], 6)])
def test_a_sample_budget_stops_the_run_quietly_with_a_held_out_evaluation(
    make_config, caplog, budget, steps, spent
):
    # 2 prompts x 3 samples = 6 episodes per step: with 10, step 2's batch is cut to the one group
    # that fits in the 4 left; with 7, the 1 left after step 1 holds no group: the run never passes it
    config = make_config(steps=5, sample_budget=budget, log={"eval_every": 10, "eval_episodes": 4})
    with caplog.at_level(logging.WARNING):
        history = Trainer(config).train()
    assert [m["step"] for m in history] == steps
    assert history[-1]["run/stopped_for"] == "sample_budget" and "eval/reward_mean" in history[-1]
    assert history[-1]["rollout/samples_total"] == spent <= budget
    assert history[-1]["rollout/groups"] == (1 if budget == 10 else 2)
    assert not any("TIME LIMIT" in r.getMessage() for r in caplog.records)
