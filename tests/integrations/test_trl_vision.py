"""A vision-language model trains on gfcr's image episodes under TRL: `VisionGRPOTrainer` gives every
forward pass TRL makes (the loss's, old and reference logprobs) the pixels of each row's own images.

Real TRL steps of the tiny LLaVA (`gfcr tiny-model --vision`) on a suite that mixes test/Colour-v0
(two pictures an episode: the prompt's, and the one shown after a wrong answer), gfcr/Vision-v0
(one) and gfcr/ToolUse-v0 (none), so the rows of a batch hold 0, 1 or 2 images each.
"""

from __future__ import annotations

import pytest
from image_envs import ENV_ID, square
from PIL import ImageOps

torch = pytest.importorskip("torch")
pytest.importorskip("trl", reason="the trl extra is not installed: pip install -e '.[trl]'")

from test_trl import _quiet_trl  # noqa: E402, F401  (autouse fixture)
from test_trl_trees import row_trajectories  # noqa: E402

from gfcr import suites  # noqa: E402
from gfcr.agents.policies.vision import VisionChat  # noqa: E402
from gfcr.agents.runner import RunnerConfig  # noqa: E402
from gfcr.core import Image, SamplingParams  # noqa: E402
from gfcr.errors import ConfigError  # noqa: E402
from gfcr.integrations import trl as gfcr_trl  # noqa: E402
from gfcr.trainers.config import PipelineConfig  # noqa: E402

MIXED = "test-images-and-text"
ENTRIES = (
    suites.SuiteEntry(ENV_ID, {}, num_tasks=2),
    suites.SuiteEntry("gfcr/Vision-v0", {"kinds": "attribute", "levels": [1], "tools": []}, num_tasks=2),
    suites.SuiteEntry("gfcr/ToolUse-v0", {"num_tasks": 5}, num_tasks=2),
)
# turns of at most 4 tokens: a random model's first answer is wrong, so every Colour episode is
# shown its second picture within the episode's budget
RUNNER = RunnerConfig(
    concurrency=12, sampling=SamplingParams(max_tokens=4, temperature=1.0), max_episode_tokens=64
)


def token_sum(completion_ids: list[list[int]], **kwargs: object) -> list[float]:
    """A reward that differs between any two completions (almost surely): every group has a spread,
    so the policy gradient is not zero."""
    return [float(sum(ids)) for ids in completion_ids]


def vision_trainer(
    model, tmp_path, env: str, trainer_class=None, rollout=None, reward=None, peft_config=None, **config
):
    """A `VisionGRPOTrainer` (or `trainer_class`) of the tiny VLM with its processor on `env`'s
    prompts; `config`: GRPOConfig's settings."""
    from transformers import AutoProcessor
    from trl import GRPOConfig

    settings = dict(per_device_train_batch_size=4, num_generations=2, max_completion_length=64, max_steps=1,
                    beta=0.0, logging_steps=1, save_strategy="no", report_to="none", use_cpu=True, bf16=False,
                    seed=0, disable_tqdm=True, dataloader_num_workers=0)  # fmt: skip
    return (trainer_class or gfcr_trl.VisionGRPOTrainer)(
        model=str(model),
        processing_class=AutoProcessor.from_pretrained(model),
        args=GRPOConfig(output_dir=str(tmp_path / "out"), **settings | config),
        train_dataset=gfcr_trl.dataset(env, n=2) if env == ENV_ID else gfcr_trl.dataset(env),
        rollout_func=rollout or gfcr_trl.rollout_func(env, runner_config=RUNNER),
        reward_funcs=reward or gfcr_trl.env_reward,
        peft_config=peft_config,
    )


def recording(base=None):
    """`base` (VisionGRPOTrainer) keeping what reaches TRL's loss: its inputs and the logprobs its
    forward pass gives the completions."""

    class Recording(base or gfcr_trl.VisionGRPOTrainer):
        inputs: list = []
        loss_logps: list = []

        def _get_per_token_logps_and_entropies(self, *args, **kwargs):
            out = super()._get_per_token_logps_and_entropies(*args, **kwargs)
            if kwargs.get("compute_entropy"):  # the loss's own call (`_compute_loss`)
                self.loss_logps.append(out[0].detach())
            return out

        def _compute_loss(self, model, inputs):
            self.inputs.append(inputs)
            return super()._compute_loss(model, inputs)

    return Recording


