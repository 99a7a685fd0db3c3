"""Metrics: one JSON line per step, TensorBoard events, and the progress display (step i/N, ETA).

Keys are grouped `group/name`: `rollout/reward_mean`, `rollout/frac_zero_std`, `loss/policy`,
`loss/kl`, `optim/lr`, `perf/tokens_per_s` … (see docs/trainer.md for the full list).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from rich.console import Console

from gfcr.agents.runner.progress import ProgressDisplay

logger = logging.getLogger(__name__)


class MetricLogger:
    """Writes `metrics.jsonl` (and TensorBoard events if wanted) under `out_dir`; without a
    `resume_step`, first removes the ones an earlier run wrote there.

    >>> import tempfile
    >>> log = MetricLogger(tempfile.mkdtemp(), tensorboard=False)
    >>> log.log(1, {"rollout/reward_mean": 0.5}); log.close()
    >>> [json.loads(line) for line in open(log.path)]
    [{'step': 1, 'rollout/reward_mean': 0.5}]
    """

    def __init__(
        self, out_dir: str | Path, *, tensorboard: bool = True, resume_step: int | None = None
    ) -> None:
        self.path = Path(out_dir) / "metrics.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tensorboard_dir = Path(out_dir) / "tensorboard"
        if resume_step is not None:
            self._truncate_after(resume_step)
        else:  # a new run: an earlier one's metrics and events would overlap its curves
            self.path.unlink(missing_ok=True)
            for events in tensorboard_dir.glob("events.out.tfevents.*"):
                events.unlink()
        self.file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 (closed in close())
        self.writer = None
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter

                self.writer = SummaryWriter(str(tensorboard_dir), purge_step=resume_step)
            except ImportError:
                logger.warning("tensorboard is not installed (pip install 'gfcr[train]'); logging JSONL only")

    def log(self, step: int, metrics: dict[str, Any]) -> None:
        self.file.write(json.dumps({"step": step, **metrics}) + "\n")
        self.file.flush()
        if self.writer is not None:
            for key, value in metrics.items():
                if isinstance(value, int | float):
                    self.writer.add_scalar(key, value, step)

    def close(self) -> None:
        self.file.close()
        if self.writer is not None:
            self.writer.close()

    def _truncate_after(self, step: int) -> None:
        """Drop lines a killed run logged after its last checkpoint (they are run again)."""
        if not self.path.exists():
            return
        lines = self.path.read_text(encoding="utf-8").splitlines()
        kept = [line for line in lines if line.strip() and _step_of(line) <= step]
        self.path.write_text("".join(line + "\n" for line in kept), encoding="utf-8")


def _step_of(line: str) -> int:
    try:
        return int(json.loads(line).get("step", 0))
    except (json.JSONDecodeError, ValueError, TypeError):
        return 1 << 62  # a torn line: dropped


def read_metrics(out_dir: str | Path) -> list[dict[str, Any]]:
    """The metrics a run logged, one dict per step."""
    path = Path(out_dir) / "metrics.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


class TrainProgress(ProgressDisplay):
    """The training steps: step i/N, elapsed, ETA, and the last step's reward and loss; a live bar
    in a terminal, else a plain line at each step (the runner's progress display, in steps).

    >>> import io
    >>> from rich.console import Console
    >>> out = io.StringIO()
    >>> with TrainProgress(2, console=Console(file=out)) as progress:
    ...     progress.update(1, {"rollout/reward_mean": 0.5, "loss/policy": 0.0123})
    >>> print(out.getvalue().splitlines()[0])  # doctest: +ELLIPSIS
    gfcr progress · train: 1/2 steps (50%), elapsed ...s, ETA ...s, reward 0.5, loss 0.0123
    """

    def __init__(
        self, total: int, completed: int = 0, *, enabled: bool = True, console: Console | None = None
    ) -> None:
        self.metrics: dict[str, Any] = {}
        super().__init__(
            "train", total, console, unit="steps", completed=completed, each_advance=True, enabled=enabled
        )

    def update(self, step: int, metrics: dict[str, Any]) -> None:
        """Step `step` is done; `metrics` are its logged values."""
        self.metrics = metrics
        self.count_done(step - self.done)

    def results(self) -> list[str]:
        labels = {"rollout/reward_mean": "reward", "loss/policy": "loss", "loss/sft_nll": "nll",
                  "perf/tokens_per_s": "tok/s"}  # fmt: skip
        return [f"{label} {self.metrics[key]:.3g}" for key, label in labels.items() if key in self.metrics]
