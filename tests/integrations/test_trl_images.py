"""Images reach TRL's `GRPOTrainer` through gfcr's adapters: the dataset's prompts (OpenAI image parts),
`environment_factory`'s tool responses (TRL's multimodal form), and `rollout_func`'s episodes, played by
the trainer's vision-language model with its processor, with each completion's images beside its ids."""

from __future__ import annotations

import numpy as np
import pytest
from image_envs import ENV_ID, square

pytest.importorskip("trl", reason="the trl extra is not installed: pip install -e '.[trl]'")

from gfcr.core import Message  # noqa: E402
from gfcr.integrations import trl as gfcr_trl  # noqa: E402


@pytest.fixture(autouse=True)
def _quiet_trl(monkeypatch):
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")


def test_dataset_prompts_carry_images_as_openai_parts_and_text_rows_as_text_parts(monkeypatch):
    from gfcr import suites

    rows = gfcr_trl.dataset(ENV_ID)
    for row in rows:
        text, image = row["prompt"][-1]["content"]
        assert (text["type"], text["text"], image["type"]) == (
            "text",
            "What colour is the square?",
            "image_url",
        )
        assert Message.from_dict(row["prompt"][-1]).images == (square(row["task_id"][7:]),)
    # a suite mixing a text env and an env with images: every content is parts (Arrow holds one shape)
    entries = (suites.SuiteEntry("gfcr/ToolUse-v0", {"num_tasks": 5}, 1), suites.SuiteEntry(ENV_ID, {}, 1))
    monkeypatch.setitem(suites._SUITES, "mixed", lambda: suites.Suite("mixed", "text and images", entries))
    mixed = gfcr_trl.dataset("mixed")
    text_row = next(row for row in mixed if row["env_id"] == "gfcr/ToolUse-v0")
    assert [part["type"] for m in text_row["prompt"] for part in m["content"]] == ["text"] * len(
        text_row["prompt"]
    )
    assert Message.from_dict(text_row["prompt"][-1]).content.startswith("What is the code of locker")


def test_environment_factory_tools_answer_trl_with_images_and_text_tools_with_text():
    Colour = gfcr_trl.environment_factory(ENV_ID)
    env = Colour()
    assert env.reset(task_id="colour-green") == "What colour is the square?"  # the text, not the dict
    response = env.look()  # a tool whose result shows a picture
    assert [part["type"] for part in response] == ["text", "image"] and response[0][
        "text"
    ] == "The square, again:"
    assert np.array_equal(np.asarray(response[1]["image"]), np.asarray(square("green", border=True).to_pil()))
    gfcr_trl.final_answer([[{"role": "assistant", "content": "green"}]], environments=[env])
    assert env.get_reward() == 1.0
    assert env.trajectory.images == [square("green"), square("green", border=True)]
    tool_use = gfcr_trl.environment_factory("gfcr/ToolUse-v0", num_tasks=5)()
    tool_use.reset(task_id="tooluse/1")
    assert isinstance(tool_use.lookup(), str)  # text envs answer as before


@pytest.mark.timeout(600)
def test_rollout_func_plays_with_the_trainers_processor_and_gives_each_completion_its_images(
    tiny_vision_model, tmp_path
):
    from transformers import AutoProcessor
    from trl import GRPOConfig

    args = GRPOConfig(output_dir=str(tmp_path / "out"), per_device_train_batch_size=4, num_generations=2,
                      max_completion_length=16, max_steps=1, beta=0.0, save_strategy="no", report_to="none",
                      use_cpu=True, bf16=False, seed=0, disable_tqdm=True, dataloader_num_workers=0)  # fmt: skip
    rollout = gfcr_trl.rollout_func(ENV_ID)
    trainer = gfcr_trl.VisionGRPOTrainer(  # TRL's GRPOTrainer refuses images (test_trl_vision.py)
        model=str(tiny_vision_model),
        processing_class=AutoProcessor.from_pretrained(tiny_vision_model),
        args=args,
        train_dataset=gfcr_trl.dataset(ENV_ID, n=2),
        rollout_func=rollout,
        reward_funcs=gfcr_trl.env_reward,
    )
    prompts = [prompt for prompt in trainer.train_dataset["prompt"] for _ in range(2)]
    out = rollout(prompts, trainer)  # what TRL receives from a step
    assert getattr(rollout.policy, "sees_images", False)  # the VLM was given its processor
    image_token = trainer.model.config.image_token_id
    for task_id, ids, images, trajectory_id in zip(
        out["task_id"], out["prompt_ids"], out["gfcr_images"], out["trajectory_id"], strict=True
    ):
        trajectory = next(t for t in rollout.last_batch.generated if t.id == trajectory_id)
        assert images == trajectory.tokens.images and images[0] == square(task_id[7:])
        assert image_token in ids  # the prompt's placeholder run, whose pixels are images[0]
