"""Every stage of the rollout pipeline acting inside a real TRL `GRPOTrainer` step (issue 32's proof).

Each test trains one GRPO step of the tiny model (2 ToolUse prompts x 2 generations) with
`rollout_func(..., config=PipelineConfig)`, rolled out by a token-level oracle (the env's oracle,
encoded with the tiny tokenizer: rewards with a known value), and reads what the stage did from
`rollout.last_batch` and TRL's logs. The fixtures and policies are test_trl.py's.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

pytest.importorskip("trl", reason="the trl extra is not installed: pip install -e '.[trl]'")

from test_trl import (  # noqa: E402
    ENV,
    KWARGS,
    OracleTokens,
    SpreadOracle,
    _quiet_trl,  # noqa: F401  (autouse: TRL's experimental warnings off)
    grpo_trainer,
    logged,
)

from gfcr.agents import Runner  # noqa: E402
from gfcr.agents.runner import env_config  # noqa: E402
from gfcr.core import Completion, EpisodeSpec, Request  # noqa: E402
from gfcr.errors import ConfigError  # noqa: E402
from gfcr.filter import OverlongPenalty  # noqa: E402
from gfcr.filter.signals import group_advantages  # noqa: E402
from gfcr.integrations import trl as gfcr_trl  # noqa: E402
from gfcr.replay import ReplayBuffer  # noqa: E402
from gfcr.trainers.config import PipelineConfig  # noqa: E402

PLAN = "1. look the code up 2. answer with it"


def train(tiny_model, tmp_path, policy, config: dict, rows: int = 2, tasks: int | None = None, **kwargs):
    """One TRL step of `policy` through the pipeline `config` describes: (trainer, rollout)."""
    rollout = gfcr_trl.rollout_func(ENV, policy, config=PipelineConfig.from_dict(config), **kwargs, **KWARGS)
    trainer = grpo_trainer(
        tiny_model, tmp_path, rows=rows, tasks=tasks, rollout_func=rollout, reward_funcs=gfcr_trl.env_reward
    )
    return trainer, rollout


def trl_prompts(trainer) -> list:
    """A batch as TRL passes it: each dataset prompt num_generations (2) times in a row."""
    return [prompt for prompt in trainer.train_dataset["prompt"] for _ in range(2)]


class RecordingOracle(OracleTokens):
    """The token oracle, keeping every request it answers (how each episode was sampled)."""

    def __init__(self, path) -> None:
        super().__init__(path)
        self.requests: list[Request] = []

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        self.requests.extend(requests)
        return super().generate(requests)


def test_sec_learns_its_arm_value_from_the_trl_step(tiny_model, tmp_path):
    tasks = set(gfcr_trl.dataset(ENV, n=2, **KWARGS)["task_id"])
    config = {"control": {"selector": "sec", "sec_step_size": 0.5}}
    trainer, rollout = train(tiny_model, tmp_path, SpreadOracle(tiny_model, tasks), config)
    trainer.train()
    sec = rollout.pipeline.controller.selector
    groups = rollout.last_batch.groups
    gains = [np.abs(group_advantages([t.total_reward for t in g])).mean() for g in groups.values()]
    assert sec.values == {"tooluse": pytest.approx(0.5 * np.mean(gains))} and sec.values["tooluse"] > 0
    assert logged(trainer, "reward") == 0.5  # one oracle answer and one junk one in each group


def test_early_stopping_and_dynamic_sampling_fill_trls_batch_with_informative_groups(tiny_model, tmp_path):
    tasks = gfcr_trl.dataset(ENV, n=6, **KWARGS)["task_id"]
    solved, informative = tasks[:4], set(tasks[4:])
    # the first round takes 4 of the 6 prompts (2 missing x 2.0): 2 solved ones at least
    config = {"control": {"early_stopping": True, "wave": 1, "dynamic_sampling": True, "oversample": 2.0}}
    trainer, rollout = train(tiny_model, tmp_path, SpreadOracle(tiny_model, informative), config, tasks=6)
    rollout(trl_prompts(trainer)[:4], trainer)  # a first step builds the pipeline; then what it knows:
    history = rollout.pipeline.controller.history
    for _ in range(20):
        for task_id in solved:
            history.update(task_id, [1.0, 1.0])
        for task_id in informative:
            history.update(task_id, [1.0, 0.0])
    trainer.train()
    batch, metrics = rollout.last_batch, rollout.last_batch.metrics
    assert set(batch.groups) == informative  # waves of 1 alternate seed parity: a spread in each
    stopped = [t for t in batch.decided.allocated if t in set(solved)]
    assert len(stopped) >= 2 and sorted(batch.decided.stopped) == sorted(stopped)  # after one sample
    assert metrics["decide/saved_samples"] == len(stopped)  # the second sample of each, never drawn
    first_round = set(list(batch.decided.allocated)[:4])
    assert metrics["decide/refilled_groups"] == len(informative - first_round)  # later rounds found them
    assert metrics["decide/runs"] > metrics["decide/rounds"]  # waves inside rounds
    assert logged(trainer, "reward") == 0.5 and logged(trainer, "frac_reward_zero_std") == 0.0


def test_a_prefix_stop_ends_trls_episodes_at_the_failed_turn(tiny_model, tmp_path):
    # the oracle's first turn looks the code up: not yet correct, so the stop ends it unanswered
    config = {"control": {"prefix_signal": "correct", "prefix_threshold": 1.0}}
    trainer, rollout = train(tiny_model, tmp_path, OracleTokens(tiny_model), config)
    trainer.train()
    episodes = rollout.last_batch.generated
    assert all(len(t.steps) == 1 and t.steps[0].truncated for t in episodes)
    assert rollout.last_batch.metrics["decide/stopped_episodes"] == len(episodes) == 4
    assert logged(trainer, "reward") == 0.0


def test_guidance_is_in_the_prompt_ids_trl_trains_on(tiny_model, tmp_path):
    config = {"generate": {"guidance": {"kind": "plan", "plan": PLAN}}}
    policy = OracleTokens(tiny_model)
    trainer, rollout = train(tiny_model, tmp_path, policy, config)
    trainer.train()
    assert trainer.state.global_step == 1 and logged(trainer, "reward") == 1.0
    assert rollout.last_batch.metrics["generate/guided"] == 4
    out = rollout(trl_prompts(trainer), trainer)  # what TRL receives from a step
    for ids, task_id in zip(out["prompt_ids"], out["task_id"], strict=True):
        assert PLAN in policy.chat.decode(ids), task_id
    plain = gfcr_trl.rollout_func(ENV, policy, **KWARGS)(trl_prompts(trainer), trainer)
    assert all(PLAN not in policy.chat.decode(ids) for ids in plain["prompt_ids"])


def test_the_overlong_penalty_shapes_gfcr_reward(tiny_model, tmp_path):
    config = {"overlong_penalty": {"enabled": True, "max_length": 8, "cache_length": 4}}
    trainer, rollout = train(tiny_model, tmp_path, OracleTokens(tiny_model), config)
    trainer.train()
    shaping = OverlongPenalty(max_length=8, cache_length=4)
    episodes = rollout.last_batch.generated
    penalties = [shaping.penalty(t) for t in episodes]
    assert all(p < 0 for p in penalties)  # the oracle's two turns outgrow 4 free tokens
    assert rollout.last_batch.metrics["judge/overlong_penalty_mean"] == pytest.approx(np.mean(penalties))
    assert logged(trainer, "reward") == pytest.approx(np.mean([1.0 + p for p in penalties]))


def test_per_prompt_temperature_reaches_trls_rollouts(tiny_model, tmp_path):
    # a prior mean of 0.9 calls every prompt solved before it is seen: it samples at temperature_solved
    config = {"control": {"prior": [9.0, 1.0], "temperature_solved": 1.5}}
    policy = RecordingOracle(tiny_model)
    trainer, rollout = train(tiny_model, tmp_path, policy, config)
    trainer.train()
    assert trainer.args.temperature == 1.0 and policy.requests
    assert {r.sampling.temperature for r in policy.requests} == {1.5}


def test_replay_rescues_an_all_failed_trl_group(tiny_model, tmp_path):
    rows = gfcr_trl.dataset(ENV, n=2, **KWARGS)
    replay = ReplayBuffer(tmp_path / "replay.db")
    env = env_config(ENV, KWARGS)
    solved = Runner(OracleTokens(tiny_model)).run([EpisodeSpec(env, task_id) for task_id in rows["task_id"]])
    replay.store_many(solved.trajectories)  # a correct answer to each task, from an earlier policy
    assert set(replay.task_ids(passed=True)) == set(rows["task_id"])
    # the tiny model itself never finds a locker's code: every group fails and gets one stored answer
    trainer, rollout = train(tiny_model, tmp_path, None, {"replay": {"rescue": True}}, replay=replay)
    trainer.train()
    batch = rollout.last_batch
    assert batch.metrics["keep/rescued"] == 2 and all(t.total_reward == 0.0 for t in batch.generated)
    for group in batch.groups.values():
        assert [t.total_reward for t in group] == [0.0, 1.0] and group[-1].steps[-1].signals["replayed"]
    assert logged(trainer, "reward") == 0.5


def test_a_prompt_trls_batch_holds_twice_gets_a_fresh_group_each_time(tiny_model, tmp_path):
    # two dataset rows with one text reach rollout_func as one prompt four times (num_generations 2)
    trainer, rollout = train(tiny_model, tmp_path, OracleTokens(tiny_model), {})
    trainer.model.train()
    prompt = trainer.train_dataset["prompt"][0]
    fields = rollout([prompt] * 4, trainer)
    generated = rollout.last_batch.generated
    assert len(generated) == 4 and len({t.id for t in generated}) == 4  # counted, none fed twice
    assert fields["trajectory_id"] == [t.id for t in generated]
    assert len(set(fields["task_id"])) == 1


def test_a_run_sample_budget_stops_dynamic_samplings_refills_but_fills_trls_batch(tiny_model, tmp_path):
    # the oracle solves every task: no group has a reward spread, so each round refills them all
    config = {"control": {"dynamic_sampling": True, "max_rounds": 3}}
    spent = {}
    for budget in (None, 6):
        oracle = OracleTokens(tiny_model)
        trainer, rollout = train(
            tiny_model, tmp_path / str(budget), oracle, config, tasks=6, sample_budget=budget
        )
        trainer.model.train()
        fields = [rollout(trl_prompts(trainer)[:4], trainer) for _ in range(2)]
        assert all(len(f["trajectory_id"]) == 4 for f in fields)  # TRL's batch, full each step
        spent[budget] = rollout.pipeline.samples_total
    assert spent == {None: 2 * 3 * 4, 6: 4 + 2 + 4}  # one refilled group fits; then the first round only


@pytest.mark.parametrize(
    ("config", "match"),
    [
        ({"control": {"sample_budget": 6}}, r"sample_budget/token_budget .* num_generations"),
        ({"control": {"token_budget": 600}}, r"sample_budget/token_budget .* num_generations"),
        ({"replay": {"enabled": True, "mix_ratio": 0.25}}, r"mix_ratio = 0.25 .* exactly num_generations"),
        ({"replay": {"correction": "tis"}}, r"correction = 'tis' .* the loss is TRL's"),
    ],
)
def test_rollout_func_refuses_what_a_trl_batch_cannot_hold(config, match):
    with pytest.raises(ConfigError, match=match):
        gfcr_trl.rollout_func(ENV, config=PipelineConfig.from_dict(config), **KWARGS)
