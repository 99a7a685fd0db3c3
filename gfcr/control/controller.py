"""`RolloutController`: the Control module as the runner's hook, configured by `ControlConfig`.

It fits `gfcr.core.hooks.Controller` (the runner calls `schedule` once per run and
`after_step` after every step of a live episode) and learns from finished runs through
`observe`:

    controller = RolloutController(ControlConfig(selector="thompson", num_prompts=64, group_size=8))
    runner = Runner(policy, controller=controller)
    result = runner.run(specs)          # schedule(): which prompts, how many samples each
    controller.observe(result.trajectories)  # update per-prompt posteriors for the next run
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from gfcr.control.budget import BudgetScheduler
from gfcr.control.dynamic import observe
from gfcr.control.posterior import PromptHistory
from gfcr.control.selection import SELECTORS, PromptSelector, ThompsonSelector
from gfcr.control.stopping import LengthBudget, PrefixStop
from gfcr.core import Trajectory
from gfcr.core.hooks import Controller, Decision  # the runner's hook contract (Decision re-exported)
from gfcr.errors import ConfigError, UnknownNameError
from gfcr.generate.groups import expand_groups, group_by_task
from gfcr.generate.tree import BranchAt

S = TypeVar("S", bound=Any)


@dataclass(frozen=True)
class ControlConfig:
    """Control's knobs; every field is optional except what a run needs."""

    selector: str = "uniform"  # "uniform" | "greso" | "vcrl" | "thompson": which prompts run
    num_prompts: int | None = None  # prompts per run (None: every prompt of the specs)
    group_size: int = 8  # samples per prompt, without a budget
    sample_budget: int | None = None  # total samples per run, allocated by uncertainty
    token_budget: int | None = None  # or total expected tokens per run
    min_samples: int = 2  # per selected prompt, under a budget
    max_samples: int = 32  # per prompt, under a budget
    prefix_signal: str | None = None  # stop an episode when this step signal drops below…
    prefix_threshold: float = 0.5  # …this value (e.g. "process_score", or "format_ok" with 1.0)
    max_length: int | None = None  # stop an episode whose response outgrows this (tokens or chars)
    length_factor: float | None = None  # …or this × the prompt's shortest correct response
    branch_at: dict[int, int] = field(default_factory=dict)  # turn -> extra copies (tree rollouts)
    prior: tuple[float, float] = (1.0, 1.0)  # Beta prior over each prompt's success rate
    decay: float = 1.0  # evidence kept per update (VADE-style forgetting when < 1)
    success_at: float = 1.0  # rewards at or above this are successes
    seed: int = 0

    def __post_init__(self) -> None:
        if self.selector not in SELECTORS:
            raise UnknownNameError("selector", self.selector, SELECTORS)
        if self.sample_budget is not None and self.token_budget is not None:
            raise ConfigError("give sample_budget or token_budget, not both")
        if self.group_size < 1 or (self.num_prompts is not None and self.num_prompts < 1):
            raise ConfigError(
                f"group_size and num_prompts must be >= 1, got {self.group_size}, {self.num_prompts}"
            )
        BranchAt(self.branch_at)  # validates the branch table
        if self.max_length is None and self.length_factor is not None:
            raise ConfigError("length_factor needs max_length (the budget of a prompt never solved)")


class RolloutController(Controller):
    """Chooses prompts and sample counts, and stops or branches episodes, as configured.

    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Spec:
    ...     task_id: str
    ...     seed: int | None = None
    ...     sample: int = 0
    >>> controller = RolloutController(ControlConfig(num_prompts=2, group_size=3))
    >>> specs = controller.schedule([Spec("a"), Spec("b"), Spec("c")])
    >>> len(specs), len({s.task_id for s in specs})
    (6, 2)
    """

    def __init__(self, config: ControlConfig | None = None, history: PromptHistory | None = None) -> None:
        self.config = config = config or ControlConfig()
        self.history = history or PromptHistory(config.prior, config.decay, config.success_at)
        self.selector: PromptSelector = (
            ThompsonSelector(config.group_size)
            if config.selector == "thompson"
            else SELECTORS[config.selector]()
        )
        self.budget = BudgetScheduler(config.min_samples, max(config.min_samples, config.max_samples))
        self.prefix = (
            PrefixStop(config.prefix_signal, config.prefix_threshold) if config.prefix_signal else None
        )
        self.length = LengthBudget(config.max_length, config.length_factor) if config.max_length else None
        self.branching = BranchAt(config.branch_at)
        self.rng = np.random.default_rng(config.seed)
        self.runs = 0

    def state_dict(self) -> dict[str, Any]:
        """Everything the controller has learnt or drawn, as plain data (a checkpoint's part):
        its prompt history, its RNG, its run counter and its selector's own state.

        A fresh controller with the same config that loads it schedules what this one would:

        >>> from gfcr.core import EnvConfig, EpisodeSpec
        >>> specs = [EpisodeSpec(EnvConfig("gfcr/Math-v0"), f"q{i}") for i in range(10)]
        >>> controller = RolloutController(ControlConfig(selector="thompson", num_prompts=2, group_size=2))
        >>> _ = controller.schedule(specs)
        >>> resumed = RolloutController(ControlConfig(selector="thompson", num_prompts=2, group_size=2))
        >>> resumed.load_state_dict(controller.state_dict())
        >>> resumed.schedule(specs) == controller.schedule(specs)
        True
        """
        state: dict[str, Any] = {
            "history": self.history.state_dict(),
            "rng": self.rng.bit_generator.state,
            "runs": self.runs,
        }
        if hasattr(self.selector, "state_dict"):  # GRESO adapts its keep probabilities
            state["selector"] = self.selector.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from `state_dict()`'s output (the config is the constructor's, not restored)."""
        self.history.load_state_dict(state["history"])
        self.rng.bit_generator.state = state["rng"]
        self.runs = int(state["runs"])
        if "selector" in state and hasattr(self.selector, "load_state_dict"):
            self.selector.load_state_dict(state["selector"])

    def plan(self, task_ids: Sequence[str]) -> dict[str, int]:
        """Samples per selected prompt for the next run."""
        config = self.config
        chosen = self.selector.select(
            list(task_ids), config.num_prompts or len(task_ids), self.history, self.rng
        )
        if config.sample_budget is not None:
            return self.budget.allocate(chosen, self.history, samples=config.sample_budget)
        if config.token_budget is not None:
            return self.budget.allocate(chosen, self.history, tokens=config.token_budget)
        return dict.fromkeys(chosen, config.group_size)

    def schedule(self, episodes: list[S]) -> list[S]:
        """Runner hook: the episodes of this run, K per chosen prompt (fresh seeds every run)."""
        task_ids = list(dict.fromkeys(spec.task_id for spec in episodes))
        seed = self.config.seed + 100_003 * self.runs  # distinct sample seeds from run to run
        self.runs += 1
        return expand_groups(episodes, self.plan(task_ids), seed=seed)

    def after_step(self, trajectory: Trajectory) -> Decision:
        """Runner hook: stop a failed prefix or an over-long response; branch at configured turns."""
        stop = (self.prefix is not None and self.prefix.stop(trajectory)) or (
            self.length is not None and self.length.stop(trajectory, self.history)
        )
        return Decision(stop=stop, branches=0 if stop else self.branching.branches(trajectory))

    def observe(self, trajectories: Iterable[Trajectory]) -> None:
        """Learn from a finished run: each prompt's group outcome updates its posterior."""
        observe(self.history, group_by_task(trajectories))
