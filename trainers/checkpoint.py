"""Checkpoints: everything a resumed run needs to continue as if it had never stopped.

A checkpoint is a directory `out_dir/checkpoints/step-000042/` holding

- `model/`: the model (or LoRA adapter) and tokenizer via `save_pretrained`, loadable as `hf:PATH`;
- `state.pt`: the trainable weights (exact), optimizer, step (the LR follows from it), RNG states
  (Python, NumPy, torch), the KL reference's weights once the warm start has moved it, and the
  `state_dict()` of each GFCR component with state: Control's (prompt posteriors, its RNG, its run
  counter) and the replay buffer's (its rows).

It is written to a temporary directory and renamed into place, so a killed process never leaves a
half-written checkpoint that `latest_checkpoint` would pick.
"""

from __future__ import annotations

import logging
import random
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

from gfcr.errors import DataError

logger = logging.getLogger(__name__)
STEP_DIR = re.compile(r"^step-(\d+)$")
PARTIAL_DIR = re.compile(r"^\.step-(\d+)\.partial$")


def rng_state() -> dict[str, Any]:
    """The global random states of Python, NumPy and torch."""
    return {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])


def trainable_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The parameters the optimizer updates (all of them, or only LoRA's), detached copies."""
    return {name: p.detach().cpu().clone() for name, p in model.named_parameters() if p.requires_grad}


def save_checkpoint(
    directory: Path, step: int, state: dict[str, Any], model: Any, tokenizer: Any = None
) -> Path:
    """Write checkpoint `step` under `directory` (checkpoints/); returns its path."""
    final = directory / f"step-{step:06d}"
    partial = directory / f".step-{step:06d}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    model.save_pretrained(partial / "model")
    if tokenizer is not None:
        tokenizer.save_pretrained(partial / "model")
    torch.save({"step": step, **state}, partial / "state.pt")
    shutil.rmtree(final, ignore_errors=True)
    partial.rename(final)
    return final


def load_state(checkpoint: Path) -> dict[str, Any]:
    """The `state.pt` of a checkpoint directory."""
    path = checkpoint / "state.pt"
    if not path.exists():
        raise DataError(f"{checkpoint} is not a gfcr checkpoint (no state.pt)")
    # weights_only=False: the state holds NumPy RNG tuples (plain data, but not tensors).
    return torch.load(path, map_location="cpu", weights_only=False)


def checkpoints(directory: Path) -> list[Path]:
    """Complete checkpoints under `directory`, oldest first."""
    if not directory.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in directory.iterdir() if (m := STEP_DIR.match(p.name))]
    return [p for _, p in sorted(found)]


def latest_checkpoint(directory: Path) -> Path | None:
    found = checkpoints(directory)
    return found[-1] if found else None


def remove_checkpoints(directory: Path) -> None:
    """Delete every checkpoint under `directory`, complete or half-written (a run starting over)."""
    if directory.is_dir():
        for path in directory.iterdir():
            if STEP_DIR.match(path.name) or PARTIAL_DIR.match(path.name):
                shutil.rmtree(path, ignore_errors=True)


def prune_checkpoints(directory: Path, keep: int) -> None:
    """Delete all but the newest `keep` checkpoints."""
    for old in checkpoints(directory)[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
