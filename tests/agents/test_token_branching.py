"""Branching inside a turn (TreeRL's EPTree): children continue the parent's first sampled tokens.

The tiny model samples; a Controller returns `Decision(branch_tokens=...)` (from `BranchTokens`,
or fixed offsets), and the runner plays the children on fresh envs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

import gymnasium as gym
import pytest
from runner_envs import EchoEnv, ScriptPolicy  # noqa: F401  (registers test/Echo-v0)

from gfcr.agents import Runner, RunnerConfig, SamplingParams
from gfcr.agents.runner.specs import EpisodeSpec, env_config
from gfcr.core import Action, Controller, Decision, Message, Request, Step, Task, TokenData, Trajectory
from gfcr.core.hooks import branch_points
from gfcr.envs.base import Outcome, TextEnv
from gfcr.envs.tasks import TaskSource
from gfcr.errors import ConfigError
from gfcr.generate.branching import BranchTokens

MAX_TOKENS = 12


class SaysBack(TextEnv):
    """One turn: the observation is the action's text as the env received it."""

    signal_defaults: ClassVar[dict[str, float | bool]] = {"format_ok": False}

    def __init__(self, render_mode: str | None = None) -> None:
        tasks = [Task("say", "Say something.", gold=None)]
        super().__init__(TaskSource.from_tasks("says-back", tasks), render_mode=render_mode)

    def respond(self, action: Action) -> Outcome:
        return Outcome(f"you wrote: {action.text}", reward=1.0, terminated=True, signals={"format_ok": True})

    @classmethod
    def oracle(cls, task: Task, messages: Sequence[Message]) -> str:
        return "something"


if "test/SaysBack-v0" not in gym.registry:
    gym.register("test/SaysBack-v0", entry_point=SaysBack)


class Branching(Controller):
    """Branches root episodes inside their turns as `BranchTokens` says, or at fixed `offsets`;
    after turn `after_turn` it also makes `copies` turn branches."""

    def __init__(
        self,
        branching: BranchTokens | None = None,
        offsets: tuple[int, ...] = (),
        copies: int = 0,
        after_turn: int = 1,
    ) -> None:
        self.branching, self.offsets, self.copies, self.after_turn = branching, offsets, copies, after_turn

    def after_step(self, trajectory: Trajectory) -> Decision:
        tokens = self.branching.positions(trajectory) if self.branching else ()
        if self.offsets and not branch_points(trajectory.id):
            tokens = self.offsets
        root = not branch_points(trajectory.id)
        copies = self.copies if root and len(trajectory.steps) == self.after_turn else 0
        return Decision(branches=copies, branch_tokens=tokens)


def config(concurrency: int = 4) -> RunnerConfig:
    return RunnerConfig(concurrency=concurrency, sampling=SamplingParams(max_tokens=MAX_TOKENS))


def turn_ids(trajectory: Trajectory) -> list[int]:
    """The sampled ids of a single-turn trajectory."""
    assert all(trajectory.tokens.loss_mask)
    return trajectory.tokens.completion_ids


@pytest.fixture(scope="module")
def single_turn_tree(hf_policy):
    """Two Math episodes and one SaysBack episode, each branched at its middle and its two
    highest-entropy tokens, two children per point."""
    specs = [
        EpisodeSpec(env_config("gfcr/Math-v0", {"split": "AIME2024"}), f"mmath/AIME2024/{i}", seed=i)
        for i in range(2)
    ] + [EpisodeSpec(env_config("test/SaysBack-v0"), "say", seed=5)]
    controller = Branching(BranchTokens(children=2, segments=2, entropy_points=2))
    return Runner(hf_policy, config(), controller=controller).run(specs)


def family(trajectories: Sequence[Trajectory]) -> list[tuple[Trajectory, list[tuple[Trajectory, int]]]]:
    """Each root trajectory and its token branches, with the offsets they branched at."""
    roots = {t.id: t for t in trajectories if not branch_points(t.id)}
    tree: dict[str, list[tuple[Trajectory, int]]] = {i: [] for i in roots}
    for t in trajectories:
        if branch_points(t.id):
            ((turn, offset),) = branch_points(t.id)
            assert turn == 1
            tree[t.id.split(".")[0]].append((t, offset))
    return [(roots[i], children) for i, children in tree.items()]


