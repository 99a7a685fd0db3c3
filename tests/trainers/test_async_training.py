"""[async]: rollouts run ahead of the updates by at most max_staleness versions; every token names
the version that sampled it; stale tokens are corrected against their behaviour policy."""

from __future__ import annotations

import threading

import pytest
import torch

from gfcr.trainers import Trainer
from gfcr.trainers import trainer as trainer_module
from gfcr.trainers.losses import tis_weights
from gfcr.trainers.pipeline import mixed_version_turns
from gfcr.trainers.update import recompute_logprobs


def _metrics_without_timing(history):
    """Each step's metrics less its timings (seconds: a key with a part ending in `_s`, or perf/)."""
    return [
        {
            k: v
            for k, v in step.items()
            if not k.startswith("perf/") and not any(p.endswith("_s") for p in k.split("/"))
        }
        for step in history
    ]


def _parameters(trainer: Trainer) -> dict[str, torch.Tensor]:
    return {name: p.detach().clone() for name, p in trainer.model.named_parameters()}


def test_max_staleness_zero_is_the_synchronous_run(make_config):
    """[async] max_staleness = 0 runs as a config without [async]: step for step, weight for weight."""
    plain = Trainer(make_config("plain", steps=3))
    zero = Trainer(make_config("zero", steps=3, **{"async": {"max_staleness": 0}}))
    assert _metrics_without_timing(plain.train()) == _metrics_without_timing(zero.train())
    assert zero.stream is None and zero.models.policy.model is zero.model  # no copy, no thread
    for name, weight in _parameters(plain).items():
        assert torch.equal(weight, _parameters(zero)[name]), name


def _episodes(trainer: Trainer, steps: int) -> list[list[tuple]]:
    """Each step's trained episodes: ids, sampled ids, rewards (not the versions)."""
    out = []
    with trainer:
        for _ in range(steps):
            trainer.rl_step()
            out.append(
                sorted((t.id, tuple(t.tokens.completion_ids), t.reward) for t in trainer.last_rollout.trained)
            )
    return out


def test_rollouts_ahead_sample_what_synchronous_rollouts_sample(make_config):
    """With the weights frozen (an AdamW step of 1e-30 leaves every float32 weight as it is), the batches generated ahead on their own thread are the
    synchronous run's, episode for episode: the pipeline's seeds and choices do not depend on when
    or where a batch is made."""
    frozen = {"optim": {"lr": 1e-30, "micro_batch_size": 4}}
    sync = _episodes(Trainer(make_config("sync", **frozen)), steps=3)
    ahead = _episodes(Trainer(make_config("ahead", **frozen, **{"async": {"max_staleness": 1}})), steps=3)
    assert ahead == sync


def _held_pushes(trainer: Trainer, staleness: int) -> None:
    """Make every weight push wait until the stream has made its next `staleness` batches: each
    of them is then generated with weights exactly that many versions older than the push."""
    push = trainer.models.sync

    def held(step: int) -> None:
        if trainer.stream is not None:
            stream = trainer.stream
            with stream._changed:
                stream._changed.wait_for(lambda: len(stream._ready) >= staleness or stream._error is not None)
        push(step)

    trainer.models.sync = held


