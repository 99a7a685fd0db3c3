"""One episode as data: what to ask the policy next, and how each turn grows the trajectory.

`Episode` holds no env and makes no call; `rollout` (one episode, in order) and the vectorized
`Runner` (many at once) both drive it, so the bookkeeping — messages, steps, cost, and the
token-in-token-out ids — is written once. With a `TokenPolicy`, the trajectory's token data is
the prompt's ids, then each turn's sampled ids (loss mask 1, their logprobs) and, between turns,
the observation's ids (loss mask 0, logprob 0.0); text is never re-tokenized.

An episode branches into independent copies for tree rollouts: `branch` after a turn, and
`branch_tokens` inside the turn just taken (TreeRL's EPTree, Hou et al. 2025), a copy that takes
that turn again from the parent's first sampled tokens. A branch's `cost.tokens_out` counts only
the tokens the policy generated for it: its shared prefix was generated once, by its parent, and
is counted there (so the tokens out of a tree sum to the tokens it cost).
"""

from __future__ import annotations

import copy
import hashlib
import time
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Any, cast

from gfcr.core import Action, Image, Message, Provenance, Step, TokenData, Trajectory, parse_action
from gfcr.core.admission import add_waits
from gfcr.core.policy import (
    Completion,
    DecodingPolicy,
    Policy,
    Request,
    SamplingParams,
    TokenPolicy,
    version_number,
)
from gfcr.core.trajectory import Cost
from gfcr.core.verdict import SUCCESS_REWARD, solved
from gfcr.envs.spaces import observation_text
from gfcr.errors import ConfigError, EpisodeError

StepResult = tuple[str, float, bool, bool, dict[str, Any]]


@cache
def keeps_tokens(policy_class: Hashable) -> bool:
    """Whether a policy class is a `TokenPolicy` (checked once per class: protocol checks are slow)."""
    methods = ("encode_prompt", "encode_observation")
    return all(callable(getattr(policy_class, name, None)) for name in methods)


def episode_solved(trajectory: Trajectory, threshold: float = SUCCESS_REWARD) -> bool:
    """Whether the episode ran to its end (no infrastructure failure) and its reward `solved` the task."""
    return trajectory.status == "ok" and solved(trajectory.total_reward, threshold)


@dataclass(frozen=True)
class _Turn:
    """Where an episode stood before its last turn: what a token branch rewinds to."""

    messages: int  # len(messages)
    token_ids: int  # len(tokens.completion_ids), the observation before the turn included
    images: int  # len(tokens.images), likewise
    policy_tokens: int  # `completion_tokens`
    cost: Cost


@dataclass(frozen=True)
class _Prefix:
    """The parent's first sampled tokens of a turn, that a token branch's turn starts with."""

    ids: tuple[int, ...]
    logprobs: tuple[float, ...]
    entropies: tuple[float, ...] | None
    versions: tuple[int, ...] | None  # the policy versions that sampled them
    inherited: int  # how many of the first ids a parent episode sampled (the rest are this one's)


