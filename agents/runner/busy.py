"""`BusyClock`: wall seconds during which at least one call of a kind was in flight.

Overlapping calls count once: two calls of 1 s that run side by side are 1 s of busy time, not 2.
The runner keeps one for policy batches (`Batcher`) and one for env calls, so a run can say how
much of its wall time the policy, or the envs, sat idle (`RunResult.policy_busy_s`, `env_busy_s`).

>>> clock = BusyClock()
>>> with clock:          # a call begins ...
...     with clock:      # ... a second one overlaps it
...         clock.in_flight
2
>>> clock.in_flight, clock.busy_s > 0
(0, True)
"""

from __future__ import annotations

import threading
import time
from types import TracebackType


class BusyClock:
    """Counts calls in flight (`enter` / `exit`, or `with clock:`) and sums the wall seconds with
    one or more of them; safe to share between threads."""

    def __init__(self) -> None:
        self.in_flight = 0
        self._busy_s = 0.0  # of the busy spells that have ended
        self._since = 0.0  # when the current busy spell began (time.perf_counter)
        self._lock = threading.Lock()

    def enter(self) -> None:
        """A call begins."""
        with self._lock:
            if self.in_flight == 0:
                self._since = time.perf_counter()
            self.in_flight += 1

    def exit(self) -> None:
        """A call ends (each `enter` needs one)."""
        with self._lock:
            if self.in_flight == 0:
                raise RuntimeError("BusyClock.exit without a call in flight: pair each exit with an enter")
            self.in_flight -= 1
            if self.in_flight == 0:
                self._busy_s += time.perf_counter() - self._since

    @property
    def busy_s(self) -> float:
        """Wall seconds with at least one call in flight, the current busy spell included."""
        with self._lock:
            ongoing = time.perf_counter() - self._since if self.in_flight else 0.0
            return self._busy_s + ongoing

    def __enter__(self) -> BusyClock:
        self.enter()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.exit()
