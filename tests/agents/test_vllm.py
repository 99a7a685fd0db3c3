"""The `vllm:` backend (runs where a CUDA GPU and vLLM are; skipped elsewhere, saying why)."""

from __future__ import annotations

from gfcr.agents import Request, Runner, RunnerConfig, SamplingParams, episodes_for_env
from gfcr.core import Message


def test_vllm_gives_n_samples_with_token_ids_and_logprobs(vllm_policy):
    request = Request((Message("user", "What is 2+2?"),), sampling=SamplingParams(max_tokens=16, n=3, seed=0))
    completions = vllm_policy.generate([request, request])
    assert len(completions) == 6
    for completion in completions:
        assert 1 <= len(completion.completion_ids) <= 16 and len(completion.logprobs) == len(
            completion.completion_ids
        )
        assert completion.text == vllm_policy.chat.completion_text(completion.completion_ids)
        assert all(lp <= 0 for lp in completion.logprobs) and completion.finish_reason in ("stop", "length")


def test_vllm_logprobs_agree_with_the_hf_forward_pass(vllm_policy, hf_policy):
    import torch

    request = Request((Message("user", "Hello"),), sampling=SamplingParams(max_tokens=12, seed=1))
    (completion,) = vllm_policy.generate([request])
    ids = torch.tensor([list(completion.prompt_ids) + list(completion.completion_ids)])
    with torch.inference_mode():
        logits = (
            hf_policy.model(ids.to(hf_policy.device)).logits[0, len(completion.prompt_ids) - 1 : -1].float()
        )
    expected = torch.log_softmax(logits, -1).gather(
        1, ids[0, len(completion.prompt_ids) :, None].to(logits.device)
    )
    assert torch.allclose(torch.tensor(completion.logprobs), expected.squeeze(1).cpu(), atol=2e-2)


def test_the_runner_drives_vllm_with_token_in_token_out(vllm_policy):
    specs = episodes_for_env("gfcr/Math-v0", 16, kwargs={"split": "AIME2024"})
    result = Runner(vllm_policy, RunnerConfig(sampling=SamplingParams(max_tokens=32))).run(specs)
    assert result.episodes == 16 and result.failed == 0
    for t in result.trajectories:
        assert t.tokens is not None and sum(t.tokens.loss_mask) == t.cost.tokens_out > 0


def test_vllm_takes_images_beside_the_ids_and_agrees_with_the_hf_forward_pass(
    vllm_vision_policy, tiny_vision_model
):
    """The engine sees the images (logprobs differ by image) and its logprobs are the trainer's model's
    on the same ids and pixels."""
    import torch
    from PIL import Image as PILImage

    from gfcr.agents.policies.hf import HFPolicy
    from gfcr.core import Image

    hf = HFPolicy(tiny_vision_model)
    pictures = [Image.from_pil(PILImage.new("RGB", (64, 64), colour)) for colour in ("red", "blue")]
    requests = [
        Request((Message("user", ["What colour?", picture]),), sampling=SamplingParams(max_tokens=8, seed=1))
        for picture in pictures
    ]
    red, blue = vllm_vision_policy.generate(requests)
    assert red.prompt_ids == tuple(hf.encode_prompt(requests[0].messages, ()))  # one processor, one expansion
    assert red.logprobs != blue.logprobs
    for completion, picture in ((red, pictures[0]), (blue, pictures[1])):
        ids = torch.tensor([list(completion.prompt_ids) + list(completion.completion_ids)], device=hf.device)
        pixels = {name: t.to(hf.device) for name, t in hf.pixel_inputs([picture]).items()}
        with torch.inference_mode():
            logits = hf.model(input_ids=ids, **pixels).logits[0, len(completion.prompt_ids) - 1 : -1].float()
        expected = torch.log_softmax(logits, -1).gather(1, ids[0, len(completion.prompt_ids) :, None])
        assert torch.allclose(torch.tensor(completion.logprobs), expected.squeeze(1).cpu(), atol=2e-2)
