"""Control: posterior formulas against independent computations, selectors, dynamic sampling,
budgets, early stopping, and the controller driving the real runner."""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from typing import ClassVar

import numpy as np
import pytest

from gfcr.agents import EpisodeSpec, Runner, RunnerConfig
from gfcr.agents.runner.env_host import EnvConfig
from gfcr.agents.runner.episode import turn_seed
from gfcr.control import (
    BudgetScheduler,
    ControlConfig,
    DynamicSampling,
    GresoSelector,
    OffPolicyMix,
    PromptHistory,
    RolloutController,
    ThompsonSelector,
    UniformSelector,
    VarianceSelector,
    beta_moment,
    is_informative,
    p_informative,
)
from gfcr.core import Action, Step, Task, Trajectory
from gfcr.core.config import from_dict
from gfcr.core.policy import Completion, SamplingParams
from gfcr.envs.base import Outcome, TextEnv
from gfcr.envs.tasks import TaskSource
from gfcr.errors import ConfigError
from gfcr.generate import build_tree, expand_groups, group_by_task, tree_advantages
from gfcr.workloads import BernoulliPrompts


def beta_pdf_grid(a: float, b: float, points: int = 200_001) -> tuple[np.ndarray, np.ndarray]:
    p = np.linspace(0.0, 1.0, points)[1:-1]
    log_norm = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    return p, np.exp(log_norm + (a - 1) * np.log(p) + (b - 1) * np.log1p(-p))


@pytest.mark.parametrize(("a", "b", "n"), [(1.0, 1.0, 2), (3.0, 5.0, 8), (0.7, 2.5, 4), (20.0, 1.0, 6)])
def test_beta_formulas_match_numerical_integration(a, b, n):
    p, pdf = beta_pdf_grid(a, b)
    dp = p[1] - p[0]
    assert beta_moment(a, b, n) == pytest.approx(float(np.sum(p**n * pdf) * dp), rel=2e-3)
    informative = float(np.sum((1 - p**n - (1 - p) ** n) * pdf) * dp)
    assert p_informative(a, b, n) == pytest.approx(informative, rel=2e-3, abs=1e-4)


def test_p_informative_matches_simulation_of_groups():
    rng = np.random.default_rng(0)
    p = rng.beta(2.0, 3.0, size=200_000)
    groups = rng.random((200_000, 5)) < p[:, None]
    simulated = np.mean(groups.any(axis=1) & ~groups.all(axis=1))
    assert p_informative(2.0, 3.0, 5) == pytest.approx(simulated, abs=0.005)


def test_history_counts_streaks_lengths_and_decays_toward_the_prior():
    h = PromptHistory(decay=0.5)
    h.update("q", [1.0, 1.0], lengths=[10, 30])
    h.update("q", [1.0, 1.0, 1.0, 1.0], lengths=[20, 20, 20, 20])
    s = h.get("q")
    assert (s.alpha, s.beta) == (1 + 0.5 * 2 + 4, 1.0)
    assert s.zero_variance_streak == 2 and s.best_length == 10 and s.mean_length == pytest.approx(20.0)
    h.update("q", [0.0, 1.0])
    assert h.get("q").zero_variance_streak == 0
    with pytest.raises(ConfigError):
        PromptHistory(decay=0.0)


def informed_history(env: BernoulliPrompts, rounds: int, seed: int = 1) -> PromptHistory:
    history = PromptHistory()
    rng = np.random.default_rng(seed)
    for task_id, p in env.probs.items():
        for _ in range(rounds):
            history.update(task_id, list((rng.random(8) < p).astype(float)))
    return history


def test_informed_selectors_pick_more_informative_prompts_than_uniform():
    probs = [0.0] * 40 + [1.0] * 40 + [0.5] * 20
    env = BernoulliPrompts(probs)
    history = informed_history(env, rounds=2)
    rng = np.random.default_rng(0)

    def share(selector) -> float:
        chosen = selector.select(env.task_ids, 20, history, rng)
        return sum(env.probs[t] == 0.5 for t in chosen) / 20

    assert share(UniformSelector()) < 0.4
    assert share(ThompsonSelector(group_size=8)) >= 0.9
    assert share(VarianceSelector()) >= 0.9
    assert share(GresoSelector(p_easy=0.1, p_hard=0.1)) >= 0.8


