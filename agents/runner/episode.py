"""One episode as data: what to ask the policy next, and how each turn grows the trajectory.

`Episode` holds no env and makes no call; `rollout` (one episode, in order) and the vectorized
`Runner` (many at once) both drive it, so the bookkeeping — messages, steps, cost, and the
token-in-token-out ids — is written once. With a `TokenPolicy`, the trajectory's token data is
the prompt's ids, then each turn's sampled ids (loss mask 1, their logprobs) and, between turns,
the observation's ids (loss mask 0, logprob 0.0); text is never re-tokenized.
"""

from __future__ import annotations

import copy
import hashlib
import time
from collections.abc import Hashable, Sequence
from dataclasses import replace
from functools import cache
from typing import Any, cast

from gfcr.core import Action, Message, Provenance, Step, TokenData, Trajectory, parse_action
from gfcr.core.admission import add_waits
from gfcr.core.policy import Completion, Policy, Request, SamplingParams, TokenPolicy
from gfcr.core.verdict import SUCCESS_REWARD, solved

StepResult = tuple[str, float, bool, bool, dict[str, Any]]


@cache
def keeps_tokens(policy_class: Hashable) -> bool:
    """Whether a policy class is a `TokenPolicy` (checked once per class: protocol checks are slow)."""
    methods = ("encode_prompt", "encode_observation")
    return all(callable(getattr(policy_class, name, None)) for name in methods)


def episode_solved(trajectory: Trajectory, threshold: float = SUCCESS_REWARD) -> bool:
    """Whether the episode ran to its end (no infrastructure failure) and its reward `solved` the task."""
    return trajectory.status == "ok" and solved(trajectory.total_reward, threshold)


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
            prompt=obs,
            messages=self.messages,
            provenance=Provenance(policy.name, policy.version, seed),
            remote={"url": remote["url"], "kwargs": remote["kwargs"]} if remote else None,
            tools=list(self.tools),
        )
        self.trajectory.cost.wait_s = add_waits(None, info.get("wait_s"))  # queued in the reset
        if trajectory_id is not None:
            self.trajectory.id = trajectory_id
        self._tokens = cast(TokenPolicy, policy) if keeps_tokens(cast(Hashable, type(policy))) else None
        if self._tokens is not None:
            self.trajectory.tokens = TokenData(
                prompt_ids=self._tokens.encode_prompt(self.messages, self.tools)
            )
        self.done = False
        self._observation: tuple[Sequence[Message], list[int]] | None = None  # to encode before the next turn

    @property
    def completion_tokens(self) -> int:
        """Tokens the policy produced in this episode so far."""
        return self.trajectory.cost.tokens_out

    def request(self, sampling: SamplingParams) -> Request:
        """The next request; `prompt_ids` set when the episode keeps token ids. A seeded episode's
        turns each get their own seed (`turn_seed`), so no two turns share their random draws."""
        self._append_observation_tokens()
        if sampling.seed is not None:
            sampling = replace(sampling, seed=turn_seed(sampling.seed, len(self.trajectory.steps)))
        tokens = self.trajectory.tokens
        prompt_ids = tuple(tokens.prompt_ids + tokens.completion_ids) if tokens is not None else None
        return Request(
            tuple(self.messages),
            self.tools,
            replace(sampling, n=1),
            self.env_id,
            self.task,
            prompt_ids,
        )

    def action(self, completion: Completion) -> str | Action:
        """What the env is given: the raw text, or an `Action` when the server parsed tool calls."""
        return Action(completion.text, completion.tool_calls) if completion.tool_calls else completion.text

    def record(self, completion: Completion, result: StepResult, *, policy_s: float, env_s: float) -> None:
        """Add one turn: the completion, the env's answer to it, and their cost."""
        obs, reward, terminated, truncated, info = result
        trajectory = self.trajectory
        trajectory.cost.policy_s += policy_s
        trajectory.cost.env_s += env_s
        trajectory.cost.wait_s = add_waits(trajectory.cost.wait_s, info.get("wait_s"))
        trajectory.cost.tokens_in += completion.prompt_tokens
        trajectory.cost.tokens_out += completion.completion_tokens or len(completion.completion_ids or ())
        self.actions.append(self.action(completion))
        self.messages.append(Message("assistant", completion.text, completion.tool_calls))
        self.messages.extend(info["messages"])
        state = info.get("state")  # the env's final state, recorded for offline verifiers
        trajectory.steps.append(
            Step(
                completion.text,
                obs,
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
        """An independent copy of this episode so far (for a controller that branches it)."""
        twin = copy.copy(self)
        twin.trajectory = copy.deepcopy(self.trajectory)
        twin.trajectory.id = trajectory_id
        twin.messages = twin.trajectory.messages
        twin.actions = list(self.actions)
        return twin

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
        tokens.completion_ids += ids
        tokens.loss_mask += [1] * len(ids)
        tokens.logprobs += list(completion.logprobs) if completion.logprobs is not None else [0.0] * len(ids)
        self._observation = (observation, ids)

    def _record_server_tokens(self, completion: Completion) -> None:
        """Token data from a server that returns ids (`gfcr serve`, vLLM's `return_token_ids`): each
        turn's prompt must extend the ids so far, and what it adds is the observation (mask 0). A
        turn without ids, or a prompt the server tokenized differently, drops them: none is better
        than ids that are not what the model saw."""
        if completion.prompt_ids is None or completion.completion_ids is None:
            self.trajectory.tokens = None
            return
        prompt = list(completion.prompt_ids)
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
        ids = list(completion.completion_ids)
        tokens.completion_ids += observation + ids
        tokens.loss_mask += [0] * len(observation) + [1] * len(ids)
        tokens.logprobs += [0.0] * len(observation)
        tokens.logprobs += list(completion.logprobs) if completion.logprobs is not None else [0.0] * len(ids)

    def _append_observation_tokens(self) -> None:
        """Encode the last observation once another turn follows it (a final one is never encoded)."""
        tokens = self.trajectory.tokens
        if self._observation is None or tokens is None or self._tokens is None:
            return
        observation_ids = self._tokens.encode_observation(*self._observation)
        tokens.completion_ids += observation_ids
        tokens.loss_mask += [0] * len(observation_ids)
        tokens.logprobs += [0.0] * len(observation_ids)
        self._observation = None


def turn_seed(seed: int, turn: int) -> int:
    """The sampling seed of turn `turn` (from 0) of an episode seeded `seed`: the episode's own seed
    on its first turn (single-turn runs sample as before), a hash of both after it.

    >>> turn_seed(7, 0), turn_seed(7, 1) == turn_seed(7, 1), turn_seed(7, 1) != turn_seed(7, 2)
    (7, True, True)
    """
    if turn == 0:
        return seed
    digest = hashlib.sha256(f"{seed}/{turn}".encode()).digest()
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
