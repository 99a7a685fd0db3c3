"""Pixels reach the loss: a vision-language model's samples train on the images their ids show."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from image_envs import square

from gfcr.agents.policies.hf import HFPolicy
from gfcr.core import Message, Request, SamplingParams, TokenData, Trajectory
from gfcr.errors import DataError
from gfcr.trainers.batching import collate, sample_from_trajectory
from gfcr.trainers.config import LossConfig
from gfcr.trainers.update import UpdateSettings, accumulate_gradients, recompute_logprobs

QUESTION = "What colour is the object?"


def _episode(policy: HFPolicy, colour: str, seed: int) -> Trajectory:
    """One sampled answer about an image, with the token data the runner would keep."""
    messages = (Message("user", [QUESTION, square(colour)]),)
    completion = policy.generate([Request(messages, sampling=SamplingParams(max_tokens=8, seed=seed))])[0]
    assert completion.prompt_ids is not None and completion.completion_ids is not None
    n = len(completion.completion_ids)
    tokens = TokenData(
        list(completion.prompt_ids),
        list(completion.completion_ids),
        [1] * n,
        list(completion.logprobs or ()),
        images=list(messages[0].images),
    )
    return Trajectory("gfcr/Vision-v0", f"t-{colour}", QUESTION, tokens=tokens, id=f"{colour}-{seed}")


def _settings(policy: HFPolicy, micro_batch_size: int = 2) -> UpdateSettings:
    return UpdateSettings(
        LossConfig(), micro_batch_size=micro_batch_size, pad_id=policy.pad_id, pixels=policy.pixel_inputs
    )


def test_the_trainer_recomputes_the_sampler_logprobs_on_the_same_images(vlm):
    colours = ["red", "blue", "green", "blue", "red"]
    samples = [sample_from_trajectory(_episode(vlm, c, seed), 1.0) for seed, c in enumerate(colours)]
    recomputed = recompute_logprobs(vlm.model, samples, _settings(vlm))  # micro-batches mix images
    for sample, logprobs in zip(samples, recomputed, strict=True):
        sampled = [lp for lp, m in zip(sample.old_logprobs, sample.loss_mask, strict=True) if m]
        trained = [lp for lp, m in zip(logprobs, sample.loss_mask, strict=True) if m]
        assert trained == pytest.approx(sampled, abs=1e-4)


def _gradient(policy: HFPolicy, sample) -> tuple[float, dict[str, torch.Tensor]]:
    """The loss of `sample` and its gradient, by parameter name."""
    policy.model.zero_grad(set_to_none=True)
    stats = accumulate_gradients(policy.model, [sample], _settings(policy))
    grads = {n: p.grad.clone() for n, p in policy.model.named_parameters() if p.grad is not None}
    policy.model.zero_grad(set_to_none=True)
    return stats["loss/total"], grads


def test_changing_only_the_image_changes_the_loss_and_the_gradient(vlm):
    trajectory = _episode(vlm, "red", seed=3)
    sample = sample_from_trajectory(trajectory, 1.0)
    recoloured = dataclasses.replace(sample, images=(square("blue"),))  # same ids, logprobs, advantages
    loss, grads = _gradient(vlm, sample)
    loss_blue, grads_blue = _gradient(vlm, recoloured)
    same_loss, same_grads = _gradient(vlm, sample)
    assert loss != loss_blue
    assert any(not torch.allclose(grads[name], grads_blue[name]) for name in grads)
    assert loss == same_loss and all(torch.equal(grads[name], same_grads[name]) for name in grads)
    tower = [name for name in grads if "vision_tower" in name]  # the loss trains the vision tower too
    assert tower and all(grads[name].abs().sum() > 0 for name in tower)


def test_samples_with_images_need_the_model_processor():
    tokens = TokenData([1, 2], [3], [1], [0.0], images=[square("red")])
    sample = sample_from_trajectory(Trajectory("e", "t", "?", tokens=tokens), 1.0)
    with pytest.raises(DataError, match="image processor"):
        collate([sample], pad_id=0)


def test_gfcr_train_warm_starts_and_trains_a_vision_model_on_vision_v0_with_lora(tiny_vision_model, tmp_path):
    """The demo's path, two steps: the oracle's answers tokenized with their pictures for the SFT step,
    a rollout with images and an update for the RL step; LoRA adapters of the language model and the
    vision tower move, nothing else; the checkpoint saves the processor."""
    pytest.importorskip("peft", reason="LoRA needs peft: pip install -e '.[train]'")
    from gfcr.trainers import TrainConfig, Trainer

    config = TrainConfig.from_dict(
        {
            "model": {"path": str(tiny_vision_model), "lora_rank": 4, "lora_targets": ["q_proj", "v_proj"]},
            "env": {
                "id": "gfcr/Vision-v0",
                "kwargs": {"kinds": "attribute", "levels": [1], "tools": []},
                "num_tasks": 32,
            },
            "rollout": {"prompts_per_step": 2, "group_size": 4, "max_tokens": 8, "temperature": 1.0},
            "optim": {"lr": 1e-2, "micro_batch_size": 4},
            "sft": {"steps": 1, "teacher": "scripted:oracle", "episodes": 8, "batch_size": 8},
            "log": {"tensorboard": False, "progress": False},
            "steps": 1,
            "seed": 0,
            "out_dir": str(tmp_path / "run"),
            "checkpoint_every": 0,
        }
    )
    trainer = Trainer(config)
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.sft_step()
    assert all(s.images for s in trainer.sft_data or ())  # the oracle's answers, with their pictures
    trainer.begin_rl()
    trainer.rl_step()
    rollout = trainer.last_rollout
    assert rollout is not None and all(t.tokens is not None and t.tokens.images for t in rollout.generated)
    moved = {n for n, p in trainer.model.named_parameters() if not torch.equal(p, before[n])}
    assert moved and all("lora_" in n for n in moved)
    assert any("vision_tower" in n for n in moved) and any("language_model" in n for n in moved)
    checkpoint = trainer.save()
    assert (checkpoint / "model" / "processor_config.json").exists()
