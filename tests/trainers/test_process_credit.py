"""Process scores reach the loss (issue 33): per-step scores become per-token advantages, mixed with
the outcome's at `[judge.process] weight`, checked against a hand computation of the gradient, in
real `gfcr train` steps (rules on a multi-step env, a policy as the PRM), and cut into lines with the
policy's own tokenizer."""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest
import torch

from gfcr.core import Step, TokenData, Trajectory
from gfcr.errors import ConfigError
from gfcr.filter.process_credit import ProcessCredit, line_spans, sampled_runs
from gfcr.trainers import Trainer
from gfcr.trainers.batching import collate, samples_from_groups, token_logprobs
from gfcr.trainers.config import LossConfig
from gfcr.trainers.update import UpdateSettings, accumulate_gradients

TURNS = 3  # steps_env's (tests/conftest.py)


def checked_level(signals) -> float | None:
    """The level a step's check reached, which steps_env's process rule reads (None: no check)."""
    return float(signals["level"]) if signals.get("checked") else None


@pytest.fixture(scope="module")
def model(tiny_model):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(str(tiny_model)).eval()


def episode(tid: str, reward: float, scores: list[float | None]) -> Trajectory:
    """Two turns of two sampled tokens each (an observation token between), with process scores."""
    steps = [Step("", "", 0.0, False, False, {} if s is None else {"process_score": s}) for s in scores]
    steps[-1].reward = reward
    tokens = TokenData([5, 6], [10, 11, 12, 13, 14], [1, 1, 0, 1, 1], [0.0] * 5)
    return Trajectory("e", "t", "?", steps, id=tid, tokens=tokens)


def test_the_process_scores_reach_the_gradient_as_a_hand_computation_says(model):
    group = [episode("a", 1.0, [1.0, 0.0]), episode("b", 0.0, [0.0, None])]  # b's second step unscored
    for trajectory in group:  # old logprobs = the model's own: ratio 1, no clipping
        ids = trajectory.tokens.prompt_ids + trajectory.tokens.completion_ids
        with torch.no_grad():
            lp = token_logprobs(model, collate(samples_from_groups({"t": [trajectory]}, "dr_grpo")))[0]
        trajectory.tokens.logprobs = [
            float(lp[2 + j - 1]) * m for j, m in enumerate(trajectory.tokens.loss_mask)
        ]
        assert len(ids) == 7
    weight = 0.5
    samples = samples_from_groups({"t": group}, "dr_grpo", process=ProcessCredit(weight))

    # By hand: the outcome's Dr. GRPO advantages are +0.5 and -0.5. The scores R = {1, 0, 0} have
    # mean 1/3 and std √2/3, so 1 -> √2 and 0 -> -1/√2; each turn's process advantage is the sum of
    # its own and later normalised scores: a [√2 - 1/√2, -1/√2] = [1/√2, -1/√2], b [-1/√2, 0].
    r = 1 / math.sqrt(2)
    hand = {"a": [0.5 + weight * r, 0.5 - weight * r], "b": [-0.5 - weight * r, -0.5]}
    by_turn = [[s.advantages[2], s.advantages[5]] for s in samples]
    assert np.allclose(by_turn, [hand["a"], hand["b"]])

    loss = LossConfig(name="grpo")
    model.zero_grad(set_to_none=True)
    accumulate_gradients(model, samples, UpdateSettings(loss, micro_batch_size=2))
    trained = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)

    # GRPO at ratio 1: loss = -1/B Σ_i 1/n_i Σ_t A_it log π(token_it), n_i = 4 sampled tokens each
    batch = collate(samples)
    logprobs = token_logprobs(model, batch)  # (B, L-1)
    positions = [1, 2, 4, 5]  # where the sampled tokens 10, 11, 13, 14 are predicted
    advantages = torch.tensor([[h[0], h[0], h[1], h[1]] for h in (hand["a"], hand["b"])])
    (-(advantages * logprobs[:, positions]).mean(1).mean()).backward()
    by_hand = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)
    assert trained.keys() == by_hand.keys()
    assert all(torch.allclose(trained[n], by_hand[n], atol=1e-6) for n in trained)

    outcome_only = samples_from_groups({"t": group}, "dr_grpo")  # without the process scores
    accumulate_gradients(model, outcome_only, UpdateSettings(loss, micro_batch_size=2))
    grads = {n: p.grad for n, p in model.named_parameters() if p.grad is not None}
    assert not all(torch.allclose(grads[n], by_hand[n], atol=1e-6) for n in by_hand)
    model.zero_grad(set_to_none=True)


