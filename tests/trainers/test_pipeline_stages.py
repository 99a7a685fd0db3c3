"""Every stage of the rollout pipeline acting inside a real `gfcr train` step (issue 32's proof).

Each test runs `Trainer(config)` for a step or two of the tiny model on gfcr/TestParity-v0 (reward:
an odd action length) or on a multi-turn variant of it, and reads what the module did from the
step's metrics and `trainer.last_rollout` (its trajectories and groups). Where a choice depends on
what Control knows, the prompt history is set before the step, so the choice is clear; where an
outcome depends on sampling, the assertion is the mechanism (counts that must agree exactly).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from gfcr.core import Request, Trajectory
from gfcr.core.hooks import branch_points
from gfcr.filter.signals import group_advantages, response_length
from gfcr.trainers import Trainer

SOLVED = [1.0, 1.0, 1.0]  # a group all right: 20 of them make a prompt surely solved
OPEN = ([1.0, 0.0, 1.0], [0.0, 1.0, 0.0])  # groups with a spread: a prompt about half solved


@pytest.fixture(scope="session")
def turns_env(parity_env):
    """gfcr/TestTurns-v0: the parity env over 3 turns (never terminated: the turn limit truncates),
    each turn paying 1.0 and `format_ok` for an odd action length; for turn branches and prefix stops."""
    from gfcr.core import Action
    from gfcr.envs.base import Outcome
    from gfcr.envs.tooluse import ToolUseEnv
    from gfcr.registry import register_env

    class Turns(ToolUseEnv):
        def respond(self, action: Action) -> Outcome:
            odd = len(action.text) % 2 == 1
            return Outcome("go on", reward=float(odd), signals={"format_ok": odd, "correct": odd})

    register_env("gfcr/TestTurns-v0", Turns)
    return "gfcr/TestTurns-v0"


def seed_history(trainer: Trainer, solved: Sequence[str] = (), open_: Sequence[str] = ()) -> None:
    """What Control knows before the step: `solved` prompts right 20 groups in a row, `open_`
    ones half right over 10 groups."""
    history = trainer.controller.history
    for task_id in solved:
        for _ in range(20):
            history.update(task_id, SOLVED)
    for task_id in open_:
        for i in range(10):
            history.update(task_id, OPEN[i % 2])


def record_requests(trainer: Trainer) -> list[Request]:
    """The requests the step's policy receives (its `generate` wrapped on the instance)."""
    policy, seen = trainer.pipeline.runner.policy, []
    generate = policy.generate

    def recording(requests: Sequence[Request]):
        seen.extend(requests)
        return generate(requests)

    policy.generate = recording  # type: ignore[method-assign]
    return seen


def before_last_turn(trajectory: Trajectory) -> int:
    """Policy tokens of every turn but the last (turns are runs of loss mask 1, observations 0)."""
    mask = trajectory.tokens.loss_mask
    start = len(mask)
    while start and mask[start - 1]:
        start -= 1
    return sum(mask[:start])


def parent_of(trajectory: Trajectory) -> str:
    return trajectory.id.rsplit(".", 1)[0]


# -- choose --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("selector", "settings"),
    [("greso", {"greso_p_easy": 0.05}), ("vcrl", {}), ("thompson", {})],
)
def test_a_selector_chooses_the_open_prompts_where_uniform_ignores_the_history(
    make_config, selector, settings
):
    # 8 prompts, 6 of them solved 20 groups in a row: GRESO skips them (keep probability 0.05^20),
    # VCRL scores them 0 (no variance), Thompson's draws give them almost no chance of a spread.
    def chosen(name: str, history: bool, **control) -> tuple[set[str], set[str]]:
        trainer = Trainer(make_config(env={"num_tasks": 8}, control={"selector": name, **control}))
        tasks = trainer.pipeline.task_ids
        if history:
            seed_history(trainer, solved=tasks[2:], open_=tasks[:2])
        metrics = trainer.rl_step()
        assert metrics["choose/prompts"] == 2
        return set(trainer.last_rollout.groups), set(tasks[:2])

    picked, open_ = chosen(selector, True, **settings)
    assert picked == open_
    assert chosen("uniform", True)[0] == chosen("uniform", False)[0]  # the same draw, history or not


