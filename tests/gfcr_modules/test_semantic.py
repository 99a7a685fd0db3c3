"""Semantic clusters by each env family's own equivalence, and their entropy against a hand computation."""

from __future__ import annotations

import math

import gymnasium as gym
import pytest

import gfcr  # noqa: F401  (registers the envs)
from gfcr.core import Step, Trajectory
from gfcr.filter.semantic import answer_clusters, answer_of, semantic_entropy


def played(env: gym.Env, env_id: str, task_id: str, actions: list[str]) -> Trajectory:
    """A trajectory of the real env stepped with `actions` (until it ends)."""
    obs, _ = env.reset(options={"task_id": task_id})
    trajectory = Trajectory(env_id, task_id, str(obs))
    for action in actions:
        obs, reward, terminated, truncated, info = env.step(action)
        trajectory.steps.append(Step(action, str(obs), float(reward), terminated, truncated, info["signals"]))
        if terminated or truncated:
            break
    return trajectory


@pytest.fixture(scope="module")
def math_env():
    env = gym.make("gfcr/Math-v0", dataset="mmath", split="AIME2024")
    yield env
    env.close()


def math_group(env: gym.Env, replies: list[str]) -> list[Trajectory]:
    return [played(env, "gfcr/Math-v0", "mmath/AIME2024/0", [reply]) for reply in replies]


def test_math_answers_cluster_by_the_envs_equivalence(math_env):
    # 1/2, 0.5 and \frac{1}{2} are one answer to is_equivalent; 204 (the gold) another; no box: none.
    group = math_group(
        math_env,
        [
            "\\boxed{1/2}",
            "so \\boxed{0.5}",
            "\\boxed{\\frac{1}{2}}",
            "\\boxed{204}",
            "about a half",
            "\\boxed{204}",
        ],
    )
    assert answer_clusters(group) == [0, 0, 0, 1, None, 1]
    # By hand: clusters of 3 and 2 of 6 members, and the answerless one alone.
    p = [3 / 6, 2 / 6, 1 / 6]
    assert semantic_entropy(group) == pytest.approx(-sum(q * math.log(q) for q in p))


def test_the_same_texts_without_the_math_family_are_all_different(math_env):
    """The mechanism: the family's equivalence is what joins 1/2 and 0.5 (raw text does not)."""
    group = math_group(math_env, ["\\boxed{1/2}", "\\boxed{0.5}"])
    for trajectory in group:
        trajectory.env_id = "other/Env-v0"
    assert answer_clusters(group) == [0, 1]


def test_plain_answer_format_reads_what_the_env_read():
    env = gym.make("gfcr/Math-v0", dataset="mmath", split="AIME2024", answer_format="plain")
    try:
        group = math_group(env, ["The walk takes 204 minutes.", "It is \\boxed{204}.", "I cannot say."])
    finally:
        env.close()
    assert [t.signals["answer_extracted"] for t in group] == [True, True, False]
    assert answer_clusters(group) == [0, 0, None]


def test_entropy_bounds_and_failed_members(math_env):
    same = math_group(math_env, ["\\boxed{7}"] * 4)
    different = math_group(math_env, [f"\\boxed{{{n}}}" for n in range(4)])
    silent = math_group(math_env, ["no answer"] * 4)
    assert semantic_entropy(same) == 0.0
    assert semantic_entropy(different) == pytest.approx(math.log(4))
    # A group that never answers is maximally uncertain, not certain.
    assert semantic_entropy(silent) == pytest.approx(math.log(4))
    # A failed episode (infrastructure) is left out: three agreeing members remain.
    failed = math_group(math_env, ["\\boxed{9}"])[0]
    failed.status, failed.failure = "failed", "env error"
    assert answer_of(failed) is None
    assert semantic_entropy([*same[:3], failed]) == 0.0
    assert semantic_entropy([]) == 0.0


def test_sql_correct_results_are_one_cluster_wrong_ones_by_query():
    env = gym.make("gfcr/SQL-v0", dataset="chinook", mode="single_turn")
    try:
        replies = [
            "```sql\nSELECT COUNT(*) FROM Track\n```",
            "```sql\nSELECT COUNT(TrackId) FROM Track\n```",  # another query, the same result
            "```sql\nSELECT COUNT(*) FROM Album\n```",
            "```sql\nSELECT  COUNT(*)\nFROM Album\n```",  # the same query, other whitespace
            "I do not know.",
        ]
        group = [played(env, "gfcr/SQL-v0", "chinook/001", [reply]) for reply in replies]
    finally:
        env.close()
    assert [t.signals["match"] for t in group] == [True, True, False, False, False]
    assert answer_clusters(group) == [0, 0, 1, 1, None]


def test_sql_multi_turn_reads_the_submission_only():
    env = gym.make("gfcr/SQL-v0", dataset="chinook")
    call = '<tool_call>{{"name": "{}", "arguments": {{"query": "{}"}}}}</tool_call>'
    try:
        submitted = played(env, "gfcr/SQL-v0", "chinook/001", [call.format("submit_sql", "SELECT 1")])
        explored = played(env, "gfcr/SQL-v0", "chinook/001", [call.format("execute_sql", "SELECT 1")])
    finally:
        env.close()
    assert answer_of(submitted) == "SELECT 1"
    assert answer_of(explored) is None  # the episode has not ended on a submission


def test_seed_grpo_factor_by_hand(math_env):
    from gfcr.errors import ConfigError
    from gfcr.filter.seed_grpo import SeedGRPO

    group = math_group(math_env, ["\\boxed{1/2}", "\\boxed{0.5}", "\\boxed{3}", "\\boxed{4}"])
    se = -(0.5 * math.log(0.5) + 2 * 0.25 * math.log(0.25))  # clusters of 2, 1 and 1 of 4
    assert SeedGRPO(alpha=0.8).scale(group) == pytest.approx(1 - 0.8 * se / math.log(4))
    assert SeedGRPO(alpha=2.0, shape="exponential").scale(group) == pytest.approx(
        math.exp(-2 * se / math.log(4))
    )
    assert SeedGRPO().scale(math_group(math_env, ["\\boxed{7}"] * 4)) == 1.0  # all agree: the full update
    with pytest.raises(ConfigError, match="alpha must be >= 0, and <= 1 with shape 'linear'"):
        SeedGRPO(alpha=1.5)
