"""Fixtures of the GFCR module tests."""

from __future__ import annotations

import io
import pickle
from typing import Any

import pytest


@pytest.fixture
def through_checkpoint():
    """A component's `state_dict()` as a checkpoint gives it back: pickled, and saved and loaded by
    torch (`weights_only=True` where torch is installed: the state must be plain data)."""

    def round_trip(state: dict[str, Any]) -> dict[str, Any]:
        state = pickle.loads(pickle.dumps(state))
        try:
            import torch
        except ImportError:
            return state
        buffer = io.BytesIO()
        torch.save(state, buffer)
        buffer.seek(0)
        return torch.load(buffer, weights_only=True)

    return round_trip
