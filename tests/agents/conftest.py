"""Fixtures of the agents' tests: the vLLM policy where a GPU is (the tiny model is in tests/conftest.py),
and the tiny model in each backend that keeps token ids."""

from __future__ import annotations

import pytest


def _gpu_reason() -> str | None:
    """Why the vLLM tests cannot run here (None when they can)."""
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "vLLM needs a CUDA GPU and none is visible"
    try:
        import vllm  # noqa: F401
    except ImportError as e:
        return f"vllm is not installed ({e}): pip install -e '.[gpu]'"
    return None


@pytest.fixture(scope="session")
def vllm_policy(tiny_model):
    """The tiny model in vLLM's offline engine; skipped (with the reason) where no GPU is."""
    reason = _gpu_reason()
    if reason is not None:
        pytest.skip(reason)
    from gfcr.agents.policies.vllm import VLLMPolicy

    return VLLMPolicy(tiny_model, enforce_eager=True, gpu_memory_utilization=0.3)


@pytest.fixture(scope="session")
def vllm_vision_policy(tiny_vision_model):
    """The tiny vision-language model (LLaVA) in vLLM's engine; skipped (with the reason) where no GPU is."""
    reason = _gpu_reason()
    if reason is not None:
        pytest.skip(reason)
    from gfcr.agents.policies.vllm import VLLMPolicy

    return VLLMPolicy(tiny_vision_model, enforce_eager=True, gpu_memory_utilization=0.2)


@pytest.fixture(params=["hf", "vllm"])
def token_policy(request):
    """The tiny model in each backend that keeps token ids (vLLM only where a GPU is)."""
    return request.getfixturevalue(f"{request.param}_policy")
