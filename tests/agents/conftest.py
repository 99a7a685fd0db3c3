"""Fixtures of the agents' tests: a tiny chat model written once per session."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    """A `gfcr tiny-model` directory (random weights, a tokenizer trained here, a tool-aware template)."""
    pytest.importorskip("transformers", reason="the hf extra is not installed: pip install -e '.[hf]'")
    from gfcr.apps.tiny_model import write_tiny_model

    return write_tiny_model(tmp_path_factory.mktemp("tiny-model"), vocab_size=512, corpus_tasks=100)


@pytest.fixture(scope="session")
def hf_policy(tiny_model):
    from gfcr.agents.policies.hf import HFPolicy

    return HFPolicy(tiny_model)


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
