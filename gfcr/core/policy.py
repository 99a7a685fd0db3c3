"""The policy contract: a batch of conversations in, completions out.

Every backend (`scripted:`, `hf:`, `vllm:`, `openai:`) implements `Policy.generate`. Backends that
own a tokenizer also implement `TokenPolicy`, which lets the runner keep token ids exactly as the
policy produced them (token-in-token-out) instead of re-tokenizing text afterwards.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from gfcr.core.config import setting
from gfcr.core.images import Image
from gfcr.core.messages import Message, ToolCall
from gfcr.core.task import Task
from gfcr.errors import ConfigError


@dataclass(frozen=True)
class SamplingParams:
    """How to sample: the knobs every backend understands.

    `n` completions per request come back consecutively; `seed` makes sampling reproducible
    where the backend allows it (per request in vLLM and OpenAI servers, per batch in `hf:`).

    >>> SamplingParams(temperature=0.0, max_tokens=64).max_tokens
    64
    >>> SamplingParams(top_p=0)
    Traceback (most recent call last):
    ...
    gfcr.errors.ConfigError: top_p must be in (0, 1], got 0
    """

    temperature: float = setting(1.0, "Sampling temperature (0: greedy).")
    top_p: float = setting(1.0, "Nucleus sampling: keep the likeliest tokens up to this probability mass.")
    max_tokens: int = setting(1024, "Completion tokens per policy turn.")
    n: int = setting(1, "Completions per request.")
    stop: tuple[str, ...] = setting((), "Strings that end a completion when generated.")
    seed: int | None = setting(None, "Sampling seed (None: unseeded).")

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ConfigError(f"temperature must be >= 0 (0 is greedy), got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ConfigError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.max_tokens < 1:
            raise ConfigError(f"max_tokens must be >= 1, got {self.max_tokens}")
        if self.n < 1:
            raise ConfigError(f"n must be >= 1, got {self.n}")
        if isinstance(self.stop, str):
            raise ConfigError(
                f"stop must be a tuple of strings, got the string {self.stop!r}; write ({self.stop!r},)"
            )


@dataclass(frozen=True)
class Request:
    """One conversation to continue: its messages, the tools offered, and how to sample.

    `env_id` and `task` identify the episode; model-backed policies ignore them, scripted
    oracles read the gold data from them. `prompt_ids`, when given, is the exact token prefix to
    continue (token-in-token-out); a `TokenPolicy` must use it instead of rendering `messages`.
    `images` are the images whose placeholder tokens `prompt_ids` hold, in order (a
    vision-language policy's; () for text). Without `prompt_ids`, the images are the messages'.
    """

    messages: tuple[Message, ...]
    tools: tuple[dict[str, Any], ...] = ()
    sampling: SamplingParams = field(default_factory=SamplingParams)
    env_id: str = ""
    task: Task | None = None
    prompt_ids: tuple[int, ...] | None = None
    images: tuple[Image, ...] = ()


@dataclass(frozen=True)
class Completion:
    """The policy's answer to one request. Token fields are None when the backend has none.

    `text` is the raw model output (tool calls included, as the model wrote them); `tool_calls`
    are the calls a server parsed natively (empty when the env should parse `text`).
    `completion_ids` are the sampled tokens, the end-of-turn token included when one was sampled;
    `logprobs` their log-probabilities under the model; `entropies` the entropy (nats) of the
    distribution each token was drawn from, where the backend computes it (see its docs for
    which distribution). `finish_reason` is "stop" or "length", or "interrupted" for a turn an
    interruptible policy stopped for a weight push (the runner asks for the rest of it: its
    completion then continues these ids). `policy_version` names the weights
    that sampled it, where the backend reports them per completion (an `hf:` policy a trainer
    pushes weights to, `gfcr serve`): the version may change between two calls of one policy.
    """

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str = "stop"
    prompt_ids: tuple[int, ...] | None = None
    completion_ids: tuple[int, ...] | None = None
    logprobs: tuple[float, ...] | None = None
    entropies: tuple[float, ...] | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    policy_version: str | None = None


@runtime_checkable
class Policy(Protocol):
    """Anything that turns a batch of requests into completions, in order (n per request)."""

    name: str
    version: str

    def generate(self, requests: Sequence[Request]) -> list[Completion]: ...


def check_policy(policy: object) -> None:
    """Raise `ConfigError` saying what the `Policy` protocol needs if `policy` lacks any of it.

    Checked once where a run starts, so a custom policy missing `name` fails with one message,
    not one traceback per episode.

    >>> class Bare:
    ...     def generate(self, requests): return []
    >>> check_policy(Bare())
    Traceback (most recent call last):
    ...
    gfcr.errors.ConfigError: policy Bare lacks name, version: a Policy needs `name: str` and ...
    """
    missing = [a for a in ("name", "version") if not isinstance(getattr(policy, a, None), str)]
    if not callable(getattr(policy, "generate", None)):
        missing.append("generate")
    if missing:
        raise ConfigError(
            f"policy {type(policy).__name__} lacks {', '.join(missing)}: a Policy needs `name: str` and "
            "`version: str` attributes (recorded in each trajectory's provenance) and a method "
            "`generate(requests: Sequence[Request]) -> list[Completion]`; see gfcr.core.Policy"
        )


@runtime_checkable
class TokenPolicy(Policy, Protocol):
    """A policy with a tokenizer: it renders prompts and observations to ids for the runner.

    A vision-language policy sets `sees_images = True`: its ids then hold a placeholder run for
    each image of the messages it encodes, in order, and the runner keeps those images with the
    ids (`TokenData.images`) and gives them back with them (`Request.images`). A policy without
    it is shown the messages' text only.
    """

    def encode_prompt(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]]) -> list[int]:
        """Token ids of the conversation so far, ending with the assistant's generation prompt."""
        ...

    def encode_observation(self, messages: Sequence[Message], after: Sequence[int]) -> list[int]:
        """Token ids that follow the policy's own tokens `after`: the end of its turn, the env's
        `messages`, and the next generation prompt."""
        ...


@runtime_checkable
class DecodingPolicy(TokenPolicy, Protocol):
    """A `TokenPolicy` that also turns its own sampled ids back into text: what the runner needs
    to branch an episode inside a turn (a branch continues the parent's first tokens, and its
    action is the text of those and its own together)."""

    def decode(self, ids: Sequence[int]) -> str:
        """The text a completion of sampled `ids` has (`Completion.text`): special tokens kept,
        the end-of-turn token that closed them left out."""
        ...


@runtime_checkable
class AsyncPolicy(Policy, Protocol):
    """A policy that serves requests concurrently (a server that batches on its side)."""

    max_concurrent_batches: int

    async def agenerate(self, requests: Sequence[Request]) -> list[Completion]: ...


def version_number(version: str) -> int | None:
    """A policy version as a number, when it is one (gfcr train's versions are its step counts).

    >>> version_number("12"), version_number("a3f9")
    (12, None)
    """
    return int(version) if version.lstrip("-").isdigit() else None