def test_thompson_updates_its_posteriors_with_the_prior_and_decay(make_config):
    prior, decay = (2.0, 3.0), 0.5
    control = {"selector": "thompson", "prior": list(prior), "decay": decay}
    trainer = Trainer(make_config(env={"num_tasks": 4}, control=control))
    history = trainer.controller.history
    tasks = trainer.pipeline.task_ids
    assert history.get(tasks[0]).alpha == 2.0 and history.get(tasks[0]).beta == 3.0  # unseen: the prior
    seed_history(trainer, open_=tasks)
    before = {t: history.get(t) for t in tasks}
    before = {t: (s.alpha, s.beta) for t, s in before.items()}
    trainer.rl_step()
    for task_id, group in trainer.last_rollout.groups.items():  # every group drawn is recorded
        wins = sum(t.total_reward >= 1.0 for t in group)
        a, b = before[task_id]
        stats = history.get(task_id)
        assert stats.alpha == pytest.approx(prior[0] + decay * (a - prior[0]) + wins)
        assert stats.beta == pytest.approx(prior[1] + decay * (b - prior[1]) + len(group) - wins)


def test_sec_moves_its_arm_value_by_the_steps_mean_absolute_advantage(make_config):
    trainer = Trainer(make_config(control={"selector": "sec", "sec_step_size": 0.5}))
    sec = trainer.controller.selector
    assert sec.values == {}
    trainer.rl_step()
    groups = trainer.last_rollout.groups
    gains = [np.abs(group_advantages([t.total_reward for t in g])).mean() for g in groups.values()]
    [category] = {sec.category(t) for t in groups}  # the parity env's ids are all of one family
    assert sec.values == {category: pytest.approx(0.5 * np.mean(gains))}


# -- allocate ------------------------------------------------------------------------------------


def test_a_sample_budget_gives_the_uncertain_prompt_more_samples(make_config):
    trainer = Trainer(make_config(env={"num_tasks": 2}, control={"sample_budget": 7}))
    solved, open_ = trainer.pipeline.task_ids
    seed_history(trainer, solved=[solved], open_=[open_])
    metrics = trainer.rl_step()
    assert metrics["allocate/samples"] == metrics["generate/episodes"] == 7
    sizes = {task: len(group) for task, group in trainer.last_rollout.groups.items()}
    assert sizes == {solved: 2, open_: 5}  # min_samples for the solved one, the rest for the open one


def test_a_token_budget_allocates_by_each_prompts_mean_length(make_config):
    trainer = Trainer(make_config(env={"num_tasks": 2}, control={"token_budget": 40}))
    short, long = trainer.pipeline.task_ids
    history = trainer.controller.history
    for _ in range(10):  # both half solved; responses of 2 tokens against 10
        history.update(short, [1.0, 0.0], lengths=[2, 2])
        history.update(long, [1.0, 0.0], lengths=[10, 10])
    metrics = trainer.rl_step()
    allocated = trainer.last_rollout.decided.allocated
    assert metrics["allocate/samples"] == sum(allocated.values()) == metrics["generate/episodes"]
    assert allocated[short] > allocated[long] >= 2
    assert 2 * allocated[short] + 10 * allocated[long] <= 40


def test_per_prompt_temperature_reaches_the_policys_requests(make_config):
    control = {"temperature_solved": 1.5, "temperature_unsolved": 0.25}
    trainer = Trainer(make_config(env={"num_tasks": 3}, rollout={"prompts_per_step": 3}, control=control))
    solved, unsolved, unseen = trainer.pipeline.task_ids
    seed_history(trainer, solved=[solved])
    for _ in range(20):
        trainer.controller.history.update(unsolved, [0.0, 0.0, 0.0])
    requests = record_requests(trainer)
    trainer.rl_step()
    temperatures = {task: {r.sampling.temperature for r in requests if r.task.id == task} for task in
                    (solved, unsolved, unseen)}  # fmt: skip
    assert temperatures == {solved: {1.5}, unsolved: {0.25}, unseen: {1.0}}  # unseen: the runner's


# -- decide, during generation ---------------------------------------------------------------------


def test_a_prefix_stop_ends_episodes_at_their_first_failed_turn(make_config, turns_env):
    config = make_config(
        env={"id": turns_env}, rollout={"max_turns": 3}, control={"prefix_signal": "format_ok",
                                                                  "prefix_threshold": 1.0}
    )  # fmt: skip
    trainer = Trainer(config)
    metrics = trainer.rl_step()
    episodes = trainer.last_rollout.generated
    stopped = 0
    for t in episodes:
        ok = [s.signals["format_ok"] for s in t.steps]
        assert all(ok[:-1])  # no turn after a failed one
        stopped += not ok[-1]
        if not ok[-1]:
            assert t.steps[-1].truncated
    assert metrics["decide/stopped_episodes"] == stopped > 0
    assert any(len(t.steps) < 3 for t in episodes)


