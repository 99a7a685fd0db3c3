"""Progress of a run: a live bar in a terminal (or Jupyter), a plain line every so often anywhere else.

Both show episodes done of the total, the rate, the time left, the running success rate (pass@1
so far), tokens/s and failures. In a terminal the bar is rich's (transient: the run's summary
replaces it); when stderr is not a terminal (a log file, CI, `nohup`) a line such as

    gfcr progress · math · scripted:oracle: 120/400 episodes (30%), 2.10 ep/s, 1,234 tok/s,
    elapsed 57s, ETA 2m13s, success 45.0%

is written every `interval_s` seconds from a timer thread (so a run whose episodes are slow still
reports), and once at the end. Updating the counts costs a few additions per episode.
"""

from __future__ import annotations

import threading
import time

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from gfcr.agents.runner.episode import episode_solved
from gfcr.core import Trajectory


class RunProgress:
    """Shows a run's progress on `console` (stderr by default): a bar in a terminal, else plain lines.

    >>> import io
    >>> from rich.console import Console
    >>> out = io.StringIO()
    >>> with RunProgress("demo", 2, Console(file=out), interval_s=0) as progress:
    ...     progress.advance(Trajectory("e", "t", ""))
    ...     progress.advance(Trajectory("e", "t", ""))
    >>> out.getvalue().startswith("gfcr progress · demo: 2/2 episodes (100%)")
    True
    """

    def __init__(
        self, description: str, total: int, console: Console | None = None, *, interval_s: float = 30.0
    ) -> None:
        self.description, self.total, self.interval_s = description, total, interval_s
        self.console = console or Console(stderr=True)
        self._started = time.perf_counter()
        self._done = self._solved = self._failed = self._tokens = self._resumed = 0
        self._stop = threading.Event()
        self._timer: threading.Thread | None = None
        self._bar: Progress | None = None
        if self.console.is_terminal or self.console.is_jupyter:  # rich draws its bar in both
            self._bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("success {task.fields[success]}"),
                TextColumn("{task.fields[episodes]} ep/s"),
                TextColumn("{task.fields[tokens]} tok/s"),
                TextColumn("{task.fields[failed]}"),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=self.console,
                transient=True,
            )
            self._task = self._bar.add_task(
                description, total=total, success="–", tokens="0", episodes="0", failed=""
            )

    def __enter__(self) -> RunProgress:
        self._started = time.perf_counter()
        if self._bar is not None:
            self._bar.start()
        elif self.interval_s > 0:
            self._timer = threading.Thread(target=self._tick, name="gfcr-progress", daemon=True)
            self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._timer is not None:
            self._timer.join(timeout=5)
        if self._bar is not None:
            self._bar.stop()
        else:
            self._write_line()  # the last word: how the run ended

    def advance(self, trajectory: Trajectory, *, resumed: bool = False) -> None:
        """Count a finished episode (`resumed`: found in the output of an earlier run, not run now)."""
        self._done += 1
        self._resumed += resumed
        self._solved += episode_solved(trajectory)
        self._failed += trajectory.status == "failed"
        self._tokens += trajectory.cost.tokens_out
        if self._bar is not None:
            elapsed = max(time.perf_counter() - self._started, 1e-9)
            ran = self._done - self._resumed
            self._bar.update(
                self._task,
                advance=1,
                success=f"{self._solved / self._done:.1%}",
                tokens=f"{self._tokens / elapsed:,.0f}",
                episodes=f"{ran / elapsed:,.1f}",
                failed=f"[red]{self._failed} failed[/red]" if self._failed else "",
            )

    def line(self) -> str:
        """The plain progress line: done/total, rate, tokens/s, time left, success so far, failures."""
        elapsed = max(time.perf_counter() - self._started, 1e-9)
        done, total = self._done, max(self.total, 1)
        rate = (done - self._resumed) / elapsed  # episodes resumed from an earlier run took no time now
        eta = _duration((self.total - done) / rate) if rate > 0 and done < self.total else "–"
        parts = [
            f"{done}/{self.total} episodes ({done / total:.0%})",
            f"{rate:,.2f} ep/s",
            f"{self._tokens / elapsed:,.0f} tok/s",
            f"elapsed {_duration(elapsed)}",
            f"ETA {eta}",
            f"success {self._solved / done:.1%}" if done else "success –",
        ]
        if self._failed:
            parts.append(f"{self._failed} failed")
        return f"gfcr progress · {self.description}: " + ", ".join(parts)

    def _tick(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._write_line()

    def _write_line(self) -> None:
        self.console.print(self.line(), markup=False, highlight=False, soft_wrap=True)


def _duration(seconds: float) -> str:
    """`2m13s`, `1h04m`, `45s`.

    >>> _duration(45.2), _duration(133), _duration(3840)
    ('45s', '2m13s', '1h04m')
    """
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