class Episode:
    """The state of one episode after `reset`: conversation, steps, token ids and cost."""

    def __init__(
        self,
        policy: Policy,
        env_id: str,
        reset: tuple[str, dict[str, Any]],
        *,
        seed: int | None = None,
        trajectory_id: str | None = None,
        started: float | None = None,
    ) -> None:
        obs, info = reset
        self.policy = policy
        # when the episode began (time.perf_counter, before its reset): its wall time runs from here,
        # and a branch (a copy) keeps it, as it keeps the policy and env seconds of its prefix
        self.started = time.perf_counter() if started is None else started
        self.task = info["task"]
        self.tools: tuple[dict[str, Any], ...] = tuple(info["tools"])
        self.messages: list[Message] = list(info["messages"])
        self.actions: list[str | Action] = []
        self.env_id = env_id  # the env the runner steps: what the policy's requests name
        remote = info.get("remote")  # a served env (`gfcr/Remote-v0`): its own id is the record's
        self.trajectory = Trajectory(
            env_id=remote["env_id"] if remote else env_id,
            task_id=self.task.id,
            prompt=observation_text(obs),
            messages=self.messages,
            provenance=Provenance(policy.name, policy.version, seed),
            remote={"url": remote["url"], "kwargs": remote["kwargs"]} if remote else None,
            tools=list(self.tools),
        )
        self.trajectory.cost.wait_s = add_waits(None, info.get("wait_s"))  # queued in the reset
        if trajectory_id is not None:
            self.trajectory.id = trajectory_id
        self._tokens = cast(TokenPolicy, policy) if keeps_tokens(cast(Hashable, type(policy))) else None
        # a vision-language policy's ids hold its images' placeholder tokens: its token data keeps the images
        self._sees_images = bool(getattr(policy, "sees_images", False))
        if self._tokens is not None:
            self.trajectory.tokens = TokenData(
                prompt_ids=self._encode_prompt(policy), images=self._images_of(self.messages)
            )
        self.done = False
        self._observation: tuple[Sequence[Message], list[int]] | None = None  # to encode before the next turn
        self.branch_key = ""  # a branch's own id: its turns sample with seeds of their own
        self._shared_tokens = 0  # policy tokens of this episode that an ancestor generated (and counts)
        self._before_turn: _Turn | None = None
        self._prefix: _Prefix | None = None  # a token branch's forced start of its next turn

    def _encode_prompt(self, policy: Policy) -> list[int]:
        """The prompt's ids. A policy that wants to know an episode's task before it renders the
        prompt (`begin_episode(messages, task)`: adaptive guidance) is told it first."""
        begin = getattr(policy, "begin_episode", None)
        if callable(begin):
            begin(self.messages, self.task)
        assert self._tokens is not None  # only token policies encode prompts
        return self._tokens.encode_prompt(self.messages, self.tools)

    def _images_of(self, messages: Sequence[Message]) -> list[Image]:
        """The images of `messages` that the policy's tokens show (none to a text-only policy)."""
        return [image for m in messages for image in m.images] if self._sees_images else []

    @property
    def completion_tokens(self) -> int:
        """Tokens the policy produced in this episode so far (a branch's shared prefix included)."""
        return self._shared_tokens + self.trajectory.cost.tokens_out

    def request(self, sampling: SamplingParams) -> Request:
        """The next request; `prompt_ids` set when the episode keeps token ids. A seeded episode's
        turns each get their own seed (`turn_seed`), so no two turns (and no two token branches)
        share their random draws. A token branch's request continues its forced prefix: the
        prefix ends `prompt_ids` and counts against `max_tokens`, which caps the whole turn."""
        self._append_observation_tokens()
        if sampling.seed is not None:
            seed = turn_seed(sampling.seed, len(self.trajectory.steps), self.branch_key)
            sampling = replace(sampling, seed=seed)
        tokens = self.trajectory.tokens
        prompt_ids = tuple(tokens.prompt_ids + tokens.completion_ids) if tokens is not None else None
        prefix = self._prefix
        if prefix is not None and len(prefix.ids) > prefix.inherited and sampling.seed is not None:
            # an interrupted turn's rest: draws apart from its start's
            sampling = replace(sampling, seed=turn_seed(sampling.seed, len(prefix.ids)))
        if self._prefix is not None and prompt_ids is not None:
            prompt_ids += self._prefix.ids
            # >= 1: the parent sampled more than the prefix under the same cap
            sampling = replace(sampling, max_tokens=max(1, sampling.max_tokens - len(self._prefix.ids)))
        return Request(
            tuple(self.messages),
            self.tools,
            replace(sampling, n=1),
            self.env_id,
            self.task,
            prompt_ids,
            tuple(tokens.images) if tokens is not None else (),
        )

    def action(self, completion: Completion) -> str | Action:
        """What the env is given: the raw text, or an `Action` when the server parsed tool calls
        (a token branch's: the text of its whole turn, forced prefix first)."""
        return _action(self._whole_turn(completion))

    def record(self, completion: Completion, result: StepResult, *, policy_s: float, env_s: float) -> None:
        """Add one turn: the completion (after a token branch's forced prefix), the env's answer to
        it, and their cost; `tokens_out` grows by the tokens the policy generated, the prefix not."""
        obs, reward, terminated, truncated, info = result
        trajectory = self.trajectory
        tokens = trajectory.tokens
        self._before_turn = _Turn(
            len(self.messages),
            len(tokens.completion_ids) if tokens is not None else 0,
            len(tokens.images) if tokens is not None else 0,
            self.completion_tokens,
            copy.deepcopy(trajectory.cost),
        )
        self._charge(completion, policy_s)
        trajectory.cost.env_s += env_s
        trajectory.cost.wait_s = add_waits(trajectory.cost.wait_s, info.get("wait_s"))
        completion = self._whole_turn(completion)
        self.actions.append(_action(completion))
        self.messages.append(Message("assistant", completion.text, completion.tool_calls))
        self.messages.extend(info["messages"])
        state = info.get("state")  # the env's final state, recorded for offline verifiers
        trajectory.steps.append(
            Step(
                completion.text,
                observation_text(obs),
                float(reward),
                terminated,
                truncated,
                info["signals"],
                state,
                finish_reason(completion),
            )
        )
        self.done = terminated or truncated
        self._record_tokens(completion, info["messages"])
        if self._prefix is not None:  # a parent's prefix is this episode's now: in its length, not its cost
            self._shared_tokens += self._prefix.inherited
            self._prefix = None

    def _charge(self, completion: Completion, policy_s: float) -> None:
        """Add a completion's policy seconds and tokens to the episode's cost."""
        cost = self.trajectory.cost
        cost.policy_s += policy_s
        cost.tokens_in += completion.prompt_tokens
        cost.tokens_out += completion.completion_tokens or len(completion.completion_ids or ())

    def interrupted(self, completion: Completion, *, policy_s: float) -> None:
        """Keep the first tokens of a turn the policy was interrupted in (`finish_reason
        "interrupted"`: new weights were pushed) as the start of that turn: the next `request`
        continues them, with the turn's budget less them, and `record` puts them before the rest.
        Their cost is this episode's now; their versions stay those that sampled them."""
        whole = self._whole_turn(completion)
        if whole.completion_ids is None or whole.logprobs is None:
            raise EpisodeError(
                "policy error",
                f"{self.policy.name} interrupted a turn without its token ids and logprobs; only a "
                "policy with token ids can resume a turn",
            )
        self._charge(completion, policy_s)
        versions = self._versions(whole)  # the turn's ids so far, those it was continuing included
        self._prefix = _Prefix(
            whole.completion_ids,
            whole.logprobs,
            whole.entropies,
            None if versions is None else tuple(versions),
            self._prefix.inherited if self._prefix is not None else 0,
        )

    def finish(self) -> Trajectory:
        """The trajectory, its wall-clock seconds (`cost.wall_s`) set from `started` to now."""
        self.trajectory.cost.wall_s = time.perf_counter() - self.started
        return self.trajectory

    def truncate(self) -> None:
        """End the episode at its last step (a runner limit or the controller stopped it)."""
        if self.trajectory.steps:
            self.trajectory.steps[-1].truncated = not self.trajectory.steps[-1].terminated
        self.done = True

    def branch(self, trajectory_id: str) -> Episode:
        """An independent copy of this episode so far (for a controller that branches it), whose
        `cost.tokens_out` starts at 0: the tokens so far are the parent's. Its later turns sample
        with seeds of its own (`branch_key`): a copy that drew what its parent draws would be no
        branch at all."""
        twin = copy.copy(self)
        twin.branch_key = trajectory_id
        twin.trajectory = copy.deepcopy(self.trajectory)
        twin.trajectory.id = trajectory_id
        twin.messages = twin.trajectory.messages
        twin.actions = list(self.actions)
        twin._shared_tokens = self.completion_tokens
        twin.trajectory.cost.tokens_out = 0
        return twin

    @property
    def turn_tokens(self) -> int:
        """Sampled tokens of the turn just taken (0 before any turn, or without token ids)."""
        tokens, before = self.trajectory.tokens, self._before_turn
        return len(tokens.completion_ids) - before.token_ids if tokens and before else 0

    def branch_tokens(self, trajectory_id: str, offset: int) -> Episode:
        """A copy that takes the turn just taken again, from its first `offset` sampled tokens.

        The copy is this episode as it was before that turn (steps, messages, actions, token ids,
        cost), with those `offset` ids, their logprobs and entropies as its next turn's forced
        start: its request continues them (`prompt_ids` end with them), and `record` puts them
        before what the policy continues with, mask 1, the turn's text decoded from all its ids.

        Raises `ConfigError` for a policy that cannot decode its own ids (`DecodingPolicy`), and
        `EpisodeError` for an offset outside 1..turn_tokens - 1 (the turn's whole token ids would
        be a copy of the parent, no token a fresh sample).
        """
        if self._tokens is None or not callable(getattr(self.policy, "decode", None)):
            raise ConfigError(
                f"branching inside a turn (Decision.branch_tokens) needs a policy with token ids and "
                f"decode(ids) (a gfcr.core.policy.DecodingPolicy, e.g. hf: or vllm:); {self.policy.name} "
                f"({type(self.policy).__name__}) has {'no decode' if self._tokens else 'no token ids'}; "
                "branch between turns (Decision.branches) instead"
            )
        tokens, before, count = self.trajectory.tokens, self._before_turn, self.turn_tokens
        if tokens is None or before is None or not 1 <= offset < count:
            raise EpisodeError(
                "branch error",
                f"cannot branch turn {len(self.trajectory.steps)} at token {offset}: it has {count} "
                "sampled token ids; a token offset must be in 1..(tokens - 1)",
            )
        start = slice(before.token_ids, before.token_ids + offset)
        twin = self.branch(trajectory_id)
        twin._prefix = _Prefix(
            tuple(tokens.completion_ids[start]),
            tuple(tokens.logprobs[start]),
            None if tokens.entropies is None else tuple(tokens.entropies[start]),
            None if tokens.versions is None else tuple(tokens.versions[start]),
            offset,
        )
        twin._rewind(before)
        return twin

    def _rewind(self, before: _Turn) -> None:
        """Undo the last turn (the copy is this episode's own: `branch` made it)."""
        trajectory = self.trajectory
        trajectory.steps.pop()
        self.actions.pop()
        del self.messages[before.messages :]
        tokens = trajectory.tokens
        if tokens is not None:
            trajectory.tokens = TokenData(
                tokens.prompt_ids,
                tokens.completion_ids[: before.token_ids],
                tokens.loss_mask[: before.token_ids],
                tokens.logprobs[: before.token_ids],
                None if tokens.entropies is None else tokens.entropies[: before.token_ids],
                tokens.images[: before.images],
                None if tokens.versions is None else tokens.versions[: before.token_ids],
            )
        trajectory.cost = copy.deepcopy(before.cost)
        trajectory.cost.tokens_out = 0
        self._shared_tokens = before.policy_tokens
        self._observation, self._before_turn, self.done = None, None, False

    def _whole_turn(self, completion: Completion) -> Completion:
        """A token branch's turn: its forced prefix, then `completion` (what the policy went on
        with), text decoded from all the turn's ids; any other completion as it is."""
        prefix = self._prefix
        if prefix is None:
            return completion
        decode = cast(DecodingPolicy, self.policy).decode
        own = completion.completion_ids
        return replace(
            completion,
            text=decode(prefix.ids + own) if own is not None else decode(prefix.ids) + completion.text,
            prompt_ids=None if completion.prompt_ids is None else completion.prompt_ids[: -len(prefix.ids)],
            completion_ids=None if own is None else prefix.ids + own,
            logprobs=None if completion.logprobs is None else prefix.logprobs + completion.logprobs,
            entropies=(
                None
                if completion.entropies is None or prefix.entropies is None
                else prefix.entropies + completion.entropies
            ),
        )

    def _record_tokens(self, completion: Completion, observation: Sequence[Message]) -> None:
        if self._tokens is None:
            self._record_server_tokens(completion)
            return
        tokens = self.trajectory.tokens
        if tokens is None:
            return
        if completion.completion_ids is None:  # a backend that gave no ids: keep none rather than guess
            self.trajectory.tokens = None
            return
        ids = list(completion.completion_ids)
        tokens.append(
            ids,
            sampled=True,
            logprobs=completion.logprobs,
            entropies=completion.entropies,
            versions=self._versions(completion),
        )
        self._observation = (observation, ids)

    def _versions(self, completion: Completion) -> list[int] | None:
        """The policy version of each of the turn's sampled ids (a token branch's forced prefix:
        its parent's), from the completion's `policy_version`, else the policy's version now; None
        where a version is no number (a model's fingerprint, a hosted API's name)."""
        own = completion.policy_version if completion.policy_version is not None else self.policy.version
        version, ids = version_number(own), completion.completion_ids or ()
        prefix = self._prefix
        if version is None or (prefix is not None and prefix.versions is None):
            return None
        inherited = list(prefix.versions or ()) if prefix is not None else []
        return inherited + [version] * (len(ids) - len(inherited))

    def _record_server_tokens(self, completion: Completion) -> None:
        """Token data from a server that returns ids (`gfcr serve`, vLLM's `return_token_ids`): each
        turn's prompt must extend the ids so far, and what it adds is the observation (mask 0). A
        turn without ids, or a prompt the server tokenized differently, drops them: none is better
        than ids that are not what the model saw. A server that answered messages with images took
        them (a text model refuses them), so its ids hold their placeholders: the token data keeps
        the images sent so far (`TokenData.images`), as a local vision-language policy's does."""
        if completion.prompt_ids is None or completion.completion_ids is None:
            self.trajectory.tokens = None
            return
        prompt = list(completion.prompt_ids)
        sent = self.messages[: self._before_turn.messages] if self._before_turn else self.messages
        shown = [image for m in sent for image in m.images]  # what the request's ids show
        if len(self.trajectory.steps) == 1:  # the first turn (record() appended its step)
            self.trajectory.tokens = TokenData(prompt_ids=prompt)
        tokens = self.trajectory.tokens
        if tokens is None:
            return
        so_far = tokens.prompt_ids + tokens.completion_ids
        if prompt[: len(so_far)] != so_far:
            self.trajectory.tokens = None
            return
        observation = prompt[len(so_far) :]
        tokens.append(observation, sampled=False, images=shown[len(tokens.images) :])
        ids, entropies = completion.completion_ids, completion.entropies
        if entropies is not None and len(entropies) != len(ids):
            entropies = None  # estimates that do not line up with the ids are no data
        tokens.append(
            ids,
            sampled=True,
            logprobs=completion.logprobs,
            entropies=entropies,
            versions=self._versions(completion),
        )

    def _append_observation_tokens(self) -> None:
        """Encode the last observation once another turn follows it (a final one is never encoded)."""
        tokens = self.trajectory.tokens
        if self._observation is None or tokens is None or self._tokens is None:
            return
        messages, after = self._observation
        ids = self._tokens.encode_observation(messages, after)
        tokens.append(ids, sampled=False, images=self._images_of(messages))
        self._observation = None