def test_a_length_budget_ends_episodes_once_their_response_outgrows_it(make_config, turns_env):
    config = make_config(env={"id": turns_env}, rollout={"max_turns": 3}, control={"max_length": 2})
    trainer = Trainer(config)
    metrics = trainer.rl_step()
    episodes = trainer.last_rollout.generated
    over = [t for t in episodes if response_length(t) > 2]
    for t in over:  # it went on only while within the budget, and stopped at the turn that outgrew it
        assert before_last_turn(t) <= 2 and t.steps[-1].truncated
    assert metrics["decide/stopped_episodes"] == len(over) > 0
    assert any(len(t.steps) < 3 for t in over)  # stopped before the turn limit


# -- generate: trees, pruning, guidance ------------------------------------------------------------


def test_turn_branches_copy_live_episodes_after_the_turn(make_config, turns_env):
    config = make_config(env={"id": turns_env}, rollout={"max_turns": 3}, control={"branch_at": {"1": 1}})
    trainer = Trainer(config)
    metrics = trainer.rl_step()
    episodes = trainer.last_rollout.generated
    branches = [t for t in episodes if "." in t.id]
    assert metrics["generate/branches"] == len(branches) > 0
    ids = {t.id for t in episodes}
    for child in branches:
        assert branch_points(child.id) == [(1, None)] and parent_of(child) in ids
        parent = next(t for t in episodes if t.id == parent_of(child))
        assert child.steps[0].action == parent.steps[0].action  # the shared first turn


def test_token_branches_share_the_parents_prefix_and_count_it_once(make_config):
    trainer = Trainer(make_config(generate={"tree": {"entropy_points": 1, "children": 2}}))
    metrics = trainer.rl_step()
    episodes = {t.id: t for t in trainer.last_rollout.generated}
    children = [t for t in episodes.values() if "t" in t.id.rsplit(".", 1)[-1]]
    assert metrics["generate/branches"] == len(children) > 0
    forced = 0
    for child in children:
        [(turn, k)] = branch_points(child.id)
        parent = episodes[parent_of(child)]
        assert turn == 1 and child.tokens.completion_ids[:k] == parent.tokens.completion_ids[:k]
        assert child.tokens.prompt_ids == parent.tokens.prompt_ids
        forced += k
    assert metrics["generate/tokens"] == sum(t.cost.tokens_out for t in episodes.values())
    assert metrics["generate/tokens"] == sum(map(response_length, episodes.values())) - forced


def test_tree_credit_varies_inside_a_sample_at_its_branch_point(make_config):
    config = make_config(
        generate={"tree": {"entropy_points": 1, "children": 2}}, loss={"estimator": "treerl"}
    )
    trainer = Trainer(config)
    metrics = trainer.rl_step()
    samples = trainer.pipeline.credit(trainer.last_rollout)
    assert metrics["credit/samples"] == len(samples)
    varying = [
        s for s in samples if len({a for a, m in zip(s.advantages, s.loss_mask, strict=True) if m}) > 1
    ]
    assert varying  # a shared prefix gets its node's advantage, the rest the leaf's


def test_pruning_skips_branching_a_decided_prompt(make_config):
    config = make_config(
        env={"num_tasks": 2}, generate={"tree": {"entropy_points": 1}}, control={"prune": True}
    )
    trainer = Trainer(config)
    decided, open_ = trainer.pipeline.task_ids
    seed_history(trainer, solved=[decided])
    assert trainer.controller.pruned(decided) and not trainer.controller.pruned(open_)
    metrics = trainer.rl_step()
    by_task = {
        task: [t for t in trainer.last_rollout.generated if t.task_id == task] for task in (decided, open_)
    }
    assert all("." not in t.id for t in by_task[decided])
    assert metrics["generate/branches"] == sum("." in t.id for t in by_task[open_]) > 0


@pytest.mark.parametrize(
    "guidance",
    [
        {"kind": "fewshot", "fewshot": [["find the code", "lookup()"]]},
        {"kind": "plan", "plan": "1. look 2. answer"},
    ],
)
def test_guidance_is_in_the_prompt_and_the_step_trains(make_config, guidance):
    trainer = Trainer(make_config(generate={"guidance": guidance}))
    metrics = trainer.rl_step()
    episodes = trainer.last_rollout.generated
    assert metrics["generate/guided"] == len(episodes) > 0
    assert all(t.guidance and t.tokens is not None for t in episodes)
    text = trainer.models.policy.chat.tokenizer.decode(episodes[0].tokens.prompt_ids)
    assert episodes[0].guidance in text
    assert metrics["credit/samples"] == len(episodes) and "update/skipped" in metrics  # no DataError


