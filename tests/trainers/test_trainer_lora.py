"""LoRA: only adapters train, with a KL to the reference; checkpoints resume exactly and load from anywhere."""

from __future__ import annotations

import json

import pytest
import torch

pytest.importorskip("peft", reason="LoRA needs peft: pip install -e '.[train]'")

from gfcr.trainers import Trainer  # noqa: E402


def test_lora_trains_only_adapters_with_a_kl_to_the_base(make_config):
    config = make_config(
        model={"lora_rank": 4, "lora_targets": ["q_proj", "v_proj"]},
        loss={"name": "grpo", "beta": 0.1},
        steps=2,
    )
    trainer = Trainer(config)
    trainable = {n for n, p in trainer.model.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in n for n in trainable)
    frozen = {n: p.detach().clone() for n, p in trainer.model.named_parameters() if not p.requires_grad}
    history = trainer.train()
    assert all(torch.equal(p, frozen[n]) for n, p in trainer.model.named_parameters() if n in frozen)
    assert history[-1]["loss/kl"] >= 0.0
    # the policy generates with the adapters: it is the very model being trained
    assert trainer.models.policy.model is trainer.model
    resumed = Trainer(config)
    resumed.begin()
    assert resumed.step == 2
    for name, p in resumed.model.named_parameters():
        if "lora_" in name:
            torch.testing.assert_close(p, dict(trainer.model.named_parameters())[name], rtol=0, atol=0)


def test_saved_adapter_names_its_base_model_by_absolute_path(make_config, tiny_model, monkeypatch):
    """Regression: the adapter stored the base model path as written, so a relative one broke
    when the checkpoint was loaded from another directory."""
    monkeypatch.chdir(tiny_model.parent)
    config = make_config(model={"path": tiny_model.name, "lora_rank": 4, "lora_targets": ["q_proj"]})
    checkpoint = Trainer(config).save()
    adapter = json.loads((checkpoint / "model" / "adapter_config.json").read_text())
    assert adapter["base_model_name_or_path"] == str(tiny_model.resolve())


def test_rl_after_a_lora_sft_run_starts_from_its_checkpoint_with_fresh_adapters(make_config):
    """Regression: a LoRA checkpoint given as `[model] path` loaded its adapter unmerged, and the RL
    run's own adapters took its place (zeros): the SFT warm start was silently lost."""
    lora = {"lora_rank": 4, "lora_targets": ["q_proj", "v_proj"]}
    sft = Trainer(make_config(model=lora))
    with torch.no_grad():  # an adapter that changes the model, as an SFT run leaves it
        for name, p in sft.model.named_parameters():
            if "lora_B" in name:
                p.normal_(0.0, 0.5)
    checkpoint = sft.save() / "model"
    ids = torch.tensor([[1, 5, 9, 14, 3]])
    with torch.no_grad():
        warm = sft.model(ids).logits
        rl = Trainer(make_config(model={**lora, "path": str(checkpoint)}))
        assert torch.allclose(rl.model(ids).logits, warm, atol=1e-4)  # the warm start, merged
    trainable = {n: p for n, p in rl.model.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in n for n in trainable)
    assert all(not p.any() for n, p in trainable.items() if "lora_B" in n)  # its own, fresh