@pytest.mark.parametrize("staleness", [1, 2])
def test_no_trained_token_is_older_than_max_staleness(make_config, monkeypatch, staleness):
    """Every trained token names the version that sampled it; none is more than max_staleness
    versions older than its update, and with the generator held at its bound the oldest reach it.
    Stale tokens keep their behaviour logprobs (μ, the rollout's), get π_old recomputed under the
    current weights, and weigh min(π_old/μ, C) (tis, the default correction)."""
    trainer = Trainer(make_config(steps=4, **{"async": {"max_staleness": staleness}}))
    _held_pushes(trainer, staleness)
    trained: list[tuple[int, list]] = []
    update = trainer_module.policy_update

    def spy(model, optimizer, samples, settings, reference=None):
        trained.append((trainer.step, list(samples)))
        return update(model, optimizer, samples, settings, reference)

    monkeypatch.setattr(trainer_module, "policy_update", spy)
    history = trainer.train()
    assert [round(h["async/staleness_max"]) for h in history] == [min(step, staleness) for step in range(4)]
    cap = trainer.config.loss.tis_cap
    for step, samples in trained:
        for sample in samples:
            assert sample.versions is not None
            ages = [step - v for v, m in zip(sample.versions, sample.loss_mask, strict=True) if m]
            assert all(0 <= age <= staleness for age in ages)
            if max(ages) == 0:
                continue
            assert sample.behaviour_logprobs is not None and sample.is_weights is not None
            mask = torch.tensor(sample.loss_mask, dtype=torch.float32)[None]
            _, weight = tis_weights(
                torch.tensor(sample.old_logprobs)[None],
                torch.tensor(sample.behaviour_logprobs)[None],
                mask,
                cap,
            )
            assert sample.is_weights == weight[0].tolist()
    stale = [h for h in history if h["async/staleness_max"] > 0]
    assert stale and all(f"async/staleness_{staleness}/ratio_mean" in h for h in stale[-1:])


def test_stale_samples_old_logprobs_are_the_current_policys(make_config, monkeypatch):
    """Decoupled PPO's proximal policy: a stale sample's π_old is recomputed under the weights of
    the update that trains it, and its behaviour logprobs are the rollout engine's."""
    trainer = Trainer(make_config(steps=2, **{"async": {"max_staleness": 1}}))
    _held_pushes(trainer, 1)
    seen = []
    update = trainer_module.policy_update

    def spy(model, optimizer, samples, settings, reference=None):
        seen.append((list(samples), recompute_logprobs(model, samples, settings)))
        return update(model, optimizer, samples, settings, reference)

    monkeypatch.setattr(trainer_module, "policy_update", spy)
    trainer.train()
    samples, current = seen[-1]  # step 1: every token sampled by version 0
    trajectories = {
        tuple(t.tokens.prompt_ids + t.tokens.completion_ids): t for t in trainer.last_rollout.trained
    }
    assert any(s.old_logprobs != s.behaviour_logprobs for s in samples)  # the update moved the policy
    for sample, now in zip(samples, current, strict=True):
        assert sample.old_logprobs == now
        tokens = trajectories[tuple(sample.input_ids)].tokens
        assert sample.behaviour_logprobs == [0.0] * len(tokens.prompt_ids) + tokens.logprobs


def test_a_failing_generator_fails_the_step_with_its_error(make_config):
    """An error on the generator's thread is raised by the trainer, not lost with the thread."""
    trainer = Trainer(make_config(steps=2, **{"async": {"max_staleness": 1}}))

    def broken(candidates=None):
        raise RuntimeError("the env pool is gone")

    trainer.pipeline.step = broken
    with pytest.raises(RuntimeError, match="the env pool is gone"), trainer:
        trainer.rl_step()
    assert not any(t.name == "gfcr-rollouts" for t in threading.enumerate())


