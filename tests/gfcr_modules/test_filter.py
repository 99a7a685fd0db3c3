"""Filter: verifiers, rubrics, judge, process hook and training signals against independent arithmetic."""

from __future__ import annotations

import statistics

import gymnasium as gym
import numpy as np
import pytest

import gfcr  # noqa: F401 (registers the envs)
from gfcr.core import Step, Task, Trajectory
from gfcr.envs.math import MathVerifier
from gfcr.errors import ConfigError, UnknownNameError
from gfcr.filter import (
    LengthPenalty,
    MajorityVote,
    ProcessScoreHook,
    Rubric,
    SignalVerifier,
    Verifier,
    group_advantages,
    overlong_penalty,
)
from gfcr.filter.rubric import Criterion


def one_step(action: str, reward: float = 0.0, **signals) -> Trajectory:
    return Trajectory("e", "t", "?", [Step(action, "", reward, True, False, dict(signals))])


@pytest.mark.parametrize("rewards", [[1, 0, 0, 1, 1, 0, 0, 0], [0.2, 0.9, 0.5], [3.0, -1.0]])
def test_advantages_match_the_papers_formulas_computed_by_hand(rewards):
    k = len(rewards)
    mean = sum(rewards) / k
    std = statistics.stdev(rewards)  # sample std, as TRL/veRL
    grpo = [(r - mean) / (std + 1e-6) for r in rewards]
    rloo = [r - (sum(rewards) - r) / (k - 1) for r in rewards]
    assert group_advantages(rewards, "grpo") == pytest.approx(grpo)
    assert group_advantages(rewards, "dr_grpo") == pytest.approx([r - mean for r in rewards])
    assert group_advantages(rewards, "rloo") == pytest.approx(rloo)


def test_advantages_of_a_group_without_spread_are_zero_and_bad_names_are_refused():
    assert group_advantages([0.0] * 4, "grpo").tolist() == [0.0] * 4
    assert group_advantages([1.0], "rloo").tolist() == [0.0]
    with pytest.raises(UnknownNameError, match="did you mean 'rloo'"):
        group_advantages([1.0, 0.0], "rlo")
    with pytest.raises(ConfigError):
        group_advantages([], "grpo")


def test_overlong_penalty_is_dapos_piecewise_ramp():
    # DAPO eq. 13 with L_max = 20480, L_cache = 4096
    assert overlong_penalty(16384, 20480, 4096) == 0.0
    assert overlong_penalty(16384 + 1024, 20480, 4096) == pytest.approx(-0.25)
    assert overlong_penalty(20480, 20480, 4096) == -1.0
    assert overlong_penalty(30000, 20480, 4096) == -1.0
    with pytest.raises(ConfigError):
        overlong_penalty(10, 100, 0)


def test_rubric_weights_sum_and_a_failed_gate_zeroes_the_reward():
    rubric = Rubric(
        (
            Criterion("format", SignalVerifier("format_ok"), 0.0, gate=True),
            Criterion("correct", SignalVerifier("correct"), 0.8),
            Criterion("style", SignalVerifier("style", threshold=0.5), 0.2),
        )
    )
    task = Task("t", "?")
    good = rubric.verify(task, one_step("x", format_ok=True, correct=True, style=0.5))
    assert good.reward == pytest.approx(0.8 + 0.2 * 0.5) and good.passed
    assert good.signals["correct"] == 1.0 and good.signals["format/format_ok"] is True
    gated = rubric.verify(task, one_step("x", format_ok=False, correct=True, style=1.0))
    assert gated.reward == 0.0 and not gated.passed
    nested = Rubric((Criterion("inner", rubric, 2.0),)).verify(
        task, one_step("x", format_ok=True, correct=True, style=1.0)
    )
    assert nested.reward == pytest.approx(2.0)
    with pytest.raises(ConfigError, match="distinct names"):
        Rubric((Criterion("a", rubric), Criterion("a", rubric)))


def test_math_verifier_is_the_envs_checker_and_implements_the_protocol():
    verifier = MathVerifier()
    assert isinstance(verifier, Verifier)
    env = gym.make("gfcr/Math-v0", dataset="mmath", split="AIME2024")
    _, info = env.reset(options={"task_id": "mmath/AIME2024/0"})
    task = info["task"]
    for action in (f"\\boxed{{{task.gold}}}", "\\boxed{-1}", "no box"):
        _, reward, *_, step_info = env.step(action)
        verdict = verifier.verify(task, one_step(action))
        assert verdict.reward == reward and verdict.signals == step_info["signals"]
        env.reset(options={"task_id": task.id})


def test_group_terms_majority_vote_and_kimi_length_penalty():
    group = [one_step(a) for a in ["7", "7", "8", "7"]]
    assert MajorityVote(lambda g: [t.steps[-1].action for t in g]).scores(Task("t", "?"), group) == [
        1,
        1,
        0,
        1,
    ]
    lengths = [10, 30, 50, 20]
    group = [one_step("x" * n) for n in lengths]
    for t, r in zip(group, [1.0, 1.0, 0.0, 0.0], strict=True):
        t.steps[-1].reward = r
    lo, hi = min(lengths), max(lengths)
    expected = []
    for t, n in zip(group, lengths, strict=True):
        lam = 0.5 - (n - lo) / (hi - lo)
        expected.append(lam if t.total_reward >= 1 else min(0.0, lam))
    assert LengthPenalty().scores(Task("t", "?"), group) == pytest.approx(expected)


def test_process_score_hook_writes_each_steps_signal():
    class Score:
        def score(self, trajectory):
            return float(len(trajectory.steps))

    hook = ProcessScoreHook(Score())
    t = Trajectory("e", "t", "?")
    for n in range(3):
        t.steps.append(Step(str(n), "", 0.0, False, False))
        hook.on_step(t, t.steps[-1])
    assert [s.signals["process_score"] for s in t.steps] == [1.0, 2.0, 3.0]
    assert np.isclose(sum(s.signals["process_score"] for s in t.steps), 6.0)
