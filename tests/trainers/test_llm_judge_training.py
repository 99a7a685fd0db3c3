"""`[judge.llm]` inside real `gfcr train` steps: a relative judge's scores are the term `llm` of
the reward the advantages use, exactly; the tiny model as a real judge answers junk, and every
episode it judged is a judge failure left out of training, never scored 0."""

from __future__ import annotations

import logging
import re
import uuid

import pytest

from gfcr.core.policy import Completion
from gfcr.filter import EnvReward, GroupJudge, JudgeStage, Weighted, group_advantages
from gfcr.trainers import Trainer


class PrefersShorter:
    """A real policy judging pairs: the shorter response wins, equal lengths tie."""

    name, version = f"prefers-shorter-{uuid.uuid4().hex[:8]}", "1"

    def generate(self, requests):
        out = []
        for request in requests:
            prompt = request.messages[-1].content
            tag = re.search(r"one line `(VERDICT \w+):", prompt)[1]
            a, b = (len(re.search(rf"Response {side}:\n(.*?)\n\n(?:Response B:|End your)", prompt, re.DOTALL)[1])
                    for side in "AB")  # fmt: skip
            out.append(Completion(f"{tag}: {'A' if a < b else 'B' if b < a else 'tie'}"))
        return out


def test_a_pairwise_judges_scores_are_the_llm_term_of_the_reward_the_advantages_use(make_config):
    trainer = Trainer(make_config(steps=1, rollout={"group_size": 4}))
    judge = GroupJudge(PrefersShorter(), mode="pairwise", include_gold=False)
    trainer.pipeline.judge = JudgeStage((Weighted("verifier", EnvReward()), Weighted("llm", judge, 0.5)))
    metrics = trainer.rl_step()
    batch = trainer.last_rollout
    assert batch is not None and metrics["judge/failures"] == 0
    for group in batch.groups.values():
        lengths = [len(t.steps[-1].action) for t in group]
        for t, n in zip(group, lengths, strict=True):
            wins = sum((n < m) + 0.5 * (n == m) for m in lengths) - 0.5  # itself: a tie, taken out
            assert t.reward_terms == {"verifier": t.total_reward, "llm": pytest.approx(0.5 * wins / 3)}
    samples = trainer.pipeline.credit(batch)
    expected = [a for g in batch.groups.values() for a in group_advantages([t.reward for t in g], "grpo")]
    assert [s.advantage for s in samples] == pytest.approx(expected)


def test_the_tiny_model_as_judge_makes_every_episode_a_judge_failure_not_a_zero(
    make_config, tiny_model, caplog
):
    """And the trainer's warning names the judge as the cause (SmolLM2-135M as RULER's judge on
    math failed every episode of every step: docs/benchmarks.md)."""
    judge = {"llm": {"model": f"hf:{tiny_model}", "mode": "pointwise", "max_tokens": 4, "deadline_s": 120.0}}
    trainer = Trainer(make_config(judge=judge, steps=1))
    assert [w.name for w in trainer.pipeline.judge.terms] == ["verifier", "llm"]
    metrics = trainer.rl_step()
    batch = trainer.last_rollout
    assert batch is not None
    judged = [t for t in batch.generated if t.failure is None or t.failure.startswith("judge_failure")]
    assert judged and all(t.status == "failed" and t.signals["judge_failure"] for t in judged)
    assert metrics["judge/failures"] == len(judged) and metrics["credit/samples"] == 0
    with caplog.at_level(logging.WARNING, logger="gfcr.trainers.watch"):
        assert "diagnose/failed_share" in trainer.watch.check(1, metrics)
    assert "point [judge.llm] model at a stronger one" in caplog.text
