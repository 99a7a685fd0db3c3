"""Control as the trainer's `[control]` table: every knob from a dict config through
`RolloutController`, the decide loop composing dynamic sampling, early stopping, budgets and any
selector, SEC's bandit, pruning, and per-prompt sampling settings."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from gfcr.agents import Runner, RunnerConfig, episodes_for_env
from gfcr.control import (
    SELECTORS,
    ControlConfig,
    GresoSelector,
    PromptHistory,
    RolloutController,
    SecSelector,
    ThompsonSelector,
    VarianceSelector,
    is_informative,
    task_category,
)
from gfcr.core import Step, Trajectory
from gfcr.core.config import from_dict
from gfcr.core.policy import Completion, SamplingParams
from gfcr.errors import ConfigError
from gfcr.workloads import BernoulliPrompts


def controller(table: dict, history: PromptHistory | None = None, **kwargs) -> RolloutController:
    """A controller built from a `[control]` table, as the trainer builds it from TOML."""
    return RolloutController(from_dict(ControlConfig, table, "control"), history, **kwargs)


def informed_history(env: BernoulliPrompts, groups: int, seed: int = 1) -> PromptHistory:
    """Each prompt's posterior after `groups` groups of 8 drawn from its true success rate."""
    history, rng = PromptHistory(), np.random.default_rng(seed)
    for task_id, p in env.probs.items():
        for _ in range(groups):
            history.update(task_id, list((rng.random(8) < p).astype(float)))
    return history


class Recorder:
    """A RunFn over `env` that keeps every plan it was given."""

    def __init__(self, env: BernoulliPrompts) -> None:
        self.env, self.plans = env, []

    def __call__(self, plan):
        self.plans.append(dict(plan))
        return self.env.run(plan)


def test_every_selector_is_built_with_its_parameters_from_the_table():
    greso = controller({"selector": "greso", "greso_p_easy": 0.2, "greso_p_hard": 0.3,
                        "greso_target_zero_share": 0.1, "greso_step": 0.05, "greso_p_min": 0.01})  # fmt: skip
    assert isinstance(greso.selector, GresoSelector)
    assert (greso.selector.p_easy, greso.selector.p_hard, greso.selector.target_zero_share) == (0.2, 0.3, 0.1)
    assert (greso.selector.step, greso.selector.p_min) == (0.05, 0.01)
    vcrl = controller({"selector": "vcrl", "vcrl_unseen_score": 0.0})
    assert isinstance(vcrl.selector, VarianceSelector) and vcrl.selector.unseen_score == 0.0
    thompson = controller({"selector": "thompson", "group_size": 4, "prior": [2.0, 3.0], "decay": 0.5})
    assert isinstance(thompson.selector, ThompsonSelector) and thompson.selector.group_size == 4
    assert thompson.history.prior == (2.0, 3.0) and thompson.history.decay == 0.5  # VADE's prior, forgetting
    sec = controller({"selector": "sec", "sec_temperature": 0.3, "sec_step_size": 0.2})
    assert isinstance(sec.selector, SecSelector)
    assert (sec.selector.temperature, sec.selector.step_size) == (0.3, 0.2)
    assert set(SELECTORS) == {"uniform", "greso", "vcrl", "thompson", "sec"}


def test_decide_knobs_reach_their_modules_from_the_table():
    c = controller({"sample_budget": 20, "min_samples": 3, "max_samples": 5, "prefix_signal": "on_track",
                    "prefix_threshold": 1.0, "max_length": 50, "length_factor": 2.0, "early_stopping": True,
                    "wave": 3, "confidence": 0.8, "branch_at": {"1": 2}})  # fmt: skip
    assert (c.budget.min_samples, c.budget.max_samples) == (3, 5)
    assert (c.prefix.key, c.prefix.threshold) == ("on_track", 1.0)
    assert (c.length.max_length, c.length.factor) == (50, 2.0)
    assert (c.stopping.wave, c.stopping.confidence) == (3, 0.8)
    assert c.config.branch_at == {1: 2}  # TOML's string keys read as turns
    off_track = Trajectory("e", "t", "?", [Step("x", "", 0.0, False, False, {"on_track": False})])
    assert c.after_step(off_track).stop
    too_long = Trajectory("e", "t", "?", [Step("x" * 60, "", 0.0, False, False, {"on_track": True})])
    assert c.after_step(too_long).stop
    short = Trajectory("e", "t", "?", [Step("x", "", 0.0, False, False, {"on_track": True})])
    assert c.after_step(short) == type(c.after_step(short))(stop=False, branches=2)


