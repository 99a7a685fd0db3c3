"""Fixtures of the integration tests (OpenEnv, TRL, verifiers): a tiny chat model written once per session."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    """A `gfcr tiny-model` directory (random weights, a tokenizer trained here, a tool-aware template)."""
    pytest.importorskip("transformers", reason="the hf extra is not installed: pip install -e '.[hf]'")
    from gfcr.apps.tiny_model import write_tiny_model

    return write_tiny_model(tmp_path_factory.mktemp("tiny-model"), vocab_size=512, corpus_tasks=100)