def test_greso_adapts_its_skip_probabilities_toward_the_target():
    env = BernoulliPrompts([0.0] * 50 + [0.5] * 50)
    history = informed_history(env, rounds=1)
    selector = GresoSelector(p_hard=0.5, p_easy=0.5, target_zero_share=0.0)
    rng = np.random.default_rng(0)
    for _ in range(5):
        chosen = selector.select(env.task_ids, 30, history, rng)
        for task_id in chosen:
            history.update(task_id, [t.total_reward for t in env.run({task_id: 8})])
    assert selector.p_hard < 0.5  # it kept meeting all-wrong groups, so it skips them more


def test_dynamic_sampling_refills_no_further_than_the_runs_unspent_budget():
    env = BernoulliPrompts([0.0] * 30)  # no group ever has a spread: every round refills
    rounds = DynamicSampling(num_groups=2, group_size=4, oversample=1.5, max_rounds=8)
    batch = rounds.collect(env.run, env.task_ids, PromptHistory(), np.random.default_rng(0), samples_left=20)
    assert (batch.samples, batch.rounds, batch.groups) == (20, 2, {})  # 3 groups, then the 2 that fit
    spent = rounds.collect(env.run, env.task_ids, PromptHistory(), np.random.default_rng(0), samples_left=2)
    assert spent.samples == 4  # a step's first round runs one group however little is left
    free = rounds.collect(env.run, env.task_ids, PromptHistory(), np.random.default_rng(0))
    assert free.samples == 8 * 3 * 4


@pytest.mark.parametrize(
    ("term", "shaping"),
    [("overlong_penalty", [0.0, -0.25, -0.5, -1.0]), ("length", [-0.001, -0.002, -0.004, -0.008])],
)
def test_dynamic_sampling_judges_a_groups_spread_by_its_outcomes_not_its_length_shaping(term, shaping):
    """Regression (found measuring the DAPO recipe): every answer wrong but of different lengths,
    the penalty's spread kept the group, and DAPO trained length alone (22 → 8 tokens) where its
    filter asks for a spread of accuracy. A group length term (ShorterBetter's) is shaping too."""
    outcomes = {"all-wrong": [0.0] * 4, "mixed": [1.0, 0.0, 1.0, 0.0]}

    def run(plan: dict[str, int]) -> list[Trajectory]:
        episodes = []
        for task_id in plan:
            for outcome, part in zip(outcomes[task_id], shaping, strict=True):
                t = Trajectory("e", task_id, "?", [Step("x", "", outcome, True, False)])
                t.reward_terms = {"verifier": outcome, term: part}
                episodes.append(t)
        return episodes

    batch = DynamicSampling(num_groups=2, group_size=4, max_rounds=1, oversample=1.0).collect(
        run, list(outcomes), PromptHistory(), np.random.default_rng(0)
    )
    assert set(batch.groups) == {"mixed"} and batch.dropped == 1
    assert is_informative([t.reward for t in run({"all-wrong": 4})])  # what the filter read before


def test_dynamic_sampling_delivers_no_zero_variance_group_and_refills():
    env = BernoulliPrompts([0.0] * 30 + [1.0] * 30 + [0.5] * 30, seed=3)
    batch = DynamicSampling(num_groups=16, group_size=8, max_rounds=20).collect(
        env.run, env.task_ids, PromptHistory(), np.random.default_rng(0)
    )
    assert len(batch.groups) == 16 and batch.rounds > 1 and batch.dropped > 0
    assert all(is_informative([t.total_reward for t in g]) and len(g) == 8 for g in batch.groups.values())
    assert batch.samples == env.samples
    plain = DynamicSampling(num_groups=16, oversample=1.0, filter_groups=False).collect(
        env.run, env.task_ids, PromptHistory(), np.random.default_rng(0)
    )
    assert plain.rounds == 1 and any(
        not is_informative([t.total_reward for t in g]) for g in plain.groups.values()
    )


