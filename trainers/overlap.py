"""Asynchronous training: the next steps' rollouts run while this step's update does.

With `[async] max_staleness = S > 0`, a `RolloutStream` runs the rollout pipeline on a thread of
its own, step after step, and hands the trainer each step's batch when it asks for it:

- the batch of step k starts once the rollout policy is at version k - S or newer (the trainer
  has pushed the weights of step k - S), so no token it holds is more than S versions older than
  the update of step k that trains on it; S = 1 is one-step off-policy training, larger S lets
  the generator run further ahead;
- the generator's weights are the trainer's, pushed after each update (`Models.sync`): an episode
  running across a push goes on with the new weights from its next turn, and each token records
  the version that sampled it (`TokenData.versions`), so the correction of stale tokens
  (`update.correct_off_policy`) knows which behaviour policy each came from;
- each batch carries the pipeline's state after it (`Produced.state`): a checkpoint saves the
  state after the last batch trained on, and a resumed run generates the batches that were
  ahead again, with the same seeds.

An error in the generator is raised by the trainer's next `get`; `close` stops the generator
after the batch it is making (a step's episodes always run to their end).

>>> from gfcr.agents import make_policy, episodes_for_env
>>> from gfcr.control import ControlConfig, RolloutController
>>> from gfcr.trainers.pipeline import RolloutPipeline
>>> tasks = episodes_for_env("gfcr/ToolUse-v0", 4, kwargs={"num_tasks": 4})
>>> pipeline = RolloutPipeline(make_policy("scripted:oracle"), tasks,
...                            RolloutController(ControlConfig(num_prompts=2, group_size=2)))
>>> with RolloutStream(pipeline, max_staleness=1) as stream:
...     first = stream.get(0)  # while step 0 trains, step 1's batch is being made
...     stream.advance(1)      # the weights of step 1 are pushed
...     second = stream.get(1)
>>> first.step, second.step, len(second.batch.groups), second.started_at <= 1
(0, 1, 2, True)
"""

from __future__ import annotations

import copy
import threading
import time
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from gfcr.errors import ConfigError
from gfcr.trainers.pipeline import RolloutPipeline, StepBatch


@dataclass(frozen=True)
class Produced:
    """One step's batch as the generator made it."""

    step: int  # the optimizer step it is for
    batch: StepBatch
    state: dict[str, Any]  # the pipeline's and controller's state after it (`RolloutStream.state`)
    started_at: int  # the policy version when its generation began
    rollout_s: float  # wall seconds its generation took


class RolloutStream:
    """The trainer's step batches, generated on a thread ahead of the updates by at most
    `max_staleness` policy versions (`first_step`: the step, and version, a run starts at)."""

    def __init__(self, pipeline: RolloutPipeline, max_staleness: int, *, first_step: int = 0) -> None:
        if max_staleness < 1:
            raise ConfigError(
                f"a rollout stream runs ahead by max_staleness >= 1 versions, got {max_staleness}; "
                "with 0 the trainer generates each step's batch itself"
            )
        self.pipeline, self.max_staleness = pipeline, max_staleness
        self.version = first_step  # the rollout policy's version: the trainer's step
        self._next = first_step  # the step whose batch is generated next
        self._ready: dict[int, Produced] = {}
        self._error: BaseException | None = None
        self._closed = False
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._generate, name="gfcr-rollouts", daemon=True)
        self.idle_s = 0.0  # seconds the generator waited for the trainer (its staleness bound)

    def __enter__(self) -> RolloutStream:
        self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def start(self) -> None:
        """Begin generating (once)."""
        if not self._thread.is_alive() and not self._closed:
            self._thread.start()

    def get(self, step: int) -> Produced:
        """Step `step`'s batch: waits for it to be made; raises what stopped the generator."""
        with self._changed:
            self._changed.wait_for(lambda: step in self._ready or self._error is not None or self._closed)
            if step in self._ready:
                return self._ready.pop(step)
            if self._error is not None:
                raise self._error
            raise RuntimeError(f"the rollout stream was closed before step {step}'s batch was made")

    def advance(self, version: int) -> None:
        """The rollout policy is at `version` now (the trainer pushed its weights): the generator
        may start the batches that bound allows."""
        with self._changed:
            self.version = version
            self._changed.notify_all()

    def close(self) -> None:
        """Stop generating after the batch being made, and wait for that."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()
        if self._thread.is_alive():
            self._thread.join()

    @property
    def ahead(self) -> int:
        """Batches made and not yet taken."""
        with self._changed:
            return len(self._ready)

    def _allowed(self) -> bool:
        return self._closed or self._next - self.version <= self.max_staleness

    def _generate(self) -> None:
        while True:
            waited = time.perf_counter()
            with self._changed:
                self._changed.wait_for(self._allowed)
                self.idle_s += time.perf_counter() - waited
                if self._closed:
                    return
                step, started_at = self._next, self.version
            started = time.perf_counter()
            try:
                batch = self.pipeline.step()
                state = self.state()
            except BaseException as e:  # the trainer raises it at its next `get`
                with self._changed:
                    self._error = e
                    self._changed.notify_all()
                return
            produced = Produced(step, batch, state, started_at, time.perf_counter() - started)
            with self._changed:
                self._ready[step] = produced
                self._next += 1
                self._changed.notify_all()

    def state(self) -> dict[str, Any]:
        """The pipeline's counters and its controller's state, as a checkpoint saves them."""
        pipeline = self.pipeline
        return copy.deepcopy(
            {"rollouts": pipeline.state_dict(), "controller": pipeline.controller.state_dict()}
        )