def test_an_episode_running_across_a_weight_push_goes_on_with_the_new_weights(tiny_model, steps_env):
    """Partial rollouts: weights pushed after an episode's first turn (its rollout is not restarted)
    sample its later turns. Each token names the version that sampled it (-1 on observations, loss
    mask 0 there), and its logprob is that version's; a branch retaking the first turn from its
    third token keeps the parent's first two tokens with their version 0."""
    from gfcr.agents import Runner, RunnerConfig, episodes_for_env
    from gfcr.agents.policies.hf import HFPolicy
    from gfcr.core import Controller, Decision
    from gfcr.core.policy import SamplingParams

    policy = HFPolicy(tiny_model)
    policy.version = "0"
    before = {n: p.detach().clone() for n, p in policy.model.named_parameters()}
    after = {
        n: w + 0.05 * torch.randn(w.shape, generator=torch.Generator().manual_seed(0))
        for n, w in before.items()
    }

    class PushAfterFirstTurn(Controller):
        def after_step(self, trajectory):
            if len(trajectory.steps) != 1 or trajectory.id.count(".") or policy.version != "0":
                return Decision()
            policy.load_weights(after, version="1")
            return Decision(branch_tokens=(2,) if len(trajectory.tokens.completion_ids) >= 3 else ())

    config = RunnerConfig(concurrency=1, sampling=SamplingParams(max_tokens=8))
    specs = episodes_for_env(steps_env, 1, seed=3)
    result = Runner(policy, config, controller=PushAfterFirstTurn()).run(specs)
    by_id = {t.id: t for t in result.trajectories}
    root = by_id[specs[0].id]
    tokens = root.tokens
    first = tokens.loss_mask.index(0)  # the first observation token: turn 1 ends before it
    assert tokens.versions[:first] == [0] * first
    assert all(v == -1 for v, m in zip(tokens.versions, tokens.loss_mask, strict=True) if not m)
    assert {v for v, m in zip(tokens.versions[first:], tokens.loss_mask[first:], strict=True) if m} == {1}
    ids = torch.tensor([tokens.prompt_ids + tokens.completion_ids])
    for weights, version in ((before, 0), (after, 1)):
        with torch.no_grad():
            policy.load_weights(weights, version=str(version))
            logits = policy.model(ids).logits.float()
        lp = torch.log_softmax(logits[0, :-1], -1).gather(1, ids[0, 1:, None])[:, 0]
        own = [i for i, v in enumerate(tokens.versions) if v == version]
        prompt = len(tokens.prompt_ids)
        expected = torch.tensor([tokens.logprobs[i] for i in own])
        assert torch.allclose(lp[[prompt - 1 + i for i in own]], expected, atol=1e-4)
    branches = [t for t in result.trajectories if t.id != root.id]
    assert branches  # the seeded first turn is long enough to branch inside
    for branch in branches:  # took turn 1 again from token 2, with the pushed weights
        turn = branch.tokens.versions[: branch.tokens.loss_mask.index(0)]
        assert turn[:2] == [0, 0] and set(turn[2:]) == {1}
        assert branch.tokens.completion_ids[:2] == tokens.completion_ids[:2]


def test_an_async_run_resumes_from_its_checkpoint(make_config):
    """A checkpoint holds the pipeline's state after the last batch trained (not after the batches
    made ahead): the resumed run makes those again and carries on, step for step."""
    sections = {"async": {"max_staleness": 1}, "steps": 4, "checkpoint_every": 2}
    first = Trainer(make_config("run", **sections))
    _held_pushes(first, 1)  # each push waits for the next batch: step 2's is made before step 2 runs
    first.train(until=2)
    trained_rounds = first.rollout_state["rollouts"]["rounds_total"]
    assert first.pipeline.rounds_total > trained_rounds  # the generator had made step 2's batch
    resumed = Trainer(make_config("run", **sections))
    resumed.begin()
    assert resumed.step == 2 and resumed.pipeline.rounds_total == trained_rounds
    history = resumed.train()
    assert [h["step"] for h in history] == [3, 4]
    assert all(h["async/staleness_max"] <= 1 for h in history)


def test_lora_adapters_are_pushed_to_the_rollout_copy(make_config):
    """With LoRA the rollout copy gets the trained adapters after each update, and only those."""
    trainer = Trainer(make_config(steps=2, model={"lora_rank": 4}, **{"async": {"max_staleness": 1}}))
    trainer.train()
    copy = dict(trainer.models.policy.model.named_parameters())
    trained = {n: p for n, p in trainer.model.named_parameters() if p.requires_grad}
    assert trained and all("lora_" in n for n in trained)
    for name, weight in trained.items():
        assert torch.equal(copy[name], weight.detach()), name
    assert copy[name] is not weight and trainer.models.policy.version == "2"


