"""`TrajectoryWriter`: finished trajectories to JSONL in batches, safe to kill and resume.

Lines are appended whole and each batch is flushed and fsynced (`gfcr.core.write_jsonl`), every
`flush_every` trajectories or `flush_interval_s` seconds, whichever comes first. A run killed
with SIGKILL loses only the trajectories not yet flushed; if it died mid-write, the torn last line
is cut off when the file is opened again with `resume=True`, so no partial line ever sits between
whole ones. Resuming keeps the file and reports which trajectory ids it already holds; episodes
that failed for infrastructure reasons (status "failed": a dead server, a lost worker) are not
results, so resuming drops their lines and runs them again.

>>> import tempfile, pathlib
>>> from gfcr.core import Trajectory
>>> path = pathlib.Path(tempfile.mkdtemp()) / "run.jsonl"
>>> with TrajectoryWriter(path) as writer:
...     writer.add(Trajectory(env_id="gfcr/Math-v0", task_id="t0", prompt="1+1?", id="a"))
>>> _ = path.write_text(path.read_text() + '{"torn": ')  # as if killed mid-write
>>> sorted(TrajectoryWriter(path, resume=True).done)
['a']
>>> path.read_text().endswith("\\n")
True
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from types import TracebackType

from gfcr.core import Trajectory, read_jsonl, write_jsonl
from gfcr.errors import ConfigError

logger = logging.getLogger(__name__)


class TrajectoryWriter:
    """Appends trajectories to `path`; `done` holds the ids already in the file (after a resume)."""

    def __init__(
        self, path: str | Path, *, resume: bool = False, flush_every: int = 32, flush_interval_s: float = 2.0
    ) -> None:
        if flush_every < 1 or flush_interval_s < 0:
            raise ConfigError(
                f"need flush_every >= 1 and flush_interval_s >= 0, got {flush_every}, {flush_interval_s}"
            )
        self.path = Path(path)
        self.flush_every = flush_every
        self.flush_interval_s = flush_interval_s
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.previous: list[Trajectory] = []
        if resume and self.path.exists():
            _cut_torn_tail(self.path)
            self.previous = _drop_failed(self.path, list(read_jsonl(self.path)))
        else:
            self.path.write_text("")
        self.done = {trajectory.id for trajectory in self.previous}
        self._buffer: list[Trajectory] = []
        self._last_flush = time.monotonic()

    def add(self, trajectory: Trajectory) -> None:
        """Buffer `trajectory`; write the buffer when it is full or old enough."""
        self._buffer.append(trajectory)
        self.done.add(trajectory.id)
        if (
            len(self._buffer) >= self.flush_every
            or time.monotonic() - self._last_flush >= self.flush_interval_s
        ):
            self.flush()

    def flush(self) -> None:
        """Write every buffered trajectory, then flush and fsync."""
        if self._buffer:
            write_jsonl(self._buffer, self.path, append=True)
            self._buffer = []
        self._last_flush = time.monotonic()

    def __enter__(self) -> TrajectoryWriter:
        return self

    def __exit__(self, kind: type | None, error: BaseException | None, trace: TracebackType | None) -> None:
        self.flush()


def _drop_failed(path: Path, trajectories: list[Trajectory]) -> list[Trajectory]:
    """The trajectories that are results; the file is rewritten without the failed ones (atomically)."""
    kept = [t for t in trajectories if t.status != "failed"]
    if len(kept) < len(trajectories):
        logger.warning("%s: running %d failed episodes again", path, len(trajectories) - len(kept))
        staging = path.with_name(path.name + ".resume")
        write_jsonl(kept, staging)
        os.replace(staging, path)
    return kept


def _cut_torn_tail(path: Path) -> None:
    """Drop a last line without its newline (a write cut short by a kill)."""
    with open(path, "rb+") as f:
        data = f.read()
        if data and not data.endswith(b"\n"):
            keep = data.rfind(b"\n") + 1
            logger.warning(
                "%s: cutting a torn last line of %d bytes (from a killed run)", path, len(data) - keep
            )
            f.truncate(keep)
            f.flush()
            os.fsync(f.fileno())
