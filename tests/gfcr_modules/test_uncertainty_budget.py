"""Uncertainty-aware allocation: a budget gives more samples to prompts whose answers scattered in meaning."""

from __future__ import annotations

import math

import gymnasium as gym
import pytest

import gfcr  # noqa: F401  (registers the envs)
from gfcr.control import ControlConfig, RolloutController
from gfcr.core import Step, Trajectory
from gfcr.errors import ConfigError


@pytest.fixture(scope="module")
def answered():
    """answered(task, replies): the real math env's trajectories of `replies` to one AIME task."""
    env = gym.make("gfcr/Math-v0", dataset="mmath", split="AIME2024")

    def play(task: str, replies: list[str]) -> list[Trajectory]:
        out = []
        for reply in replies:
            obs, _ = env.reset(options={"task_id": "mmath/AIME2024/0"})
            _, reward, terminated, truncated, info = env.step(reply)
            out.append(
                Trajectory(
                    "gfcr/Math-v0",
                    task,
                    str(obs),
                    [Step(reply, "", reward, terminated, truncated, info["signals"])],
                )
            )
        return out

    yield play
    env.close()


def test_a_budget_gives_the_scattered_prompt_more_samples(answered):
    # Same rewards (one right, three wrong), so the same Beta posterior: only the answers differ.
    scattered = answered("scattered", ["\\boxed{204}", "\\boxed{1}", "\\boxed{2}", "\\boxed{3}"])
    agreed = answered("agreed", ["\\boxed{204}", "\\boxed{7}", "\\boxed{7}", "\\boxed{7.0}"])

    def plan(weight: float) -> dict[str, int]:
        config = ControlConfig(num_prompts=2, sample_budget=16, max_samples=16, uncertainty_weight=weight)
        controller = RolloutController(config)
        controller.observe(scattered + agreed)
        return controller.allocate(["scattered", "agreed"])

    controller = RolloutController(ControlConfig(num_prompts=2, sample_budget=16))
    controller.observe(scattered + agreed)
    by_hand = -(0.25 * math.log(0.25) + 0.75 * math.log(0.75)) / math.log(4)  # clusters of 1 and 3
    assert controller.history.get("scattered").semantic_entropy == pytest.approx(1.0)
    assert controller.history.get("agreed").semantic_entropy == pytest.approx(by_hand)
    assert plan(0.0) == {"scattered": 8, "agreed": 8}  # the posterior alone cannot tell them apart
    weighted = plan(4.0)
    assert weighted["scattered"] > weighted["agreed"] and sum(weighted.values()) == 16


def test_the_history_keeps_the_last_groups_entropy_halving_older_ones(answered):
    controller = RolloutController(ControlConfig(num_prompts=1))
    controller.observe(answered("q", ["\\boxed{1}", "\\boxed{2}"]))  # normalised 1.0
    controller.observe(answered("q", ["\\boxed{1}", "\\boxed{1}"]))  # 0.0
    assert controller.history.get("q").semantic_entropy == 0.5


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"uncertainty_weight": 1.0}, "no budget is set"),
        ({"uncertainty_weight": -1.0, "sample_budget": 8}, "uncertainty_weight must be >= 0"),
    ],
)
def test_bad_uncertainty_weights_are_config_errors(table, message):
    with pytest.raises(ConfigError, match=message):
        ControlConfig(**table)