def test_a_turn_interrupted_by_a_push_is_finished_by_the_new_weights(tiny_model, steps_env):
    """Partial rollouts at a token boundary: an interruptible policy stops a turn for a push; the
    runner asks for the rest of the turn, which the pushed weights sample. Turn 2 is interrupted
    twice: it is one step with one action, its tokens all at loss mask 1, its first token named
    version 0, its second version 1, the rest version 2, each with its version's logprobs; its cost
    counts every token once."""
    from gfcr.agents import Runner, RunnerConfig, episodes_for_env
    from gfcr.agents.policies.hf import HFPolicy
    from gfcr.core import Controller, Decision
    from gfcr.core.policy import SamplingParams

    before_weights = {n: p.detach().clone() for n, p in HFPolicy(tiny_model).model.named_parameters()}
    pushed = [
        {
            n: w + 0.05 * torch.randn(w.shape, generator=torch.Generator().manual_seed(k))
            for n, w in before_weights.items()
        }
        for k in (1, 2)
    ]

    class PushedDuringTurnTwo(HFPolicy):
        """Two pushes arrive while turn 2 is generated (set off by the controller): each stops
        the turn after one more token."""

        def generate(self, requests):
            out = super().generate(requests)
            if self.push_pending.is_set():  # what `load_weights` sets while it waits for the lock
                version = int(self.version) + 1
                self.load_weights(pushed[version - 1], version=str(version))
                if version == 1:
                    self.push_pending.set()  # the second push is waiting already
            return out

    policy = PushedDuringTurnTwo(tiny_model)
    policy.version, policy.interruptible = "0", True

    class PushAfterTurnOne(Controller):
        def after_step(self, trajectory):
            if len(trajectory.steps) == 1:
                policy.push_pending.set()  # turn 2 stops after its first token
            return Decision()

    config = RunnerConfig(concurrency=1, sampling=SamplingParams(max_tokens=8))
    spec = episodes_for_env(steps_env, 1, seed=5)[0]
    (trajectory,) = Runner(policy, config, controller=PushAfterTurnOne()).run([spec]).trajectories
    assert trajectory.status == "ok" and len(trajectory.steps) == 3, trajectory.failure
    tokens = trajectory.tokens
    turns, start = [], 0
    for i, (m, next_m) in enumerate(zip(tokens.loss_mask, [*tokens.loss_mask[1:], 0], strict=True)):
        if m and not next_m:
            turns.append(list(range(start, i + 1)))
        if not m:
            start = i + 1
    second = turns[1]
    assert len(second) > 2 and [tokens.versions[i] for i in second] == [0, 1] + [2] * (len(second) - 2)
    assert all(tokens.versions[i] == 0 for i in turns[0]) and all(tokens.versions[i] == 2 for i in turns[2])
    assert trajectory.steps[1].action == policy.decode([tokens.completion_ids[i] for i in second])
    assert trajectory.cost.tokens_out == sum(tokens.loss_mask)
    assert mixed_version_turns(trajectory) == 1  # what generate/mixed_version_turns counts
    ids = torch.tensor([tokens.prompt_ids + tokens.completion_ids])
    prompt = len(tokens.prompt_ids)
    for version, weights in enumerate((before_weights, *pushed)):
        policy.load_weights(weights, version=str(version))
        with torch.no_grad():
            logits = policy.model(ids).logits.float()
        lp = torch.log_softmax(logits[0, :-1], -1).gather(1, ids[0, 1:, None])[:, 0]
        own = [i for i, v in enumerate(tokens.versions) if v == version]
        expected = torch.tensor([tokens.logprobs[i] for i in own])
        assert torch.allclose(lp[[prompt - 1 + i for i in own]], expected, atol=1e-4)


def test_interrupted_turns_in_async_training_keep_the_bound(make_config):
    """[async] interrupt_turns: pushes stop the turns in flight; training runs and the bound holds."""
    trainer = Trainer(
        make_config(
            steps=3, rollout={"max_tokens": 24}, **{"async": {"max_staleness": 1, "interrupt_turns": True}}
        )
    )
    assert trainer.models.policy.interruptible
    history = trainer.train()
    assert all(h["async/staleness_max"] <= 1 for h in history)
    for t in trainer.last_rollout.trained:
        assert all(v >= 1 for v, m in zip(t.tokens.versions, t.tokens.loss_mask, strict=True) if m)