@pytest.mark.parametrize(
    ("table", "names"),
    [
        ({"selector": "thmpson"}, "did you mean 'thompson'"),
        ({"sample_budget": 10, "token_budget": 10}, "sample_budget and token_budget"),
        ({"greso_p_easy": 1.5}, "greso_p_easy must be in"),
        ({"sec_temperature": 0}, "sec_temperature must be > 0"),
        ({"decay": 0.0}, "decay must be in"),
        ({"min_samples": 5, "max_samples": 3}, "min_samples <= max_samples"),
        ({"length_factor": 2.0}, "length_factor needs max_length"),
        ({"early_stopping": True, "group_size": 4, "wave": 8}, "wave must be in"),
        ({"dynamic_sampling": True, "group_size": 1}, "dynamic_sampling needs group_size >= 2"),
        ({"oversample": 0.5}, "oversample must be >= 1"),
        ({"temperature_solved": -1.0}, "temperature_solved must be >= 0"),
        ({"solved_above": 0.1, "unsolved_below": 0.2}, "unsolved_below < solved_above"),
        ({"branch_at": {"first": 1}}, "branch_at maps turns to copies"),
        ({"wave_size": 2}, "did you mean 'wave'"),
    ],
)
def test_bad_tables_are_config_errors_that_name_the_key(table, names):
    with pytest.raises(ConfigError, match=r"^\[control\].*" + names.replace("(", r"\(").replace("[", r"\[")):
        from_dict(ControlConfig, table, "control")


def test_dynamic_sampling_refills_the_groups_early_stopping_dropped():
    probs = [0.0] * 20 + [1.0] * 20 + [0.5] * 20
    env = BernoulliPrompts(probs, seed=4)
    history = informed_history(env, groups=8)  # decided prompts stop after one wave
    run = Recorder(env)
    c = controller({"num_prompts": 8, "group_size": 8, "dynamic_sampling": True, "max_rounds": 20,
                    "early_stopping": True, "wave": 2, "seed": 0}, history)  # fmt: skip
    batch = c.collect(run, env.task_ids)
    assert len(batch.groups) == 8 and all(len(g) == 8 for g in batch.groups.values())
    assert all(is_informative([t.total_reward for t in g]) for g in batch.groups.values())
    assert batch.stopped and {env.probs[t] for t in batch.stopped} <= {0.0, 1.0}
    assert batch.refilled > 0 and batch.rounds > 1  # what early stopping dropped, later rounds refilled
    assert batch.saved == sum(8 - drawn for drawn in batch.stopped.values())
    assert batch.samples == env.samples == sum(batch.allocated.values()) - batch.saved
    assert batch.runs == len(run.plans) and all(n <= 2 for plan in run.plans for n in plan.values())  # waves
    assert all(history.get(t).groups == 8 + 1 for t in batch.allocated)  # every group drawn is recorded


def test_without_dynamic_sampling_early_stopped_groups_are_dropped_not_refilled():
    env = BernoulliPrompts([0.0] * 10 + [0.5] * 10, seed=2)
    c = controller({"num_prompts": 20, "group_size": 8, "early_stopping": True}, informed_history(env, 8))
    batch = c.collect(env.run, env.task_ids)
    assert batch.rounds == 1 and batch.refilled == 0
    assert len(batch.groups) + len(batch.stopped) == 20 and len(batch.stopped) >= 8


def test_a_sample_budget_is_shared_between_dynamic_samplings_rounds():
    probs = [0.0] * 30 + [0.5] * 10
    env = BernoulliPrompts(probs, seed=1)
    run = Recorder(env)
    c = controller({"num_prompts": 4, "sample_budget": 16, "min_samples": 2, "max_samples": 8,
                    "dynamic_sampling": True, "oversample": 1.0, "max_rounds": 30}, informed_history(env, 1))  # fmt: skip
    batch = c.collect(run, env.task_ids)
    assert len(batch.groups) == 4 and batch.rounds > 1
    assert sum(run.plans[0].values()) == 16  # the first round chose num_prompts prompts: the whole budget
    assert all(2 <= n <= 8 for plan in run.plans for n in plan.values())
    # every round spends its prompts' share of the budget, 16 × chosen / 4: 4 samples per prompt chosen
    assert sum(batch.allocated.values()) == 4 * len(batch.allocated)


@pytest.mark.parametrize("selector", sorted(SELECTORS))
@pytest.mark.parametrize("budget", [{}, {"sample_budget": 24}, {"token_budget": 5000}])
def test_any_selector_combines_with_any_budget_and_both_decide_modules(selector, budget):
    env = BernoulliPrompts([0.0] * 8 + [1.0] * 8 + [0.5] * 8, seed=3)
    table = {"selector": selector, "num_prompts": 6, "group_size": 4, "dynamic_sampling": True,
             "early_stopping": True, **budget}  # fmt: skip
    c = controller(table, informed_history(env, 2))
    for _ in range(2):  # the second step sees what the first taught (GRESO's tuning, SEC's values)
        batch = c.collect(env.run, env.task_ids)
        assert 0 < len(batch.groups) <= 6
        assert all(is_informative([t.total_reward for t in g]) for g in batch.groups.values())
        assert batch.samples == sum(batch.allocated.values()) - batch.saved


def test_max_rounds_and_oversample_shape_the_rounds():
    env = BernoulliPrompts([0.0] * 40 + [0.5] * 4, seed=0)
    run = Recorder(env)
    batch = controller({"num_prompts": 4, "group_size": 4, "dynamic_sampling": True, "oversample": 2.0,
                        "max_rounds": 2, "seed": 1}).collect(run, env.task_ids)  # fmt: skip
    assert batch.rounds == 2 and len(run.plans[0]) == 8  # ceil(4 missing × 2.0)
    assert len(batch.groups) < 4  # two rounds over mostly hopeless prompts: a short batch