def test_children_continue_exactly_the_parents_first_tokens(single_turn_tree, hf_policy):
    result = single_turn_tree
    assert result.failed == 0
    tree = family(result.trajectories)
    assert len(tree) == 3
    for parent, children in tree:
        length = len(turn_ids(parent))
        expected = BranchTokens(children=2, segments=2, entropy_points=2).positions(parent)
        assert len(expected) >= 2 and sorted(k for _, k in children) == list(expected)
        for child, k in children:
            ids, tokens, own = turn_ids(child), child.tokens, len(turn_ids(child)) - k
            assert ids[:k] == parent.tokens.completion_ids[:k]
            assert tokens.logprobs[:k] == parent.tokens.logprobs[:k]
            assert tokens.entropies[:k] == parent.tokens.entropies[:k]
            assert tokens.prompt_ids == parent.tokens.prompt_ids and tokens.loss_mask == [1] * len(ids)
            assert 1 <= own <= MAX_TOKENS - k  # the turn's cap covers prefix and continuation
            # the text is the whole turn's, the prefix's first; the env saw and judged it
            prefix_text = hf_policy.decode(ids[:k]).rstrip("\ufffd")  # a character cut by the offset
            assert child.steps[0].action == hf_policy.decode(ids) and child.steps[0].action.startswith(
                prefix_text
            )
            assert len(child.steps) == 1 and child.steps[0].terminated and child.status == "ok"
            if child.env_id == "test/SaysBack-v0":
                assert child.steps[0].observation == f"you wrote: {child.steps[0].action}"
                assert child.total_reward == 1.0
            else:
                assert "correct" in child.steps[0].signals and child.total_reward in (0.0, 1.0)
            # its cost counts only what it generated: the prefix is the parent's
            assert child.cost.tokens_out == own and parent.cost.tokens_out == length
        # two children of one point sample apart (each branch seeds its own draws)
        by_offset: dict[int, list[list[int]]] = {}
        for child, k in children:
            by_offset.setdefault(k, []).append(turn_ids(child)[k:])
        assert all(len(c) == 2 and c[0] != c[1] for c in by_offset.values())


def test_token_branches_reproduce_under_the_same_seeds(single_turn_tree, hf_policy):
    controller = Branching(BranchTokens(children=2, segments=2, entropy_points=2))
    specs = [EpisodeSpec(env_config("test/SaysBack-v0"), "say", seed=5)]
    again = Runner(hf_policy, config(concurrency=1), controller=controller).run(specs)
    first = {
        t.id: t.tokens.completion_ids for t in single_turn_tree.trajectories if t.env_id == "test/SaysBack-v0"
    }
    assert {t.id: t.tokens.completion_ids for t in again.trajectories} == first


@pytest.mark.timeout(240)
def test_each_token_backend_branches_inside_a_turn(token_policy):
    """hf: and vllm: (where a GPU is): the child continues the parent's ids and logprobs."""
    spec = EpisodeSpec(env_config("test/SaysBack-v0"), "say", seed=3)
    result = Runner(token_policy, config(), controller=Branching(offsets=(2, 2))).run([spec])
    by_id = {t.id: t for t in result.trajectories}
    parent, children = by_id[spec.id], [by_id[f"{spec.id}.1t2-{n}"] for n in range(2)]
    for child in children:
        assert turn_ids(child)[:2] == turn_ids(parent)[:2]
        assert child.tokens.logprobs[:2] == parent.tokens.logprobs[:2]
        assert child.steps[0].observation == f"you wrote: {token_policy.decode(turn_ids(child))}"
    assert turn_ids(children[0]) != turn_ids(children[1])


def test_the_episode_token_limit_counts_the_prefix(hf_policy):
    """A child's turn, forced prefix included, stays within max_episode_tokens as its parent's did."""
    runner_config = RunnerConfig(sampling=SamplingParams(max_tokens=MAX_TOKENS), max_episode_tokens=6)
    spec = EpisodeSpec(env_config("test/SaysBack-v0"), "say", seed=3)
    result = Runner(hf_policy, runner_config, controller=Branching(offsets=(4, 4))).run([spec])
    assert len(result.trajectories) == 3 and result.failed == 0
    assert all(len(turn_ids(t)) <= 6 for t in result.trajectories)
    assert sum(len(turn_ids(t)) == 6 for t in result.trajectories) == 3  # a random model fills its cap