def test_budget_scheduler_respects_sample_and_token_budgets_and_favours_uncertainty():
    history = PromptHistory()
    for _ in range(4):
        history.update("solved", [1.0] * 8, lengths=[100] * 8)
        history.update("hopeless", [0.0] * 8, lengths=[1000] * 8)
    history.update("open", [1.0, 0.0], lengths=[100, 100])
    tasks = ["solved", "hopeless", "open", "new"]
    scheduler = BudgetScheduler(min_samples=2, max_samples=12)
    counts = scheduler.allocate(tasks, history, samples=30)
    assert sum(counts.values()) <= 30 and all(v == 0 or 2 <= v <= 12 for v in counts.values())
    assert counts["open"] >= counts["solved"] and counts["new"] >= counts["hopeless"]
    by_tokens = scheduler.allocate(tasks, history, tokens=3000)
    spent = sum(n * (history.get(t).mean_length or 512.0) for t, n in by_tokens.items())
    assert spent <= 3000 and by_tokens["hopeless"] == 0
    with pytest.raises(ConfigError, match="exactly one budget"):
        scheduler.allocate(tasks, history)


def test_early_stopping_saves_samples_and_keeps_the_decisions():
    probs = [0.0] * 40 + [1.0] * 40 + [0.5] * 20
    env = BernoulliPrompts(probs, seed=5)
    history = informed_history(env, rounds=8)  # 64 equal outcomes: strong evidence
    config = from_dict(ControlConfig, {"early_stopping": True, "wave": 2, "confidence": 0.9})
    batch = RolloutController(config, history).collect(env.run, env.task_ids)
    assert batch.samples < 0.5 * 8 * len(probs)  # most zero-variance prompts stop after a wave
    stopped_p = {env.probs[t] for t in batch.stopped}
    assert stopped_p <= {0.0, 1.0}  # only prompts that truly give zero-variance groups stop
    assert batch.saved == sum(8 - drawn for drawn in batch.stopped.values()) > 0
    kept_p = {env.probs[t] for t in batch.groups}
    assert kept_p == {0.5} and len(batch.groups) >= 18  # informative prompts ran full groups
    assert all(len(g) == 8 for g in batch.groups.values())
    assert batch.dropped == len(batch.stopped) and batch.rounds == 1 and batch.runs == 4  # 8 in waves of 2


def test_off_policy_mix_ratio():
    assert OffPolicyMix(0.5).replay_count(8) == 8 and OffPolicyMix(0.0).replay_count(8) == 0
    with pytest.raises(ConfigError):
        OffPolicyMix(1.0)


class CountEnv(TextEnv):
    """Task `n-<k>`: answer "done" after k turns for reward 1; any other action is a step on."""

    signal_defaults: ClassVar[dict[str, float | bool]] = {"format_ok": False, "on_track": True}

    def __init__(self, render_mode: str | None = None) -> None:
        tasks = [Task(f"n-{k}", f"Say go {k} times, then done.", gold=k) for k in range(1, 6)]
        super().__init__(TaskSource.from_tasks("count", tasks), max_turns=10, render_mode=render_mode)

    def respond(self, action: Action) -> Outcome:
        if action.text == "done":
            correct = self.turn == self.task.gold + 1
            return Outcome("ok", 1.0 if correct else 0.0, terminated=True, signals={"format_ok": True})
        return Outcome("go on", signals={"format_ok": True, "on_track": action.text == "go"})


class CountPolicy:
    """Scripted CountEnv player: `say(count, seed, turns_so_far)` is its next action."""

    name, version = "test:count", "1"

    def __init__(self, say) -> None:
        self.say = say

    def generate(self, requests):
        out = []
        for r in requests:
            turns = sum(m.role == "assistant" for m in r.messages)
            out.append(Completion(self.say(r.task.gold, episode_seed(r.sampling.seed or 0, turns), turns)))
        return out


