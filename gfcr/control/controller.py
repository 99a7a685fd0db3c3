"""`RolloutController`: the Control stages of a step (choose, allocate, decide), configured by
`ControlConfig` — the trainer's `[control]` table.

It fits `gfcr.core.hooks.Controller` (the runner calls `schedule` once per run and
`after_step` after every step of a live episode) and learns from finished runs through
`observe`:

    controller = RolloutController(ControlConfig(selector="thompson", num_prompts=64, group_size=8))
    runner = Runner(policy, controller=controller)
    result = runner.run(specs)          # schedule(): which prompts, how many samples each
    controller.observe(result.trajectories)  # update per-prompt posteriors for the next run

A pipeline that samples in rounds (dynamic sampling, early stopping) calls `collect(run, task_ids)`
instead: the decide loop, with every configured module composed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from gfcr.control.budget import BudgetScheduler
from gfcr.control.curriculum import Difficulty, DifficultyCurriculum, check_settings
from gfcr.control.dynamic import Batch, DynamicSampling, RunFn, observe
from gfcr.control.posterior import PromptHistory, p_informative
from gfcr.control.selection import (
    SELECTORS,
    GresoSelector,
    PromptSelector,
    SecSelector,
    ThompsonSelector,
    UniformSelector,
    VarianceSelector,
    task_category,
)
from gfcr.control.stopping import EarlyStopping, LengthBudget, PrefixStop
from gfcr.control.temperature import TemperatureBySuccess
from gfcr.core import Trajectory
from gfcr.core.config import setting
from gfcr.core.hooks import Controller, Decision  # the runner's hook contract (Decision re-exported)
from gfcr.errors import ConfigError, UnknownNameError
from gfcr.generate.groups import expand_groups, group_by_task, round_seed
from gfcr.generate.tree import BranchAt

S = TypeVar("S", bound=Any)
CURRICULA = ("none", "band")


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise ConfigError(message)


@dataclass(frozen=True)
class ControlConfig:
    """`[control]`: where compute goes — which prompts, how many samples each, what to stop.

    >>> from gfcr.core.config import from_dict
    >>> config = from_dict(ControlConfig, {"selector": "sec", "sample_budget": 64, "early_stopping": True})
    >>> config.selector, config.sample_budget, config.wave
    ('sec', 64, 2)
    >>> ControlConfig(early_stopping=True, group_size=4, wave=8)
    Traceback (most recent call last):
    ...
    gfcr.errors.ConfigError: wave must be in [1, group_size], got wave = 8 with group_size = 4; lower wave
    """

    # choose: the selector and its parameters
    selector: str = setting("uniform", "Which prompts run: uniform | greso | vcrl | thompson | sec.")
    num_prompts: int | None = setting(None, "Prompts (groups) per step (None: every prompt offered).")
    group_size: int = setting(8, "Samples per prompt, without a budget.")
    seed: int = setting(0, "Seed of Control's draws (prompt choice, Thompson samples) and of sample seeds.")
    prior: tuple[float, float] = setting(
        (1.0, 1.0), "Beta(a, b) prior over each prompt's success rate (VADE's prior)."
    )
    decay: float = setting(
        1.0, "Evidence kept per update, in (0, 1]: < 1 forgets old outcomes as the policy moves (VADE)."
    )
    success_at: float = setting(1.0, "Rewards at or above this count as successes in the posteriors.")
    greso_p_easy: float = setting(
        GresoSelector.p_easy, "GRESO: keep probability per all-correct group in a row (auto-tuned)."
    )
    greso_p_hard: float = setting(
        GresoSelector.p_hard, "GRESO: keep probability per all-wrong group in a row (auto-tuned)."
    )
    greso_target_zero_share: float = setting(
        GresoSelector.target_zero_share, "GRESO: the share of zero-variance groups the tuning aims at."
    )
    greso_step: float = setting(GresoSelector.step, "GRESO: how far each step tunes p_easy and p_hard.")
    greso_p_min: float = setting(GresoSelector.p_min, "GRESO: the lowest keep probability tuning reaches.")
    vcrl_unseen_score: float = setting(
        VarianceSelector.unseen_score, "VCRL: the score of a prompt never seen (1.0: explore it first)."
    )
    sec_temperature: float = setting(
        SecSelector.temperature, "SEC: Boltzmann temperature over the categories' values (lower: greedier)."
    )
    sec_step_size: float = setting(
        SecSelector.step_size,
        "SEC: TD(0) step size of a category's value (higher: recent rounds weigh more).",
    )
    curriculum: str = setting(
        "none", "Difficulty curriculum: none | band (each category's level moves with its success)."
    )
    curriculum_band: tuple[float, float] = setting(
        (0.2, 0.8),
        "Curriculum: success at or above the top raises a category's level, at or below the bottom lowers it "
        "(per category, over its window).",
    )
    curriculum_window: int = setting(
        8, "Curriculum: a category's success is measured over its last groups, this many."
    )
    curriculum_min_groups: int = setting(4, "Curriculum: groups measured at a level before it may move.")
    curriculum_start_level: int = setting(
        1, "Curriculum: the level each category starts at (1: the easiest)."
    )
    # allocate: samples and sampling settings per prompt
    sample_budget: int | None = setting(
        None, "Samples per num_prompts prompts, allocated by uncertainty (BudgetScheduler)."
    )
    token_budget: int | None = setting(None, "Or expected response tokens per num_prompts prompts.")
    min_samples: int = setting(2, "Under a budget: samples of a prompt that gets any.")
    max_samples: int = setting(32, "Under a budget: samples of one prompt at most.")
    uncertainty_weight: float = setting(
        0.0,
        "Under a budget: w > 0 gives prompts whose last groups' answers scattered in meaning more "
        "samples (value × (1 + w · normalised semantic entropy)); 0: off.",
    )
    temperature_solved: float | None = setting(
        None, "Temperature of prompts the posterior calls solved (hotter finds failures; None: the runner's)."
    )
    temperature_unsolved: float | None = setting(
        None, "Temperature of prompts it calls rarely solved (cooler finds successes; None: the runner's)."
    )
    solved_above: float = setting(0.8, "Posterior mean success at or above which a prompt is solved.")
    unsolved_below: float = setting(0.2, "Posterior mean success at or below which it is rarely solved.")
    # decide: during and after generation
    prefix_signal: str | None = setting(
        None, "Stop an episode when this step signal (e.g. process_score) drops below prefix_threshold."
    )
    prefix_threshold: float = setting(0.5, "The threshold of prefix_signal (1.0 with a boolean signal).")
    max_length: int | None = setting(
        None, "Stop an episode whose response outgrows this (policy tokens; characters without token data)."
    )
    length_factor: float | None = setting(
        None, "Or this × the prompt's shortest correct response, if smaller (needs max_length)."
    )
    dynamic_sampling: bool = setting(
        False, "DAPO: drop groups whose rewards are all equal and refill with fresh prompts, in rounds."
    )
    oversample: float = setting(
        1.5, "Dynamic sampling: each round samples ceil(missing × oversample) prompts."
    )
    max_rounds: int = setting(8, "Dynamic sampling: rounds per step at most (the batch may be short).")
    early_stopping: bool = setting(
        False, "Draw groups in waves; stop (and drop) a prompt once its samples and posterior agree."
    )
    wave: int = setting(2, "Early stopping: samples per prompt per wave.")
    confidence: float = setting(
        0.9, "Early stopping and pruning: the posterior probability of no spread that decides a prompt."
    )
    prune: bool = setting(False, "Do not branch episodes of decided prompts (tree rollouts).")
    branch_at: dict[int, int] = setting(
        default_factory=dict, help="Turn -> extra copies of a live episode after it (tree rollouts)."
    )

    def __post_init__(self) -> None:
        if self.selector not in SELECTORS:
            raise UnknownNameError("selector", self.selector, SELECTORS, hint="Set selector to one of them")
        self._check_choose()
        self._check_allocate()
        self._check_decide()

    def _check_choose(self) -> None:
        _require(self.group_size >= 1, f"group_size must be >= 1, got {self.group_size}")
        _require(
            self.num_prompts is None or self.num_prompts >= 1,
            f"num_prompts must be >= 1 (or unset: every prompt), got {self.num_prompts}",
        )
        _require(min(self.prior) > 0, f"prior (Beta a, b) must both be > 0, got {self.prior}")
        _require(0.0 < self.decay <= 1.0, f"decay must be in (0, 1] (1: never forget), got {self.decay}")
        for key in ("greso_p_easy", "greso_p_hard", "greso_target_zero_share", "greso_step", "greso_p_min"):
            _require(0.0 <= getattr(self, key) <= 1.0, f"{key} must be in [0, 1], got {getattr(self, key)}")
        if self.curriculum not in CURRICULA:
            raise UnknownNameError(
                "curriculum", self.curriculum, CURRICULA, hint="Set curriculum to one of them"
            )
        check_settings(
            self.curriculum_band,
            self.curriculum_window,
            self.curriculum_min_groups,
            self.curriculum_start_level,
        )
        _require(self.sec_temperature > 0, f"sec_temperature must be > 0, got {self.sec_temperature}")
        _require(
            0.0 < self.sec_step_size <= 1.0, f"sec_step_size must be in (0, 1], got {self.sec_step_size}"
        )
        for key, on in (
            ("selector = 'thompson'", self.selector == "thompson"),
            ("dynamic_sampling", self.dynamic_sampling),
            ("early_stopping", self.early_stopping),
            ("prune", self.prune),
        ):
            _require(
                not on or self.group_size >= 2,
                f"{key} needs group_size >= 2 (it judges a group's reward spread), got {self.group_size}",
            )

    def _check_allocate(self) -> None:
        _require(
            self.sample_budget is None or self.token_budget is None,
            "sample_budget and token_budget are both set; keep one",
        )
        for key in ("sample_budget", "token_budget"):
            value = getattr(self, key)
            _require(value is None or value >= 1, f"{key} must be >= 1 (or unset), got {value}")
        _require(
            2 <= self.min_samples <= self.max_samples,
            f"need 2 <= min_samples <= max_samples, got {self.min_samples} and {self.max_samples}",
        )
        weight = self.uncertainty_weight
        _require(weight >= 0, f"uncertainty_weight must be >= 0 (0: off), got {weight}")
        _require(
            not weight or self.sample_budget is not None or self.token_budget is not None,
            f"uncertainty_weight = {weight} weighs a budget's allocation, but no budget is "
            "set (every prompt gets group_size samples); set sample_budget or token_budget",
        )
        self.temperature_rule()  # validates its four keys

    def _check_decide(self) -> None:
        _require(
            self.max_length is not None or self.length_factor is None,
            "length_factor needs max_length (the budget of a prompt never solved); set max_length",
        )
        _require(
            self.max_length is None or self.max_length >= 1, f"max_length must be >= 1, got {self.max_length}"
        )
        _require(
            self.length_factor is None or self.length_factor >= 1.0,
            f"length_factor must be >= 1, got {self.length_factor}",
        )
        _require(self.oversample >= 1.0, f"oversample must be >= 1.0 (1.0: none), got {self.oversample}")
        _require(self.max_rounds >= 1, f"max_rounds must be >= 1, got {self.max_rounds}")
        _require(0.0 < self.confidence < 1.0, f"confidence must be in (0, 1), got {self.confidence}")
        _require(
            not self.early_stopping or 1 <= self.wave <= self.group_size,
            f"wave must be in [1, group_size], got wave = {self.wave} with group_size = {self.group_size}; "
            "lower wave",
        )
        try:  # a TOML table's keys are strings: {1 = 2} reads as {"1": 2}
            turns = {int(turn): int(copies) for turn, copies in self.branch_at.items()}
        except (TypeError, ValueError) as e:
            raise ConfigError(
                f"branch_at maps turns to copies, both integers (e.g. {{1 = 2}}), got {self.branch_at}"
            ) from e
        BranchAt(turns)  # turns >= 1, copies >= 0
        object.__setattr__(self, "branch_at", turns)  # frozen: set once, here

    def temperature_rule(self) -> TemperatureBySuccess:
        """The per-prompt temperature rule of the allocate stage."""
        return TemperatureBySuccess(
            self.temperature_solved, self.temperature_unsolved, self.solved_above, self.unsolved_below
        )


def make_selector(config: ControlConfig, category: Callable[[str], str] = task_category) -> PromptSelector:
    """The selector `config` names, with its parameters (`category`: SEC's task id -> category).

    >>> make_selector(ControlConfig(selector="greso", greso_p_easy=0.2)).p_easy
    0.2
    """
    match config.selector:
        case "greso":
            return GresoSelector(
                config.greso_p_easy, config.greso_p_hard, config.greso_target_zero_share, config.greso_step,
                config.greso_p_min,
            )  # fmt: skip
        case "vcrl":
            return VarianceSelector(config.vcrl_unseen_score)
        case "thompson":
            return ThompsonSelector(config.group_size)
        case "sec":
            return SecSelector(config.sec_temperature, config.sec_step_size, category)
    return UniformSelector()


class RolloutController(Controller):
    """Chooses prompts and sample counts, and stops or branches episodes, as configured.

    `category` maps a task id to its category for SEC (default: `task_category`, the id up to
    its last '/' or ':'); a pipeline that knows its tasks better (a database, a generator in the
    task's metadata) passes its own. `difficulties` (task id -> category and level,
    `task_difficulty`) is what `curriculum = "band"` needs: a `DifficultyCurriculum` then
    restricts every choice to each category's current level and moves the levels after each step.

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

    def __init__(
        self,
        config: ControlConfig | None = None,
        history: PromptHistory | None = None,
        *,
        category: Callable[[str], str] = task_category,
        difficulties: Mapping[str, Difficulty] | None = None,
    ) -> None:
        self.config = config = config or ControlConfig()
        self.history = history or PromptHistory(config.prior, config.decay, config.success_at)
        self.selector = make_selector(config, category)
        self.budget = BudgetScheduler(
            config.min_samples, config.max_samples, uncertainty_weight=config.uncertainty_weight
        )
        self.temperature = config.temperature_rule()
        self.stopping = (
            EarlyStopping(config.group_size, config.wave, config.confidence)
            if config.early_stopping
            else None
        )
        self.prefix = (
            PrefixStop(config.prefix_signal, config.prefix_threshold) if config.prefix_signal else None
        )
        self.length = LengthBudget(config.max_length, config.length_factor) if config.max_length else None
        self.branching = BranchAt(config.branch_at)
        self.rng = np.random.default_rng(config.seed)
        self.runs = 0
        self.curriculum = (
            DifficultyCurriculum(
                difficulties or {},
                band=config.curriculum_band,
                window=config.curriculum_window,
                min_groups=config.curriculum_min_groups,
                start_level=config.curriculum_start_level,
                success_at=config.success_at,
            )
            if config.curriculum == "band"
            else None
        )

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
        if hasattr(self.selector, "state_dict"):  # GRESO's tuned probabilities, SEC's arm values
            state["selector"] = self.selector.state_dict()
        if self.curriculum is not None:
            state["curriculum"] = self.curriculum.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from `state_dict()`'s output (the config is the constructor's, not restored)."""
        self.history.load_state_dict(state["history"])
        self.rng.bit_generator.state = state["rng"]
        self.runs = int(state["runs"])
        if "selector" in state and hasattr(self.selector, "load_state_dict"):
            self.selector.load_state_dict(state["selector"])
        if "curriculum" in state and self.curriculum is not None:
            self.curriculum.load_state_dict(state["curriculum"])

    def allocate(self, chosen: Sequence[str], share: float = 1.0) -> dict[str, int]:
        """Samples per chosen prompt: a budget's `share` (a round that chose `share` × num_prompts
        prompts gets that share) allocated by uncertainty, else `group_size` each."""
        config = self.config
        if config.sample_budget is not None:
            return self.budget.allocate(chosen, self.history, samples=round(config.sample_budget * share))
        if config.token_budget is not None:
            plan = self.budget.allocate(chosen, self.history, tokens=config.token_budget * share)
            if share == 1.0 and chosen and not any(plan.values()):  # a whole budget that buys nothing
                cheapest = min(self.history.get(t).mean_length or self.budget.default_length for t in chosen)
                raise ConfigError(
                    f"[control] token_budget = {config.token_budget} buys no sample: a prompt's group needs "
                    f"min_samples = {config.min_samples} samples of its mean response length (the cheapest "
                    f"chosen prompt's: {cheapest:g} tokens; {self.budget.default_length:g} before any is "
                    f"seen); raise token_budget to at least {config.min_samples * cheapest:g}"
                )
            return plan
        return dict.fromkeys(chosen, config.group_size)

    def candidates(self, task_ids: Sequence[str]) -> list[str]:
        """The prompts a step chooses from: with a curriculum, those at their category's level."""
        return self.curriculum.candidates(task_ids) if self.curriculum is not None else list(task_ids)

    def plan(self, task_ids: Sequence[str]) -> dict[str, int]:
        """Samples per selected prompt for the next run."""
        task_ids = self.candidates(task_ids)
        num = self.config.num_prompts or len(task_ids)
        return self.allocate(self.selector.select(task_ids, num, self.history, self.rng))

    def collect(self, run: RunFn, task_ids: Sequence[str], samples_left: int | None = None) -> Batch:
        """The decide loop over `task_ids`: choose → allocate → draw (in waves with early
        stopping) → keep, in rounds while dynamic sampling refills dropped groups; every group
        drawn is recorded in the history (and taught to a learning selector).

        `run(plan)` generates `plan[t]` fresh samples of each task (with the runner:
        `runner.run(controller.episodes(templates, plan, seed=...)).trajectories`). `samples_left`:
        the run's unspent sample budget, which no round passes (`DynamicSampling.collect`).

        >>> from gfcr.workloads import BernoulliPrompts
        >>> env = BernoulliPrompts([0.0] * 4 + [0.5] * 4, seed=0)
        >>> controller = RolloutController(ControlConfig(num_prompts=3, group_size=4, dynamic_sampling=True,
        ...                                              early_stopping=True, sample_budget=12))
        >>> batch = controller.collect(env.run, env.task_ids)
        >>> len(batch.groups), batch.rounds > 1, batch.samples == env.samples
        (3, True, True)
        """
        config = self.config
        task_ids = self.candidates(task_ids)
        if not task_ids:
            return Batch()
        drawn: list[Trajectory] = []  # every group drawn, dropped ones too: what the curriculum measures

        def run_and_record(plan: Mapping[str, int]) -> Sequence[Trajectory]:
            trajectories = run(plan)
            drawn.extend(trajectories)
            return trajectories

        num_groups = min(config.num_prompts or len(task_ids), len(task_ids))
        rounds = DynamicSampling(
            num_groups,
            config.group_size,
            oversample=config.oversample if config.dynamic_sampling else 1.0,
            max_rounds=config.max_rounds if config.dynamic_sampling else 1,
            filter_groups=config.dynamic_sampling,
            selector=self.selector,
        )
        batch = rounds.collect(
            run_and_record,
            task_ids,
            self.history,
            self.rng,
            allocate=lambda chosen: self.allocate(chosen, len(chosen) / num_groups),
            sampler=self.stopping,
            samples_left=samples_left,
        )
        self._measure(drawn)
        return batch

    def _measure(self, trajectories: Iterable[Trajectory]) -> None:
        """The curriculum's update from the step's groups (their rewards), if there is one."""
        if self.curriculum is not None:
            groups = group_by_task(trajectories)
            self.curriculum.update({task_id: [t.reward for t in group] for task_id, group in groups.items()})

    def episodes(self, templates: Sequence[S], plan: int | Mapping[str, int], *, seed: int) -> list[S]:
        """The episode specs of `plan` (`expand_groups`: samples of each task from its template,
        seeded from `seed`), each with the sampling settings Control chose for its prompt."""
        specs = expand_groups(templates, plan, seed=seed)
        overrides = {s.task_id: self.temperature.sampling(self.history.get(s.task_id)) for s in specs}
        return [
            dataclasses.replace(s, sampling={**s.sampling, **overrides[s.task_id]})
            if overrides[s.task_id]
            else s
            for s in specs
        ]

    def schedule(self, episodes: list[S]) -> list[S]:
        """Runner hook: the episodes of this run, K per chosen prompt (fresh seeds every run)."""
        task_ids = list(dict.fromkeys(spec.task_id for spec in episodes))
        seed = round_seed(self.config.seed, self.runs)  # distinct sample seeds from run to run
        self.runs += 1
        return self.episodes(episodes, self.plan(task_ids), seed=seed)

    def decided(self, task_id: str) -> bool:
        """Whether the posterior says a group of `group_size` of this prompt would have no reward
        spread with probability >= `confidence`: sampling it more, or branching it, teaches little.

        >>> controller = RolloutController(ControlConfig(group_size=4))
        >>> controller.history.update("solved", [1.0] * 64)  # P(4 more all right) = 65/69
        >>> controller.decided("solved"), controller.decided("unseen")
        (True, False)
        """
        stats = self.history.get(task_id)
        return 1.0 - p_informative(stats.alpha, stats.beta, self.config.group_size) >= self.config.confidence

    def pruned(self, task_id: str) -> bool:
        """Whether tree rollouts skip branching this prompt: `prune` is on and the prompt is decided."""
        return self.config.prune and self.decided(task_id)

    def after_step(self, trajectory: Trajectory) -> Decision:
        """Runner hook: stop a failed prefix or an over-long response; branch at configured turns
        (not a decided prompt's, when pruning)."""
        stop = (self.prefix is not None and self.prefix.stop(trajectory)) or (
            self.length is not None and self.length.stop(trajectory, self.history)
        )
        branch = not stop and not self.pruned(trajectory.task_id)
        return Decision(stop=stop, branches=self.branching.branches(trajectory) if branch else 0)

    def observe(self, trajectories: Iterable[Trajectory]) -> None:
        """Learn from a finished run: each prompt's group outcome updates its posterior (and a
        learning selector: SEC's category values; a curriculum's measured success)."""
        trajectories = list(trajectories)
        observe(self.history, group_by_task(trajectories), self.selector)
        self._measure(trajectories)
