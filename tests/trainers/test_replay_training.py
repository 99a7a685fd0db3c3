"""Off-policy replay inside real `gfcr train` steps (issue 33, "Replay that stays on-policy enough").

The tiny model trains on gfcr/TestParity-v0 (an odd action length pays, so groups have a spread).
RePO's mix puts stored samples of each prompt into its group at the keep stage, the trainer
recomputes their old logprobs under the current policy (and with `tis` weighs them against their
behaviour policy), the buffer records that refresh, and evicts by policy version. The
generation/training mismatch is measured on a real HF policy whose reported logprobs are shifted
on purpose, and truncated importance sampling on fresh samples scales their gradient as declared.
"""

from __future__ import annotations

import dataclasses
import math

import pytest

from gfcr.core.policy import version_number
from gfcr.filter.indicators import replayed
from gfcr.trainers import Trainer


@pytest.mark.parametrize("correction", ["recompute", "tis"])
def test_replayed_samples_are_mixed_in_corrected_and_refreshed(make_config, correction):
    replay = {"enabled": True, "rescue": False, "mix_ratio": 0.4, "mix_rule": "recent", "max_staleness": 1}
    trainer = Trainer(make_config(env={"num_tasks": 2}, replay=replay, steps=4))
    moved = False  # whether an update has moved the weights since the first rollout
    for step in range(4):
        metrics = trainer.rl_step()
        batch = trainer.last_rollout
        fresh = {t.id for t in batch.generated}
        mixed = [t for t in batch.trained if replayed(t)]
        assert metrics["keep/mixed"] == len(mixed) == metrics["replay/samples"]
        if step == 0:  # the buffer held only this step's own episodes, which are never mixed in
            assert not mixed
        else:  # round(3 · 0.4 / 0.6) = 2 stored samples of its prompt join each group of 3
            assert all(sum(replayed(t) for t in g) == 2 for g in batch.groups.values())
            assert not fresh & {t.id for t in mixed}
            assert all(version_number(t.provenance.policy_version) < step for t in mixed)
            assert {trainer.replay.refresh_of(t.id).version for t in mixed} == {step}
            assert 0 <= metrics["replay/truncated_share"] <= 1 and metrics["replay/ratio_mean"] > 0
            if moved:  # the stored logprobs are not the current policy's: they were recomputed
                assert metrics["replay/logprob_abs_diff"] > 0
        moved |= not metrics["update/skipped"]
    versions = [row["version_number"] for row in trainer.replay.state_dict()["rows"]]
    assert min(versions) >= trainer.step - 2  # the last keep stage (version 3) evicted what lagged > 1


def shift_reported_logprobs(policy, shift: float) -> None:
    """Make a real HF policy report each sampled token's logprob `shift` off the model's, as a
    different engine (vLLM, a quantised server) would: its tokens are sampled as before."""
    generate = policy.generate

    def shifted(requests):
        return [
            dataclasses.replace(c, logprobs=tuple(lp + shift for lp in c.logprobs))
            for c in generate(requests)
        ]

    policy.generate = shifted


def one_step(make_config, shift: float, **loss) -> dict:
    """One step on groups of 6 (a reward spread, so an update, on any seed), the engine's reported
    logprobs shifted by `shift`."""
    config = make_config(
        optim={"recompute_old_logprobs": True}, loss=loss, rollout={"group_size": 6}, steps=1
    )
    trainer = Trainer(config)
    if shift:
        shift_reported_logprobs(trainer.models.policy, shift)
    return trainer.rl_step()


def test_the_generation_training_mismatch_is_measured_and_tis_corrects_fresh_samples(make_config):
    """The engine reports logprobs 1.0 below the trainer's: the mismatch is measured (|Δ| = 1,
    k3 KL = e − 2, every ratio π_old/μ = e), and with tis_fresh every token weighs min(e, 2) = 2,
    so the step's gradient is exactly twice the uncorrected one on the same rollouts."""
    honest = one_step(make_config, 0.0)
    assert honest["mismatch/logprob_abs_diff"] < 1e-3 and honest["mismatch/truncated_share"] == 0.0
    plain = one_step(make_config, -1.0)
    assert plain["mismatch/logprob_abs_diff"] == pytest.approx(1.0, abs=1e-3)
    assert plain["mismatch/ratio_mean"] == pytest.approx(math.e, rel=1e-3)
    assert plain["mismatch/kl"] == pytest.approx(math.e - 2.0, rel=1e-2)
    corrected = one_step(make_config, -1.0, tis_fresh=True, tis_cap=2.0)
    assert corrected["mismatch/truncated_share"] == 1.0
    assert corrected["rollout/reward_mean"] == plain["rollout/reward_mean"]  # the same rollouts
    assert not plain["update/skipped"]
    assert corrected["optim/grad_norm"] == pytest.approx(2.0 * plain["optim/grad_norm"], rel=1e-4)