def test_an_episode_without_scores_keeps_its_outcome_advantage():
    group = [episode("a", 1.0, [None, None]), episode("b", 0.0, [0.2, 0.8]), episode("c", 0.0, [0.8, 0.2])]
    plain = samples_from_groups({"t": group}, "grpo")
    mixed = samples_from_groups({"t": group}, "grpo", process=ProcessCredit(1.0))
    assert mixed[0].advantages == plain[0].advantages  # no score is not a score of 0
    assert mixed[1].advantages != plain[1].advantages


def test_a_rules_scorer_shapes_each_turns_advantage_in_a_gfcr_train_step(make_config, steps_env):
    weight = 0.5
    config = make_config(env={"id": steps_env, "num_tasks": 8}, judge={"process": {"weight": weight}},
                         rollout={"max_turns": TURNS})  # fmt: skip
    trainer = Trainer(config)
    metrics = trainer.rl_step()
    batch = trainer.last_rollout
    assert batch is not None
    episodes = batch.trained
    unchecked = sum(not s.signals["checked"] for t in episodes for s in t.steps)  # e.g. a malformed tool call
    assert metrics["judge/process_scored"] == sum(len(t.steps) for t in episodes) - unchecked > 0
    assert metrics["judge/process_unscored"] == unchecked
    assert "diagnose/prm_unscored_share" not in metrics  # a rule's unscored step had nothing to check
    for trajectory in episodes:  # each step's score is its progress over the best level before it
        levels = [checked_level(s.signals) for s in trajectory.steps]
        best = [max([0.0, *(v for v in levels[:i] if v is not None)]) for i in range(len(levels))]
        progress = [None if v is None else max(0.0, v - b) for v, b in zip(levels, best, strict=True)]
        assert [s.signals.get("process_score") for s in trajectory.steps] == pytest.approx(progress)
    samples = dict(zip(map(id, episodes), trainer.pipeline.credit(batch), strict=True))
    for group in batch.groups.values():
        scores = np.array(
            [s.signals["process_score"] for t in group for s in t.steps if "process_score" in s.signals]
        )
        if scores.std() < 1e-8:
            continue
        for trajectory in group:
            sample = samples[id(trajectory)]
            prompt = len(trajectory.tokens.prompt_ids)
            runs = sampled_runs(trajectory.tokens.loss_mask)
            turns = [sample.advantages[prompt + start : prompt + end] for start, end in runs]
            assert len(turns) == len(trajectory.steps) and all(len(set(turn)) == 1 for turn in turns)
            # consecutive turns differ by weight · the earlier turn's normalised score (DeepSeekMath);
            # an unscored turn by 0
            own = [s.signals.get("process_score") for s in trajectory.steps]
            normalised = np.array([0.0 if v is None else (v - scores.mean()) / scores.std() for v in own])
            differences = [turns[i][0] - turns[i + 1][0] for i in range(len(turns) - 1)]
            assert np.allclose(differences, weight * normalised[:-1])
    assert metrics["update/skipped"] == 0.0