def test_a_multi_turn_branch_rewinds_to_before_its_turn(hf_policy):
    """Turn 2 of an Echo episode branched at token 3; turn 1 branched into 2 copies."""
    spec = EpisodeSpec(env_config("test/Echo-v0"), "turns-2", seed=1)

    class AtTurnTwo(Branching):
        def after_step(self, trajectory):
            decision = super().after_step(trajectory)
            turn_two = len(trajectory.steps) == 2 and not branch_points(trajectory.id)
            return Decision(branches=decision.branches, branch_tokens=(3,) if turn_two else ())

    result = Runner(hf_policy, config(), controller=AtTurnTwo(copies=2)).run([spec])
    by_id = {t.id: t for t in result.trajectories}
    parent = by_id[spec.id]
    child = by_id[f"{spec.id}.2t3-0"]
    copies = [by_id[f"{spec.id}.1-{n}"] for n in range(2)]
    assert len(result.trajectories) == 4 and result.failed == 0
    assert len(parent.steps) == len(child.steps) == 2 and child.total_reward == 1.0
    # everything before turn 2 (turn 1, its observation with mask 0) is the parent's, then 3 more tokens
    mask = parent.tokens.loss_mask
    second = max(i for i, m in enumerate(mask) if m == 0) + 1  # where turn 2's tokens start
    assert child.tokens.completion_ids[: second + 3] == parent.tokens.completion_ids[: second + 3]
    assert child.tokens.loss_mask[:second] == mask[:second] and 0 in mask[:second]
    assert child.steps[0] == parent.steps[0] and child.messages[:3] == parent.messages[:3]
    assert child.steps[1].action == hf_policy.decode(child.tokens.completion_ids[second:])
    assert child.cost.tokens_out == len(child.tokens.completion_ids) - second - 3
    # turn branches: turn 1 shared; they count only their own tokens
    assert all(c.steps[0] == parent.steps[0] for c in copies)
    for c in copies:
        assert c.cost.tokens_out == len(c.tokens.completion_ids) - second


def test_a_failing_child_fails_alone(hf_policy):
    class FailsFirstChildren:
        def on_step(self, trajectory, step):
            if trajectory.id.endswith("-0"):
                raise RuntimeError("this child's verifier broke")

    specs = [EpisodeSpec(env_config("test/SaysBack-v0"), "say", seed=2)]
    runner = Runner(
        hf_policy, config(), controller=Branching(offsets=(2, 2, 4)), filters=[FailsFirstChildren()]
    )
    result = runner.run(specs)
    status = {t.id.removeprefix(specs[0].id): t.status for t in result.trajectories}
    assert status == {"": "ok", ".1t2-0": "failed", ".1t2-1": "ok", ".1t4-0": "failed"}
    failed = [t for t in result.trajectories if t.status == "failed"]
    assert all("filter error" in t.failure for t in failed)


def test_an_offset_outside_the_turn_fails_that_episode(hf_policy):
    specs = [EpisodeSpec(env_config("test/SaysBack-v0"), "say", seed=2)]
    result = Runner(hf_policy, config(), controller=Branching(offsets=(2, MAX_TOKENS + 5))).run(specs)
    (parent,) = result.trajectories  # no child of a bad decision is run
    assert (
        parent.status == "failed"
        and "branch error" in parent.failure
        and f"token {MAX_TOKENS + 5}" in parent.failure
    )


class WithoutDecode:
    """The tiny model as a `TokenPolicy` that cannot decode its ids."""

    version = "1"

    def __init__(self, model) -> None:
        self.model, self.name = model, "tiny-no-decode"

    def generate(self, requests: Sequence[Request]):
        return self.model.generate(requests)

    def encode_prompt(self, messages, tools):
        return self.model.encode_prompt(messages, tools)

    def encode_observation(self, messages, after):
        return self.model.encode_observation(messages, after)


@pytest.mark.parametrize("kind", ["text", "no-decode"])
def test_a_policy_that_cannot_decode_ids_is_a_config_error(kind, hf_policy):
    policy = ScriptPolicy("hello there") if kind == "text" else WithoutDecode(hf_policy)
    specs = [EpisodeSpec(env_config("test/SaysBack-v0"), "say", seed=2)]
    missing = "no token ids" if kind == "text" else "no decode"
    with pytest.raises(ConfigError, match=f"needs a policy with token ids and decode.*{missing}"):
        Runner(policy, config(), controller=Branching(offsets=(1,))).run(specs)


