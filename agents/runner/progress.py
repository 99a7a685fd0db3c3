"""Progress of a run: a live bar in a terminal (or Jupyter), a plain line every so often anywhere else.

`ProgressDisplay` counts done of the total in some unit and shows the elapsed time and the time
left, with a run's own figures; `RunProgress` (episodes: rate, tokens/s, success so far, failures)
is the runner's, `gfcr.trainers.logging.TrainProgress` (steps: reward and loss) the trainer's. In
a terminal the bar is rich's (transient: the run's summary replaces it); when stderr is not a
terminal (a log file, CI, `nohup`) a line such as

    gfcr progress · math · scripted:oracle: 120/400 episodes (30%), 2.10 ep/s, 1,234 tok/s,
    elapsed 57s, ETA 2m13s, success 45.0%

is written every `interval_s` seconds from a timer thread (so a run whose episodes are slow still
reports), at each advance where asked (`each_advance`: a training step is worth a line), and once
at the end. Updating the counts costs a few additions per episode.
"""

from __future__ import annotations

import threading
import time
from typing import Self

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from gfcr.agents.runner.episode import episode_solved
from gfcr.core import Trajectory


class ProgressDisplay:
    """Done of `total` `unit`s, elapsed, ETA and the figures of `rates`/`results` on `console`
    (stderr by default): a bar in a terminal, else plain lines; nothing at all unless `enabled`.

    `completed` units were done by an earlier run (resumed): they count as done but not in the
    rate, so the ETA is that of the work left at this run's pace.

    >>> import io
    >>> out = io.StringIO()
    >>> with ProgressDisplay("copy", 4, Console(file=out), interval_s=0, completed=2, unit="files") as p:
    ...     p.count_done()
    >>> print(out.getvalue().strip())  # doctest: +ELLIPSIS
    gfcr progress · copy: 3/4 files (75%), elapsed ...s, ETA ...s
    """

    def __init__(
        self,
        description: str,
        total: int,
        console: Console | None = None,
        *,
        unit: str = "items",
        interval_s: float = 30.0,
        completed: int = 0,
        each_advance: bool = False,
        enabled: bool = True,
    ) -> None:
        self.description, self.total, self.unit, self.interval_s = description, total, unit, interval_s
        self.each_advance, self.enabled = each_advance, enabled
        self.console = console or Console(stderr=True)
        self.done = self.resumed = completed
        self._started = time.perf_counter()
        self._stop = threading.Event()
        self._timer: threading.Thread | None = None
        self._bar: Progress | None = None
        if enabled and (self.console.is_terminal or self.console.is_jupyter):  # rich draws its bar in both
            self._bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[results]}"),
                TextColumn("{task.fields[rates]}"),
                TimeElapsedColumn(),
                # ours, not rich's TimeRemainingColumn: rich's needs several updates within 30 s
                TextColumn("ETA {task.fields[eta]}"),
                console=self.console,
                transient=True,
            )
            self._task = self._bar.add_task(
                description, total=total, completed=completed, results="", rates="", eta="–"
            )

    def __enter__(self) -> Self:
        self._started = time.perf_counter()
        if self._bar is not None:
            self._bar.start()
        elif self.enabled and self.interval_s > 0:
            self._timer = threading.Thread(target=self._tick, name="gfcr-progress", daemon=True)
            self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._timer is not None:
            self._timer.join(timeout=5)
        if self._bar is not None:
            self._bar.stop()
        elif self.enabled:
            self._write_line()  # the last word: how the run ended

    def count_done(self, count: int = 1, *, resumed: bool = False) -> None:
        """Count `count` more units done (`resumed`: done by an earlier run, not now)."""
        self.done += count
        self.resumed += count if resumed else 0
        if self._bar is not None:
            results, rates = "  ".join(self.results()), "  ".join(self.rates(self._elapsed()))
            self._bar.update(self._task, completed=self.done, results=results, rates=rates, eta=self.eta())
        elif self.enabled and self.each_advance and not resumed:
            self._write_line()

    def rates(self, elapsed: float) -> list[str]:
        """This run's rates, shown after done/total (none here; subclasses add theirs)."""
        return []

    def results(self) -> list[str]:
        """This run's results so far, shown last (none here; subclasses add theirs)."""
        return []

    def eta(self) -> str:
        """The time left at this run's pace: `2m13s`, or `–` before anything was done now."""
        rate = (self.done - self.resumed) / self._elapsed()
        return _duration((self.total - self.done) / rate) if rate > 0 and self.done < self.total else "–"

    def line(self) -> str:
        """The plain progress line: done/total, rates, elapsed, time left, results."""
        elapsed = self._elapsed()
        parts = [
            f"{self.done}/{self.total} {self.unit} ({self.done / max(self.total, 1):.0%})",
            *self.rates(elapsed),
            f"elapsed {_duration(elapsed)}",
            f"ETA {self.eta()}",
            *self.results(),
        ]
        return f"gfcr progress · {self.description}: " + ", ".join(parts)

    def _elapsed(self) -> float:
        return max(time.perf_counter() - self._started, 1e-9)

    def _tick(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._write_line()

    def _write_line(self) -> None:
        self.console.print(self.line(), markup=False, highlight=False, soft_wrap=True)


class RunProgress(ProgressDisplay):
    """A run's episodes: done/total, episodes/s, tokens/s, time left, success so far, failures.

    >>> import io
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
        self._solved = self._failed = self._tokens = 0
        super().__init__(description, total, console, unit="episodes", interval_s=interval_s)

    def advance(self, trajectory: Trajectory, *, resumed: bool = False) -> None:
        """Count a finished episode (`resumed`: found in the output of an earlier run, not run now)."""
        self._solved += episode_solved(trajectory)
        self._failed += trajectory.status == "failed"
        self._tokens += trajectory.cost.tokens_out
        self.count_done(resumed=resumed)

    def rates(self, elapsed: float) -> list[str]:
        # episodes resumed from an earlier run took no time now
        return [f"{(self.done - self.resumed) / elapsed:,.2f} ep/s", f"{self._tokens / elapsed:,.0f} tok/s"]

    def results(self) -> list[str]:
        success = f"success {self._solved / self.done:.1%}" if self.done else "success –"
        return [success, *([f"{self._failed} failed"] if self._failed else [])]


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
