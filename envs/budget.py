"""`StepBudget`: what one step's tool calls may spend — how many, and how much wall time in all.

Every `TextEnv` takes the keywords `max_tool_calls` (tool calls per message) and `step_time_s`
(wall seconds for the tool calls of one step). Going past either is the agent's doing, never an
infrastructure fault: the calls past the budget are not run, each saying why, and the episode is
truncated with an observation that names the limit and the keyword that raises it. Each call that
runs has the step's deadline (`gfcr.core.tools.time_left`), so one slow call cannot overrun it
either. The default budget sits well inside the runner's `env_timeout_s` (300 s), which is kept
for real faults: with the defaults, an agent cannot turn a stall into a failed episode. Nor is
the agent charged for the infrastructure's delays: time a call spends queued for a shared
resource (a sandbox slot, an LLM user; `gfcr.core.admission`) moves the step's deadline back.

>>> budget = StepBudget(max_tool_calls=2, step_time_s=60)
>>> budget.start()
>>> [budget.admit() is None for _ in range(3)], budget.exceeded
([True, True, False], 'max_tool_calls')
>>> print(budget.note())
[step budget] the message has more than max_tool_calls=2 tool calls: the episode is truncated. ...
"""

from __future__ import annotations

import time

from gfcr.core.admission import waited
from gfcr.errors import ConfigError

DEFAULT_MAX_TOOL_CALLS = 50  # the browser reads up to 50 calls a message, and its oracle sends that many
DEFAULT_STEP_TIME_S = 120.0  # under half the runner's env_timeout_s: the rest is for the step's verdict


class StepBudget:
    """One step's allowance for tool calls; `start()` it each step, `admit()` each call before it runs."""

    def __init__(
        self, max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS, step_time_s: float = DEFAULT_STEP_TIME_S
    ) -> None:
        if isinstance(max_tool_calls, bool) or not isinstance(max_tool_calls, int) or max_tool_calls < 1:
            raise ConfigError(
                f"max_tool_calls must be an integer >= 1, got {max_tool_calls!r}; "
                f"it caps the tool calls of one message (default {DEFAULT_MAX_TOOL_CALLS})"
            )
        if isinstance(step_time_s, bool) or not isinstance(step_time_s, (int, float)) or not step_time_s > 0:
            raise ConfigError(
                f"step_time_s must be a number of seconds > 0, got {step_time_s!r}; it caps the wall time "
                f"of one step's tool calls (default {DEFAULT_STEP_TIME_S:g})"
            )
        self.max_tool_calls, self.step_time_s = max_tool_calls, float(step_time_s)
        self._started = float("inf")  # a `time.monotonic()` instant; none before the first step
        self._waited_before = 0.0  # the step's queueing ledger when it started
        self.calls = 0
        self.exceeded: str | None = None  # the keyword of the limit this step went past

    def start(self) -> None:
        """A new step: no calls yet, and `step_time_s` from now."""
        self._started, self._waited_before = time.monotonic(), waited()
        self.calls, self.exceeded = 0, None

    @property
    def deadline(self) -> float:
        """The `time.monotonic()` instant the step's calls must end by: `step_time_s` after its
        start, plus what they queued for shared resources since (the infrastructure's time)."""
        return self._started + self.step_time_s + (waited() - self._waited_before)

    def admit(self) -> str | None:
        """Count one more call: None if it may run, else why not (the step is then over budget)."""
        self.calls += 1
        if self.calls > self.max_tool_calls:
            self.exceeded = self.exceeded or "max_tool_calls"
        elif time.monotonic() >= self.deadline:
            self.exceeded = self.exceeded or "step_time_s"
        else:
            return None
        return self.reason()

    def check_time(self) -> None:
        """After the step's calls: a call that ran to the deadline spent the budget too."""
        if self.exceeded is None and self.calls and time.monotonic() >= self.deadline:
            self.exceeded = "step_time_s"

    def reason(self) -> str:
        """The limit the step went past, in words ("" within budget)."""
        if self.exceeded == "max_tool_calls":
            return f"the message has more than max_tool_calls={self.max_tool_calls} tool calls"
        if self.exceeded == "step_time_s":
            return f"the step's tool calls used up step_time_s={self.step_time_s:g} s"
        return ""

    def note(self) -> str:
        """What the agent reads when the step went past its budget."""
        more = "more calls" if self.exceeded == "max_tool_calls" else "slower steps"
        return (
            f"[step budget] {self.reason()}: the episode is truncated. Raise {self.exceeded} to allow {more}."
        )