def episode_seed(seed: int, turn: int) -> int:
    """The episode's seed, recovered from its turn's (`turn_seed`: each turn samples afresh); a
    branch's turns draw seeds of their own, which stand for themselves."""
    return next((s for s in range(10_000) if turn_seed(s, turn) == seed), seed)


def go_or_stray(count: int, seed: int, turns: int) -> str:
    """ "go" (or "stray" when the seed is odd) until the task's count, then "done": always right."""
    return "done" if turns >= count else "stray" if seed % 2 else "go"


def half_right(count: int, seed: int, turns: int) -> str:
    """Task n-1: always right; n-2: always wrong; the others: right on even seeds only."""
    right = count == 1 or (count != 2 and seed % 2 == 0)
    return "done" if turns >= (count if right else 0) else "go"


def count_specs() -> list[EpisodeSpec]:
    config = EnvConfig("test/GfcrCount-v0", {}, CountEnv)
    return [EpisodeSpec(config, f"n-{k}", seed=0) for k in range(1, 6)]


def run_count(say, controller: RolloutController, specs: list[EpisodeSpec]):
    """Run CountEnv episodes of `CountPolicy(say)` under `controller` in the real runner."""
    return Runner(CountPolicy(say), RunnerConfig(concurrency=4), controller=controller).run(specs)


def test_controller_schedules_groups_stops_failed_prefixes_and_branches_in_the_runner():
    config = ControlConfig(
        num_prompts=3, group_size=2, prefix_signal="on_track", prefix_threshold=1.0, branch_at={1: 1}, seed=0
    )
    controller = RolloutController(config)
    result = run_count(go_or_stray, controller, count_specs())
    roots = [t for t in result.trajectories if "." not in t.id]
    assert len({t.task_id for t in roots}) == 3 and len(roots) == 6
    # seeds are seed + sample: sample 1 (odd seed) strays at turn 1 and is stopped there
    for trajectory in roots:
        strays = trajectory.steps[0].action == "stray"
        if strays:
            assert len(trajectory.steps) == 1 and trajectory.steps[-1].truncated
    branches = [t for t in result.trajectories if "." in t.id]
    on_track_multi = [t for t in roots if t.steps[0].action == "go" and t.task_id != "n-1"]
    assert len(branches) == len(on_track_multi) > 0  # one copy after turn 1 of each live, on-track episode
    for branch in branches:  # each samples its own later turns: it finishes, or strays and is stopped
        assert branch.total_reward == 1.0 or (
            branch.steps[-1].action == "stray" and branch.steps[-1].truncated
        )
    # Tree rollouts end to end: a branch shares its root's first step, and step values follow.
    for task_id, group in group_by_task(result.trajectories).items():
        root, advantages = build_tree(group), tree_advantages(group, "treerl")
        for branch in (b for b in branches if b.task_id == task_id):
            assert len(root.children[branch.steps[0].action].leaves) == 2  # its root and itself
        first = {t.steps[0].action: advantages[t.id][0] for t in group}
        if {"go", "stray"} <= set(first) and task_id != "n-1":
            assert first["go"] > 0 > first["stray"]
    controller.observe(result.trajectories)
    assert sum(s.groups for s in controller.history.stats.values()) == 3
    # a second run draws fresh seeds
    again = controller.schedule(count_specs())
    assert {s.seed for s in again}.isdisjoint({0, 1})