def _action(completion: Completion) -> str | Action:
    return Action(completion.text, completion.tool_calls) if completion.tool_calls else completion.text


def turn_seed(seed: int, turn: int, branch: str = "") -> int:
    """The sampling seed of turn `turn` (from 0) of an episode seeded `seed`: the episode's own seed
    on its first turn (single-turn runs sample as before), a hash of both after it. A branch (between
    turns or inside one) hashes its trajectory id in too, so that copies of one prefix do not sample
    alike.

    >>> turn_seed(7, 0), turn_seed(7, 1) == turn_seed(7, 1), turn_seed(7, 1) != turn_seed(7, 2)
    (7, True, True)
    >>> turn_seed(7, 0, "a.1t3-0") != turn_seed(7, 0, "a.1t3-1")
    True
    """
    if turn == 0 and not branch:
        return seed
    digest = hashlib.sha256(f"{seed}/{turn}{'/' + branch if branch else ''}".encode()).digest()
    return int.from_bytes(digest[:7], "big")  # 56 bits: fits every backend's seed type


def finish_reason(completion: Completion) -> str:
    """Why a policy's action ended: "length" (cut at its token cap), "tool_calls" (it called tools,
    natively or as `<tool_call>` text) or "stop".

    >>> finish_reason(Completion("The answer is", finish_reason="length"))
    'length'
    >>> finish_reason(Completion('<tool_call>{"name": "f", "arguments": {}}</tool_call>'))
    'tool_calls'
    """
    if completion.finish_reason == "length":
        return "length"
    if completion.tool_calls or parse_action(completion.text)[0].tool_calls:
        return "tool_calls"
    return "stop"