@pytest.fixture(scope="module")
def trained(tiny_vision_model, tmp_path_factory):
    """One generation of 6 prompts x 2 episodes of the mixed suite trained in two optimizer steps
    (steps_per_generation 2: TRL shuffles the rows and splits them in two), so old logprobs are
    scored while the batch is built; beta > 0: reference logprobs too. Learning rate 0: every forward
    pass of both steps is the sampler's model."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
        patch.setitem(suites._SUITES, MIXED, lambda: suites.Suite(MIXED, "images and text", ENTRIES))
        rollout = gfcr_trl.rollout_func(MIXED, runner_config=RUNNER)
        trainer = vision_trainer(
            tiny_vision_model, tmp_path_factory.mktemp("trl-vision"), MIXED, recording(), rollout,
            per_device_train_batch_size=6, steps_per_generation=2, max_steps=2, beta=0.04, learning_rate=0.0,
        )  # fmt: skip
        trainer.train()
    return trainer, rollout


def _pixels(trainer, images: list[Image]) -> torch.Tensor:
    return VisionChat(trainer.processing_class).pixel_inputs(images)["pixel_values"]


def test_trls_loss_old_and_reference_logprobs_are_the_samplers_on_each_rows_own_images(trained):
    trainer, rollout = trained
    counts = []
    for inputs, loss_logps in zip(trainer.inputs, trainer.loss_logps, strict=True):
        mask = inputs["completion_mask"] * inputs["tool_mask"]  # the policy's own tokens
        sampled = inputs["sampling_per_token_logps"] * mask
        for scored in (loss_logps, inputs["old_per_token_logps"], inputs["ref_per_token_logps"]):
            torch.testing.assert_close(scored * mask, sampled, atol=1e-4, rtol=0)
        rows = row_trajectories(rollout, inputs, rollout.last_batch.generated)  # TRL shuffled the rows
        assert inputs["num_images"] == [len(t.tokens.images) for t in rows]
        pixels = torch.split(inputs["pixel_values"], inputs["num_images"])
        for row, trajectory in zip(pixels, rows, strict=True):
            if trajectory.tokens.images:
                torch.testing.assert_close(row, _pixels(trainer, trajectory.tokens.images), atol=0, rtol=0)
        counts += inputs["num_images"]
    assert len(counts) == 12 and set(counts) == {0, 1, 2}  # rows of text, one and two pictures


def test_changing_only_the_images_changes_trls_gradient(trained):
    trainer, rollout = trained
    inputs = trainer.inputs[0]
    rows = row_trajectories(rollout, inputs, rollout.last_batch.generated)
    negatives = [Image.from_pil(ImageOps.invert(i.to_pil())) for t in rows for i in t.tokens.images]
    # advantages 1: on-policy, TRL's loss is then minus the mean logprob's gradient (never zero)
    batch = inputs | {"advantages": torch.ones_like(inputs["advantages"])}
    other = batch | {"pixel_values": _pixels(trainer, negatives)}
    model = trainer.model
    params = dict(model.named_parameters())

    def gradient(inputs):  # by parameter name, of those the loss uses (LLaVA skips CLIP's last norm)
        grads = torch.autograd.grad(
            trainer._compute_loss(model, inputs), list(params.values()), allow_unused=True
        )
        return {name: grad for name, grad in zip(params, grads, strict=True) if grad is not None}

    grads, other_grads, same_grads = gradient(batch), gradient(other), gradient(batch)
    assert any(not torch.allclose(grads[name], other_grads[name]) for name in grads)
    assert all(torch.equal(grads[name], same_grads[name]) for name in grads)
    tower = [name for name in grads if "vision_tower" in name]  # TRL's loss trains the vision tower
    assert tower and all(grads[name].abs().sum() > 0 for name in tower)


def test_scoring_text_rows_apart_gives_the_same_logprobs(trained):
    trainer, _ = trained
    inputs = next(i for i in trainer.inputs if 0 in i["num_images"])  # a row without an image
    ids = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], dim=1)
    mask = torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], dim=1)
    pixels = {"pixel_values": inputs["pixel_values"], "num_images": inputs["num_images"]}
    with torch.no_grad():
        whole, _, _ = trainer._get_per_token_logps_and_entropies(
            trainer.model, ids, mask, inputs["completion_ids"].size(1), **pixels
        )
        # row by row: a text row's chunk has no image, which a LLaVA's forward pass cannot take as a tensor
        apart, _, _ = trainer._get_per_token_logps_and_entropies(
            trainer.model, ids, mask, inputs["completion_ids"].size(1), batch_size=1, **pixels
        )
    torch.testing.assert_close(apart, whole, atol=1e-5, rtol=0)


def test_trls_own_grpo_trainer_refuses_episodes_with_images(tiny_vision_model, tmp_path):
    from trl import GRPOTrainer

    trainer = vision_trainer(tiny_vision_model, tmp_path, ENV_ID, GRPOTrainer)
    with pytest.raises(ConfigError, match=r"GRPOTrainer gives its forward passes only .*VisionGRPOTrainer"):
        trainer.train()


def test_a_processor_without_the_models_image_tensors_is_refused(tiny_vision_model, tmp_path):
    from transformers import Qwen2VLImageProcessorPil

    trainer = vision_trainer(tiny_vision_model, tmp_path, ENV_ID)
    processor = trainer.processing_class
    trainer.processing_class = processor.tokenizer
    with pytest.raises(ConfigError, match=r"processing_class is a .*Tokenizer.*model's processor"):
        trainer._pixels([[square("red")], []])
    # Qwen2-VL's layout: patches of all images in one tensor, and image_grid_thw
    processor.image_processor, trainer.processing_class = Qwen2VLImageProcessorPil(), processor
    with pytest.raises(ConfigError, match=r"image_grid_thw.*one pixel_values row per image"):
        trainer._pixels([[square("red")], []])


def test_a_lora_adapter_of_the_vlm_trains_on_the_pixels(tiny_vision_model, tmp_path):
    from peft import LoraConfig

    trainer = vision_trainer(
        tiny_vision_model, tmp_path, ENV_ID, recording(), reward=token_sum, beta=0.04, learning_rate=1e-2,
        peft_config=LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"]),
    )  # fmt: skip
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters() if p.requires_grad}
    trainer.train()
    [inputs], [loss_logps] = trainer.inputs, trainer.loss_logps
    mask = inputs["completion_mask"] * inputs["tool_mask"]
    sampled = inputs["sampling_per_token_logps"] * mask
    # the reference is the model without its adapter, scored on the same pixels: the sampler's
    for scored in (loss_logps, inputs["ref_per_token_logps"]):
        torch.testing.assert_close(scored * mask, sampled, atol=1e-4, rtol=0)
    moved = {n for n, p in trainer.model.named_parameters() if n in before and not torch.equal(p, before[n])}
    # the vision tower's adapter learnt from the pixels (its B matrices: A's gradient is 0 while B is)
    tower = {n for n in before if "vision_tower" in n and "lora_B" in n}
    assert tower and tower <= moved


def test_trees_of_episodes_with_images_train_on_their_pixels(tiny_vision_model, tmp_path):
    tree = PipelineConfig.from_dict({"generate": {"tree": {"entropy_points": 1, "children": 3}}})
    rollout = gfcr_trl.rollout_func(ENV_ID, config=tree, runner_config=RUNNER)
    trainer = vision_trainer(
        tiny_vision_model, tmp_path, ENV_ID, recording(gfcr_trl.TreeGRPOTrainer), rollout,
        num_generations=4, per_device_train_batch_size=8,
    )  # fmt: skip
    trainer.train()
    assert rollout.last_batch.metrics["generate/branches"] > 0  # leaves branched after a picture
    [inputs], [loss_logps] = trainer.inputs, trainer.loss_logps
    assert inputs["advantages"].shape == inputs["completion_ids"].shape  # per token, from the trees
    mask = inputs["completion_mask"] * inputs["tool_mask"]
    torch.testing.assert_close(
        loss_logps * mask, inputs["sampling_per_token_logps"] * mask, atol=1e-4, rtol=0
    )
    rows = row_trajectories(rollout, inputs)
    counts = [len(t.tokens.images) for t in rows]
    assert inputs["num_images"] == counts and min(counts) >= 1 and 2 in counts