def test_dynamic_sampling_and_budgets_drive_the_real_runner():
    templates = count_specs()
    runner = Runner(CountPolicy(half_right), RunnerConfig(concurrency=4))

    def run(plan):  # a RunFn: task id -> samples, through the vectorized runner
        return runner.run(expand_groups(templates, plan, seed=0)).trajectories

    history = PromptHistory()
    batch = DynamicSampling(num_groups=3, group_size=4).collect(
        run, [s.task_id for s in templates], history, np.random.default_rng(0)
    )
    assert sorted(batch.groups) == ["n-3", "n-4", "n-5"] and batch.dropped == 2 and batch.samples == 20
    assert all(sorted(t.total_reward for t in g) == [0.0, 0.0, 1.0, 1.0] for g in batch.groups.values())
    # A budget of 6 samples buys groups of 2 for the three prompts the history calls uncertain.
    controller = RolloutController(ControlConfig(sample_budget=6, min_samples=2, max_samples=4), history)
    result = run_count(half_right, controller, templates)
    counts = {task: len(group) for task, group in group_by_task(result.trajectories).items()}
    assert counts == {"n-3": 2, "n-4": 2, "n-5": 2}
    # Length control: a response is cut once over 5 characters ("go" ×3), shorter ones finish.
    controller = RolloutController(ControlConfig(group_size=2, max_length=5))
    result = run_count(half_right, controller, templates)
    cut = [t for t in result.trajectories if not t.steps[-1].terminated]
    assert {t.task_id for t in cut} == {"n-3", "n-4", "n-5"}  # their right answers need 3+ "go"s
    assert all(len(t.steps) == 3 and t.steps[-1].truncated for t in cut)
    assert [t.total_reward for t in group_by_task(result.trajectories)["n-1"]] == [1.0, 1.0]


def test_control_config_is_validated():
    with pytest.raises(ConfigError, match="keep one"):
        ControlConfig(sample_budget=10, token_budget=10)
    with pytest.raises(ConfigError):
        ControlConfig(branch_at={0: 2})
    with pytest.raises(ConfigError):
        ControlConfig(length_factor=2.0)


@pytest.mark.parametrize("selector", ["uniform", "greso", "vcrl", "thompson", "sec"])
def test_a_controller_loaded_from_its_state_dict_schedules_the_same(selector, through_checkpoint):
    env = BernoulliPrompts([0.0] * 10 + [0.5] * 10 + [1.0] * 10, seed=2)
    specs = [EpisodeSpec(EnvConfig("synthetic"), task_id) for task_id in env.task_ids]
    config = ControlConfig(selector=selector, num_prompts=6, group_size=4, seed=3)

    def step(*controllers: RolloutController) -> list[list[EpisodeSpec]]:
        """Each controller schedules a run; all of them observe the first one's outcomes."""
        plans = [controller.schedule(specs) for controller in controllers]
        outcomes = env.run(dict(Counter(spec.task_id for spec in plans[0])))
        for controller in controllers:
            controller.observe(outcomes)
        return plans

    original = RolloutController(config)
    for _ in range(4):
        step(original)
    resumed, fresh = RolloutController(config), RolloutController(config)
    resumed.load_state_dict(through_checkpoint(original.state_dict()))
    assert resumed.history.stats == original.history.stats and resumed.runs == original.runs == 4
    diverged = False
    for _ in range(3):
        expected, got, unaware = step(original, resumed, fresh)
        assert got == expected
        diverged |= unaware != expected
    assert diverged  # without the state, a controller schedules otherwise
    if selector == "greso":
        assert (resumed.selector.p_easy, resumed.selector.p_hard) == (
            original.selector.p_easy,
            original.selector.p_hard,
        )


class SamplingEcho:
    """Answers "done" at once, and records the sampling settings of every request it gets."""

    name, version = "test:echo", "1"

    def __init__(self) -> None:
        self.seen: dict[str, list] = {}

    def generate(self, requests):
        for r in requests:
            self.seen.setdefault(r.task.id, []).append(r.sampling)
        return [Completion("done") for _ in requests]


def test_the_runner_samples_each_episode_with_its_specs_sampling_override():
    policy = SamplingEcho()
    hot, plain = count_specs()[:2]
    hot = dataclasses.replace(hot, sampling={"temperature": 1.3, "max_tokens": 7})
    config = RunnerConfig(concurrency=2, sampling=SamplingParams(temperature=0.7, max_tokens=32))
    Runner(policy, config).run([hot, plain])
    (got,), (default,) = policy.seen["n-1"], policy.seen["n-2"]
    assert (got.temperature, got.max_tokens, got.top_p) == (1.3, 7, 1.0)  # the rest from the runner
    assert (default.temperature, default.max_tokens) == (0.7, 32)
    assert hot.id == dataclasses.replace(hot, sampling={}).id  # how it samples is not which episode it is