def test_hf_entropies_are_those_of_the_distribution_sampled_from(hf_policy):
    import torch

    messages = (Message("user", "What is 2+2?"),)
    prompt = hf_policy.encode_prompt(messages, ())
    with torch.inference_mode():
        logits = hf_policy.model(torch.tensor([prompt])).logits[0, -1].float()  # (V,)
    for temperature in (1.0, 0.5, 0.0):
        sampling = SamplingParams(temperature=temperature, max_tokens=4, seed=0)
        (completion,) = hf_policy.generate([Request(messages, sampling=sampling)])
        assert len(completion.entropies) == len(completion.completion_ids)
        scaled = logits / (temperature or 1.0)  # greedy: the raw logits' entropy
        expected = torch.distributions.Categorical(logits=scaled).entropy().item()
        assert math.isclose(completion.entropies[0], expected, rel_tol=1e-4)
        assert all(0.0 <= h <= math.log(len(logits)) + 1e-4 for h in completion.entropies)


def test_token_entropies_round_trip_and_older_lines_load():
    tokens = TokenData([1], [5, 6, 7], [1, 1, 0], [-0.5, -0.25, 0.0], [2.0, 0.5, 0.0])
    t = Trajectory("e", "t", "?", [Step("a", "o", 1.0, True, False)], tokens=tokens)
    assert Trajectory.from_json(t.to_json()) == t
    older = Trajectory("e", "t", "?", tokens=TokenData([1], [5], [1], [-0.5]))
    assert "entropies" not in older.to_dict()["tokens"]
    assert Trajectory.from_dict(older.to_dict()).tokens.entropies is None


def test_a_turn_without_entropies_drops_them_all():
    tokens = TokenData([1])
    tokens.append([5, 6], sampled=True, logprobs=[-0.5, -0.1], entropies=[1.0, 2.0])
    tokens.append([9], sampled=False)
    tokens.append([7], sampled=True, logprobs=[-0.3])  # a backend that gave none this turn
    assert tokens.entropies is None and tokens.loss_mask == [1, 1, 0, 1]
    tokens.append([8], sampled=True, entropies=[1.0])  # nor are they started mid-way
    assert tokens.entropies is None


def single_turn(entropies: list[float] | None, logprobs: list[float], trajectory_id: str = "r") -> Trajectory:
    n = len(logprobs)
    tokens = TokenData([1], list(range(n)), [1] * n, logprobs, entropies)
    return Trajectory("e", "t", "?", [Step("x", "", 0.0, True, False)], tokens=tokens, id=trajectory_id)


def test_branch_tokens_positions():
    flat = single_turn([1.0] * 10, [-1.0] * 10)
    assert BranchTokens(segments=4, children=1).positions(flat) == (2, 5, 8)  # round(10 * i / 4)
    assert BranchTokens().positions(flat) == ()  # off unless segments or entropy_points
    assert BranchTokens(segments=2, turns=(2,)).positions(flat) == ()  # not a turn it branches
    # without entropies, surprisal ranks the tokens; offset 0 (a fresh sample) is never one
    surprising = single_turn(None, [-9.0, -0.1, -0.1, -5.0, -0.1, -0.1])
    assert BranchTokens(entropy_points=1, children=3).positions(surprising) == (3, 3, 3)
    # a child branches again only under max_depth 2, and only past its forced prefix
    child = single_turn([9.0, 8.0, 0.0, 0.0, 7.0, 0.0], [-1.0] * 6, trajectory_id="r.1t2-0")
    assert BranchTokens(entropy_points=2).positions(child) == ()
    assert BranchTokens(entropy_points=2, max_depth=2, children=1).positions(child) == (3, 4)  # 7.0, then 0.0
    # a multi-turn episode: offsets count the last turn's tokens only
    two_turns = single_turn(None, [-1.0] * 6)
    two_turns.tokens.loss_mask[:3] = [1, 0, 0]
    assert BranchTokens(segments=3, children=1, turns=(1,)).positions(two_turns) == (1, 2)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"turns": 1}, "turns must be a list"),
        ({"children": 0}, "children and max_depth must be >= 1"),
        ({"segments": 1}, "segments must be 0 .none. or >= 2"),
        ({"entropy_points": -1}, "entropy_points >= 0"),
    ],
)
def test_bad_branch_tokens_settings_are_config_errors(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        BranchTokens(**kwargs)


def test_decision_refuses_offset_zero():
    with pytest.raises(ConfigError, match="each >= 1"):
        Decision(branch_tokens=(0,))