def test_sec_moves_toward_the_category_whose_groups_have_spread():
    first, last = [], []
    for seed in range(20):
        env = BernoulliPrompts([0.5] * 10 + [1.0] * 10, seed=seed)
        spread = {t for t, p in env.probs.items() if p == 0.5}
        c = controller({"selector": "sec", "num_prompts": 4, "group_size": 8, "sec_temperature": 0.2, "seed": seed},
                       category=lambda t, spread=spread: "mixed" if t in spread else "solved")  # fmt: skip
        shares = []
        for _ in range(12):
            batch = c.collect(env.run, env.task_ids)
            shares.append(np.mean([t in spread for t in batch.allocated]))
        values = c.selector.values
        assert values["mixed"] > 0.5 and values.get("solved", 0.0) == 0.0  # a solved group's |advantage| is 0
        first.append(shares[0])
        last.append(np.mean(shares[-4:]))
        resumed = controller({"selector": "sec", "sec_temperature": 0.2}, category=lambda t: "x")
        resumed.load_state_dict(c.state_dict())
        assert resumed.selector.values == values
    assert min(last) > 0.75 and np.mean(first) < 0.7  # it learnt to pick the mixed category


def test_pruning_skips_branching_decided_prompts():
    history = PromptHistory()
    history.update("solved", [1.0] * 64)
    history.update("open", [1.0, 0.0] * 4)
    c = controller({"prune": True, "branch_at": {"1": 2}, "group_size": 4}, history)
    step = [Step("x", "", 0.0, False, False)]
    assert c.decided("solved") and not c.decided("open")
    assert c.pruned("solved") and not c.pruned("open")
    assert c.after_step(Trajectory("e", "solved", "?", step)).branches == 0
    assert c.after_step(Trajectory("e", "open", "?", step)).branches == 2
    unpruned = controller({"branch_at": {"1": 2}, "group_size": 4}, history)
    assert (
        not unpruned.pruned("solved")
        and unpruned.after_step(Trajectory("e", "solved", "?", step)).branches == 2
    )


class Echo:
    """Answers at once; records each task's request temperature."""

    name, version = "test:echo", "1"

    def __init__(self) -> None:
        self.temperature: dict[str, set[float]] = {}

    def generate(self, requests):
        for r in requests:
            self.temperature.setdefault(r.task.id, set()).add(r.sampling.temperature)
        return [Completion("42") for _ in requests]


def test_the_runner_samples_each_prompt_at_the_temperature_control_chose():
    specs = episodes_for_env("gfcr/Math-v0", 4, kwargs={"split": "MATH500"})
    solved, unsolved, between, unseen = (s.task_id for s in specs)
    history = PromptHistory()
    history.update(solved, [1.0] * 8)  # hotter
    history.update(unsolved, [0.0] * 8)  # cooler
    history.update(between, [1.0, 0.0] * 4)  # the runner's
    c = controller({"group_size": 2, "temperature_solved": 1.3, "temperature_unsolved": 0.5}, history)
    policy = Echo()
    config = RunnerConfig(concurrency=4, sampling=SamplingParams(temperature=0.9))
    result = Runner(policy, config, controller=c).run(specs)
    assert len(result.trajectories) == 8 and all(t.status == "ok" for t in result.trajectories)
    assert policy.temperature == {solved: {1.3}, unsolved: {0.5}, between: {0.9}, unseen: {0.9}}
    planned = c.episodes(specs, {solved: 1, unseen: 1}, seed=0)
    assert [s.sampling for s in planned] == [{"temperature": 1.3}, {}]
    assert dataclasses.replace(planned[0], sampling={}).id == planned[0].id


def test_sec_groups_the_bundled_envs_tasks_by_their_family():
    math = {task_category(s.task_id) for s in episodes_for_env("gfcr/Math-v0", 374, kwargs={"split": "all"})}
    assert math == {"mmath/MATH500", "mmath/AIME2024", "mmath/AIME2025", "mmath/CNMO"}  # the MMATH splits
    sql = {task_category(s.task_id) for s in episodes_for_env("gfcr/SQL-v0", 400)}
    assert sql == {"chinook", "tau2_airline", "tau2_retail"}  # one arm per database
    browser = {task_category(s.task_id) for s in episodes_for_env("gfcr/Browser-v0", 400)}
    assert {"miniwob/click-button", "miniwob/book-flight"} <= browser  # one per page family


def test_a_token_budget_that_buys_no_sample_is_an_error_naming_the_least_that_would():
    env = BernoulliPrompts([0.5] * 4, seed=0)
    c = controller({"num_prompts": 2, "group_size": 4, "token_budget": 40})  # no history: 512 tokens a sample
    with pytest.raises(ConfigError, match=r"token_budget = 40 buys no sample: .* raise token_budget to at least 1024"):
        c.collect(env.run, env.task_ids)