def test_adaptive_guidance_guides_only_the_prompt_below_its_threshold(make_config):
    guidance = {"kind": "plan", "plan": "1. look 2. answer", "adaptive_below": 0.5}
    trainer = Trainer(make_config(env={"num_tasks": 2}, generate={"guidance": guidance}))
    solved, failing = trainer.pipeline.task_ids
    seed_history(trainer, solved=[solved])
    for _ in range(20):
        trainer.controller.history.update(failing, [0.0, 0.0, 0.0])
    metrics = trainer.rl_step()
    guided = {t.task_id for t in trainer.last_rollout.generated if t.guidance}
    assert guided == {failing} and metrics["generate/guided"] == 3


# -- judge, keep -----------------------------------------------------------------------------------


def test_replay_rescues_an_all_failed_group_with_a_stored_success(make_config):
    # 2 prompts of a 2-task pool, 10 steps of groups of 2: each step's finished successes are stored,
    # and every later all-failed group of a task with a stored success gets one (exactly those; on
    # the parity env some group of the 18 after the first step fails entirely, on every seed tried).
    trainer = Trainer(
        make_config(env={"num_tasks": 2}, rollout={"group_size": 2}, replay={"enabled": True, "rescue": True})
    )
    solved_before: set[str] = set()
    rescued = expected = 0
    for _ in range(10):
        metrics = trainer.rl_step()
        batch = trainer.last_rollout
        for task_id, group in batch.groups.items():
            fresh = [t for t in batch.generated if t.task_id == task_id]
            if task_id in solved_before and not any(t.total_reward >= 1.0 for t in fresh):
                expected += 1
                assert group[-1].steps[-1].signals.get("replayed") and group[-1].total_reward == 1.0
        rescued += metrics["keep/rescued"]
        solved_before |= {t.task_id for t in batch.generated if t.total_reward >= 1.0}
    assert rescued == expected > 0


# -- compatible stages in one step -----------------------------------------------------------------


def test_token_trees_and_guidance_run_together(make_config):
    generate = {"tree": {"entropy_points": 1}, "guidance": {"kind": "plan", "plan": "1. look 2. answer"}}
    trainer = Trainer(make_config(generate=generate, loss={"estimator": "treerl"}))
    metrics = trainer.rl_step()
    episodes = trainer.last_rollout.generated
    assert metrics["generate/branches"] > 0 and metrics["generate/guided"] == len(episodes)
    children = [t for t in episodes if "." in t.id]
    assert children and all(t.guidance == episodes[0].guidance for t in children)  # a child keeps it
    assert metrics["credit/samples"] == len(episodes) and "update/skipped" in metrics


def test_a_budget_dynamic_sampling_early_stopping_and_thompson_run_together(make_config):
    control = {
        "selector": "thompson", "sample_budget": 8, "dynamic_sampling": True, "early_stopping": True,
        "wave": 2, "confidence": 0.5, "max_rounds": 4,
    }  # fmt: skip
    trainer = Trainer(make_config(env={"num_tasks": 8}, rollout={"group_size": 4}, control=control))
    tasks = trainer.pipeline.task_ids
    seed_history(trainer, solved=tasks[:4])
    metrics = trainer.rl_step()
    batch = trainer.last_rollout
    decided = batch.decided
    assert metrics["decide/runs"] > metrics["decide/rounds"] >= 1  # waves inside rounds
    assert metrics["generate/episodes"] == decided.samples == len(batch.generated)
    assert metrics["allocate/samples"] == sum(decided.allocated.values())
    assert metrics["decide/saved_samples"] == metrics["allocate/samples"] - decided.samples
    first_round = list(decided.allocated)[:3]  # ceil(2 missing × 1.5) prompts, in choice order
    assert set(first_round).isdisjoint(tasks[:4])  # Thompson leaves the solved prompts for last
    assert sum(decided.allocated[t] for t in first_round) == 12  # the budget's share: 8 × 3/2 prompts
    for group in batch.groups.values():  # only informative groups train
        assert len({t.total_reward for t in group}) > 1
    assert metrics["decide/stopped_prompts"] == len(decided.stopped)
    assert metrics["decide/dropped_groups"] + len(batch.groups) == len(decided.allocated) - sum(
        n == 0 for n in decided.allocated.values()
    )


