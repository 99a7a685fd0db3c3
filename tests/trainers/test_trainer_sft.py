"""The supervised warm start: rejection sampling, the token layout of text-only teachers, the SFT
data cache, and what RL takes over from it (the KL reference, not the optimizer's moments)."""

from __future__ import annotations

import gymnasium as gym
import pytest
import torch

from gfcr.agents import OraclePolicy, Runner, RunnerConfig, episodes_for_env
from gfcr.agents.policies.chat import load_chat_encoder
from gfcr.core import Step, Trajectory
from gfcr.envs.tooluse import LOOKUP_CALL
from gfcr.trainers import Trainer
from gfcr.trainers.batching import collate, token_logprobs
from gfcr.trainers.sft import filter_trajectories, sft_samples


def test_filter_keeps_only_trajectories_at_or_over_the_reward():
    good = Trajectory("e", "a", "", [Step("x", "", 1.0, True, False)])
    bad = Trajectory("e", "b", "", [Step("y", "", 0.0, True, False)])
    failed = Trajectory("e", "c", "", [Step("z", "", 1.0, True, False)], status="failed")
    assert filter_trajectories([good, bad, failed], 1.0) == [good]


def test_text_teacher_trajectories_get_the_runner_token_layout(tiny_model):
    """Decoded, a tokenized oracle episode is the chat template's rendering of the conversation,
    and only the assistant's own turns (with their end-of-turn token) carry loss mask 1."""
    chat = load_chat_encoder(str(tiny_model))
    result = Runner(OraclePolicy(), RunnerConfig(concurrency=2)).run(episodes_for_env("gfcr/ToolUse-v0", 2))
    for trajectory in result.trajectories:
        sample = sft_samples([trajectory], chat)[0]
        tokens = trajectory.tokens
        conversation = trajectory.messages[:-1]  # the final observation is never encoded
        tools = gym.make("gfcr/ToolUse-v0").reset(seed=0)[1]["tools"]
        rendered = chat.tokenizer.apply_chat_template(
            [m.to_openai() for m in conversation], tools=tools, tokenize=False
        )
        assert chat.decode(sample.input_ids) == rendered.removesuffix("\n")
        trained = chat.decode([t for t, m in zip(tokens.completion_ids, tokens.loss_mask, strict=True) if m])
        assert trained == f"{LOOKUP_CALL}<|im_end|>{conversation[-1].content}<|im_end|>"
        assert sum(sample.loss_mask) == sum(tokens.loss_mask) and sample.advantage == 0.0


ORACLE_SFT = {"steps": 2, "teacher": "scripted:oracle", "episodes": 8, "batch_size": 4, "min_reward": 0.0}


@pytest.mark.parametrize("lora_rank", [0, 4])
def test_kl_reference_is_the_warm_started_model(make_config, lora_rank):
    """Regression: the KL reference was the model from before the warm start (a frozen copy, or
    LoRA with its adapters off), so the KL pulled RL back to the pre-SFT model. It is the
    warm-started model, in RL steps after it and in a run resumed from a checkpoint."""
    config = make_config(
        model={"lora_rank": lora_rank, "lora_targets": ["q_proj", "v_proj"]},
        sft=ORACLE_SFT,
        loss={"name": "grpo", "beta": 0.1},
        steps=1,
    )
    trainer = Trainer(config)
    trainer.sft_data = trainer.collect_sft_data()
    batch = collate(trainer.sft_data[:3], trainer.models.pad_id)
    initial = token_logprobs(trainer.model, batch).detach()
    trainer.sft_step(), trainer.sft_step()  # the warm start
    warm = token_logprobs(trainer.model, batch).detach()
    assert not torch.allclose(warm, initial, atol=1e-4)  # SFT moved the model
    torch.testing.assert_close(trainer.models.reference(batch), warm)
    trainer.rl_step()
    torch.testing.assert_close(trainer.models.reference(batch), warm)
    trainer.save()
    resumed = Trainer(config)
    resumed.begin()  # loads the checkpoint
    torch.testing.assert_close(resumed.models.reference(batch), warm)


def test_rl_starts_with_a_fresh_optimizer(make_config):
    """Regression: RL inherited AdamW's moments from the SFT steps."""
    trainer = Trainer(make_config(sft=ORACLE_SFT, steps=1))
    trainer.sft_step()
    assert trainer.optimizer.state_dict()["state"]  # SFT's moments
    trainer.sft_step()  # the last one
    assert trainer.optimizer.state_dict()["state"] == {}


def test_sft_data_is_reused_only_for_the_settings_that_made_it(make_config):
    """Regression: out_dir/sft_data.jsonl was reused whatever the config said, even with
    --no-resume. Now a resumed run reuses it only if its settings are the same; else, and always
    with --no-resume, the teacher makes it again."""
    sft = {**ORACLE_SFT, "steps": 1}
    config = make_config(sft=sft, steps=0)
    trainer = Trainer(config)
    trainer.train()
    data = trainer.out / "sft_data.jsonl"
    lines = data.read_text().splitlines()
    assert len(lines) == 8
    data.write_text(lines[0] + "\n")  # a marker: the cache holds one trajectory now
    assert len(Trainer(config).collect_sft_data()) == 1  # same settings: reused
    assert len(Trainer(make_config(sft={**sft, "episodes": 4}, steps=0)).collect_sft_data()) == 4
    data.write_text(lines[0] + "\n")
    assert len(Trainer(config, resume=False).collect_sft_data()) == 8
