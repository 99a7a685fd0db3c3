"""A live progress bar for runs: episodes done, success rate, tokens/s and episodes/s (rich)."""

from __future__ import annotations

import time

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from gfcr.agents.runner.episode import solved
from gfcr.core import Trajectory


class RunProgress:
    """Shows a transient bar on `console` (stderr by default) while a run goes."""

    def __init__(self, description: str, total: int, console: Console | None = None) -> None:
        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("success {task.fields[success]}"),
            TextColumn("{task.fields[tokens]} tok/s"),
            TextColumn("{task.fields[episodes]} ep/s"),
            TextColumn("{task.fields[failed]}"),
            TimeElapsedColumn(),
            console=console or Console(stderr=True),
            transient=True,
        )
        self._task = self._progress.add_task(
            description, total=total, success="–", tokens="0", episodes="0", failed=""
        )
        self._started = time.perf_counter()
        self._done = self._solved = self._failed = self._tokens = 0

    def __enter__(self) -> RunProgress:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def advance(self, trajectory: Trajectory) -> None:
        """Count a finished episode."""
        self._done += 1
        self._solved += solved(trajectory)
        self._failed += trajectory.status == "failed"
        self._tokens += trajectory.cost.tokens_out
        elapsed = max(time.perf_counter() - self._started, 1e-9)
        self._progress.update(
            self._task,
            advance=1,
            success=f"{self._solved / self._done:.1%}",
            tokens=f"{self._tokens / elapsed:,.0f}",
            episodes=f"{self._done / elapsed:,.1f}",
            failed=f"[red]{self._failed} failed[/red]" if self._failed else "",
        )