def test_every_control_module_runs_in_one_step(make_config, turns_env):
    control = {
        "selector": "sec", "token_budget": 4096, "temperature_solved": 1.5, "prefix_signal": "format_ok",
        "prefix_threshold": 1.0, "max_length": 8, "early_stopping": True, "wave": 2, "confidence": 0.5,
        "dynamic_sampling": True, "max_rounds": 3,
    }  # fmt: skip
    config = make_config(env={"id": turns_env, "num_tasks": 8}, rollout={"max_turns": 3, "group_size": 4},
                         control=control)  # fmt: skip
    trainer = Trainer(config)
    seed_history(trainer, solved=trainer.pipeline.task_ids[:2])
    requests = record_requests(trainer)
    metrics = trainer.rl_step()
    batch = trainer.last_rollout
    assert batch.decided.allocated and trainer.controller.selector.values  # SEC learnt from the step's groups
    assert metrics["allocate/samples"] == sum(batch.decided.allocated.values()) > 0
    assert metrics["decide/runs"] > metrics["decide/rounds"]  # early stopping's waves
    assert metrics["decide/stopped_episodes"] > 0  # the prefix and length stops
    assert all(len({t.total_reward for t in g}) > 1 for g in batch.groups.values())  # dynamic sampling
    solved = set(trainer.pipeline.task_ids[:2])
    assert all(r.sampling.temperature == (1.5 if r.task.id in solved else 1.0) for r in requests)


def test_trees_run_with_a_budget_early_stopping_dynamic_sampling_and_pruning(make_config):
    control = {"sample_budget": 12, "early_stopping": True, "dynamic_sampling": True, "prune": True,
               "max_rounds": 3}  # fmt: skip
    config = make_config(
        env={"num_tasks": 8}, rollout={"group_size": 4}, control=control,
        generate={"tree": {"entropy_points": 1}}, loss={"estimator": "treerl"},
    )  # fmt: skip
    trainer = Trainer(config)
    decided = trainer.pipeline.task_ids[0]
    seed_history(trainer, solved=[decided])
    metrics = trainer.rl_step()
    generated = trainer.last_rollout.generated
    assert metrics["generate/branches"] == sum("." in t.id for t in generated) > 0
    assert all("." not in t.id for t in generated if t.task_id == decided)
    assert metrics["credit/samples"] == len(trainer.last_rollout.trained) and "update/skipped" in metrics


def test_early_stopping_alone_leaves_all_failed_full_groups_to_the_rescue(make_config):
    # docs/control.md: early stopping alone keeps the full groups, so the rescue reaches them
    config = make_config(
        env={"num_tasks": 2}, rollout={"group_size": 2},
        control={"early_stopping": True, "wave": 2}, replay={"enabled": True, "rescue": True},
    )  # fmt: skip
    trainer = Trainer(config)
    rescued = 0
    for _ in range(10):
        rescued += trainer.rl_step()["keep/rescued"]
    assert rescued > 0


# -- what does not combine -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sections", "match"),
    [
        ({"control": {"sample_budget": 8, "token_budget": 100}}, "both set; keep one"),
        ({"control": {"length_factor": 2.0}}, "length_factor needs max_length"),
        ({"control": {"early_stopping": True, "wave": 4}}, r"wave must be <= \[rollout\] group_size \(3\)"),
        ({"generate": {"guidance": {"kind": "plan", "plan": "x", "fewshot": [["a", "b"]]}}},
         "fewshot set but guidance kind is 'plan'"),
        ({"generate": {"guidance": {"adaptive_below": 0.5}}}, "adaptive_below set but guidance kind is 'none'"),
    ],
)  # fmt: skip
def test_stages_that_do_not_combine_are_config_errors(make_config, sections, match):
    from gfcr.errors import ConfigError

    with pytest.raises(ConfigError, match=match):
        make_config(**sections)


@pytest.mark.parametrize(
    ("control", "warns"), [({"dynamic_sampling": True}, True), ({"early_stopping": True}, False)]
)
def test_the_rescue_warns_only_beside_dynamic_sampling(make_config, caplog, control, warns):
    # dynamic sampling drops every all-failed group before the keep stage; early stopping alone keeps
    # full ones, and the rescue reaches them (test_early_stopping_alone_leaves_all_failed_full_groups_to_the_rescue)
    Trainer(make_config(control=control, replay={"enabled": True, "rescue": True}))
    assert ("rescue has nothing to rescue" in caplog.text) == warns
