"""The judge stage's composition (gfcr.filter.compose): terms weighted over a group, gates, judge
failures, and the `[judge]` settings that build it."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from gfcr.core import Step, Task, Trajectory
from gfcr.core.config import from_dict
from gfcr.errors import ConfigError
from gfcr.filter import EnvReward, JudgeConfig, JudgeStage, ShorterBetter, Weighted

TASK = Task("t", "?")


def episode(action: str, reward: float, **signals: object) -> Trajectory:
    return Trajectory("e", "t", "?", [Step(action, "", reward, True, False, dict(signals))])


class Scripted:
    """A term with fixed scores (None: it could not score that member)."""

    def __init__(self, scores: Sequence[float | None]) -> None:
        self.given = list(scores)

    def scores(self, task: Task, group: Sequence[Trajectory]) -> list[float | None]:
        return self.given[: len(group)]


def test_terms_are_weighted_recorded_and_summed_into_the_reward():
    group = [episode("a", 1.0), episode("b", 0.0)]
    stage = JudgeStage((Weighted("verifier", EnvReward(), 2.0), Weighted("llm", Scripted([0.5, 0.25]), 0.5)))
    assert stage.judge(TASK, group) == 0
    assert [t.reward_terms for t in group] == [
        {"verifier": 2.0, "llm": 0.25},
        {"verifier": 0.0, "llm": 0.125},
    ]
    assert [t.reward for t in group] == [2.25, 0.125]
    assert [t.total_reward for t in group] == [1.0, 0.0]  # the env's reward is left as it was


def test_a_failed_gate_zeroes_or_caps_the_reward_and_records_its_cut():
    def group():
        return [episode("a", 1.0, format_ok=False), episode("b", 1.0, format_ok=True)]

    terms = (Weighted("verifier", EnvReward()), Weighted("llm", Scripted([1.0, 1.0])))
    zeroed = group()
    JudgeStage(terms, gates=("format_ok",)).judge(TASK, zeroed)
    assert [t.reward for t in zeroed] == [0.0, 2.0]
    assert zeroed[0].reward_terms["gate"] == -2.0 and "gate" not in zeroed[1].reward_terms
    capped = group()
    JudgeStage(terms, gates=("format_ok",), gate="cap", gate_reward=0.5).judge(TASK, capped)
    assert [t.reward for t in capped] == [0.5, 2.0]


def test_a_gate_on_a_signal_the_env_does_not_emit_is_a_config_error():
    with pytest.raises(ConfigError, match="'formatted'.*its signals: format_ok"):
        JudgeStage(gates=("formatted",)).judge(TASK, [episode("a", 1.0, format_ok=True)])


def test_a_member_no_term_could_score_is_a_judge_failure_never_a_zero():
    group = [episode("a", 1.0), episode("b", 0.0), episode("c", 1.0)]
    stage = JudgeStage((Weighted("verifier", EnvReward()), Weighted("llm", Scripted([1.0, None, 0.0]))))
    assert stage.judge(TASK, group) == 1
    failed = group[1]
    assert failed.status == "failed" and failed.failure == "judge_failure: no score from llm"
    assert failed.signals["judge_failure"] is True and failed.reward_terms == {}
    assert [t.status for t in group] == ["ok", "failed", "ok"]
    assert group[2].reward_terms == {"verifier": 1.0, "llm": 0.0}


def test_episodes_the_infrastructure_failed_are_not_judged():
    crashed = episode("a", 0.0)
    crashed.status = "failed"
    seen: list[int] = []

    class Counting(Scripted):
        def scores(self, task, group):
            seen.append(len(group))
            return super().scores(task, group)

    JudgeStage((Weighted("llm", Counting([1.0, 1.0])),)).judge(TASK, [crashed, episode("b", 1.0)])
    assert seen == [1] and crashed.reward_terms == {}


def test_shorter_better_measures_the_distance_to_the_sample_optimal_length():
    solved = [episode("x" * 4, 1.0), episode("x" * 10, 1.0), episode("x" * 2, 0.0)]
    assert ShorterBetter().scores(TASK, solved) == [0.0, -6.0, -2.0]  # SOL: the shortest correct, 4
    unsolved = [episode("x" * 4, 0.0), episode("x" * 8, 0.0)]
    assert ShorterBetter().scores(TASK, unsolved) == [-2.0, -2.0]  # none correct: SOL is the mean, 6


def test_judge_settings_build_the_stage_and_refuse_what_makes_no_reward():
    config = from_dict(JudgeConfig, {"gates": ["format_ok"], "length": {"kind": "kimi", "weight": 0.5}})
    stage = config.stage()
    assert [(w.name, w.weight) for w in stage.terms] == [("verifier", 1.0), ("length", 0.5)]
    assert stage.gates == ("format_ok",)
    label_free = from_dict(JudgeConfig, {"verifier": 0.0, "majority": {"weight": 1.0}})
    assert [w.name for w in label_free.stage().terms] == ["majority"]
    with pytest.raises(ConfigError, match="no reward at all"):
        from_dict(JudgeConfig, {"verifier": 0.0})
    with pytest.raises(ConfigError, match="gate must be one of zero, cap"):
        from_dict(JudgeConfig, {"gate": "halve"})
    with pytest.raises(ConfigError, match="kind must be one of none, shorter_better, kimi"):
        from_dict(JudgeConfig, {"length": {"kind": "short"}})


def test_reward_terms_round_trip_through_json_and_old_lines_still_load():
    judged = episode("a", 1.0)
    judged.reward_terms = {"verifier": 1.0, "length": -0.5}
    back = Trajectory.from_json(judged.to_json())
    assert back.reward_terms == judged.reward_terms and back.reward == 0.5
    plain = episode("a", 1.0)
    assert "reward_terms" not in plain.to_json() and Trajectory.from_json(plain.to_json()).reward == 1.0


def test_a_label_free_vote_refuses_an_env_whose_answers_cluster_by_the_gold():
    import gfcr.envs.sql  # noqa: F401  (registers the SQL answer family, which reads the gold)

    stage = from_dict(JudgeConfig, {"verifier": 0.0, "majority": {"weight": 1.0}}).stage()
    sql = Trajectory("gfcr/SQL-v0", "t", "?", [Step("SELECT 1", "", 1.0, True, False, {"match": True})])
    with pytest.raises(ConfigError, match="would read its gold answer"):
        stage.judge(TASK, [sql])