def test_a_policy_prm_that_answers_nothing_readable_scores_no_step_in_a_gfcr_train_step(
    make_config, steps_env, tiny_model, caplog
):
    """The tiny model as the PRM answers noise: every step is unscored (not 0), the advantages are
    the outcome's alone, and the trainer warns that the PRM changes nothing (SmolLM2-135M as its
    own PRM scored 0 of about 90 lines a step on math: docs/benchmarks.md)."""
    process = {"weight": 1.0, "scorer": f"hf:{tiny_model}", "max_tokens": 4}
    trainer = Trainer(make_config(env={"id": steps_env, "num_tasks": 8}, judge={"process": process},
                                  rollout={"max_turns": TURNS}))  # fmt: skip
    metrics = trainer.rl_step()
    batch = trainer.last_rollout
    steps = sum(len(t.steps) for t in batch.trained)
    assert metrics["judge/process_scored"] == 0 and metrics["judge/process_unscored"] == steps
    assert not any("process_score" in s.signals for t in batch.trained for s in t.steps)
    plain = samples_from_groups(batch.groups, "grpo")
    assert [s.advantages for s in trainer.pipeline.credit(batch)] == [s.advantages for s in plain]
    assert metrics["diagnose/prm_unscored_share"] == 1.0
    with caplog.at_level(logging.WARNING, logger="gfcr.trainers.watch"):
        assert "diagnose/prm_unscored_share" in trainer.watch.check(1, metrics)
    assert "point [judge.process] scorer at a stronger model" in caplog.text


def test_rules_where_the_env_has_none_are_a_config_error(make_config):
    with pytest.raises(ConfigError, match="has no process rules"):
        Trainer(make_config(judge={"process": {"weight": 1.0}}))  # the parity env has none


def test_lines_follow_the_policys_own_tokens(tiny_model):
    from gfcr.agents import make_policy

    policy = make_policy(f"hf:{tiny_model}")
    text = "first line of it\nthe second\n\nthe third"
    ids = policy.tokenizer.encode(text, add_special_tokens=False)
    spans = line_spans(ids, 0, len(ids), policy.decode)
    lines = [policy.decode(ids[a:b]) for a, b in spans]
    assert "".join(lines) == text and len(lines) == 3
    assert [line.strip() for line in lines] == ["first line of it", "the second", "the third"]


def test_a_policy_prm_scores_each_line_after_the_lines_before_it(tiny_model):
    """Lines mode with a scripted PRM (any policy speaks this protocol): each line is graded with
    the earlier lines as its context, its score lands in `process_score/<k>`, and its tokens get
    that line's process advantage."""
    import re

    from gfcr.agents import make_policy
    from gfcr.filter.process import PolicyPRM
    from gfcr.filter.process_credit import ProcessJudge

    policy = make_policy(f"hf:{tiny_model}")
    asked = []

    def grader(messages):
        text = messages[-1].content
        asked.append(text)
        tag = re.search(r"VERDICT \w+", text)[0]
        step = text.split("Step:\n")[-1].split("\n\nEnd your answer")[0]
        return f"{tag}: {1.0 if 'good' in step else 0.0}"

    def answer(tid: str, text: str) -> Trajectory:
        ids = policy.tokenizer.encode(text, add_special_tokens=False)
        tokens = TokenData([1], ids, [1] * len(ids), [0.0] * len(ids))
        return Trajectory("e", "t", "?", [Step(text, "", 0.0, True, False)], id=tid, tokens=tokens)

    group = [answer("a", "a good start\nthen a slip\na good end"), answer("b", "a slip\na good fix")]
    credit = ProcessCredit(1.0, "lines", policy.decode)
    assert ProcessJudge(PolicyPRM(grader), credit).annotate(group) == (5, 0)
    assert [
        [t.steps[0].signals[f"process_score/{k}"] for k in range(len(credit.units(t)))] for t in group
    ] == [
        [1.0, 0.0, 1.0],
        [0.0, 1.0],
    ]
    assert "Step 1:\na good start" in asked[1] and "Step 2:\nthen a slip" in asked[2]  # earlier lines
    advantages = credit.token_advantages(group)
    for trajectory, member in zip(group, advantages, strict=True):
        per_line = [member[u.start : u.end] for u in credit.units(trajectory)]
        assert all(len(set(line)) == 1 for line in per_line)  # one advantage per line's tokens
    # scores {1, 0, 1, 0, 1}: mean 0.6, std 0.49; a's lines: returns of [0.816, -1.225, 0.816]
    assert [
        round(line[0], 3) for line in [advantages[0][u.start : u.end] for u in credit.units(group[0])]
    ] == [
        0.408,
        -0.408,
        0.816,
    ]
