"""Guidance: few-shot examples, plans or retrieved skills injected into the prompt.

A `Guide` turns the task's prompt (the first user message) into guidance text; `inject` puts
that text into the system message; `GuidedPolicy` wraps any policy so every request — and, for
token policies, the prompt ids — carries the guidance, optionally only for the tasks a predicate
picks (`when`; Control's `AdaptiveGuidance` guides while a prompt's posterior success is low).
`GuidanceConfig` is the trainer's `[generate]` guidance settings. `gfcr.skills.SkillLibrary` is a
`Guide` too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from gfcr.core import Message, Task, Trajectory
from gfcr.core.config import setting
from gfcr.errors import ConfigError, UnknownNameError

GUIDANCE_KINDS = ("none", "fewshot", "plan", "skills")


@runtime_checkable
class Guide(Protocol):
    """Guidance text for a prompt ("" for none)."""

    def guidance(self, query: str) -> str: ...


@dataclass(frozen=True)
class FewShot:
    """Worked examples before the task.

    >>> print(FewShot((("2+2?", "\\\\boxed{4}"),)).guidance("3+3?"))
    Examples of solved tasks:
    <BLANKLINE>
    Task: 2+2?
    Solution: \\boxed{4}
    """

    examples: tuple[tuple[str, str], ...]  # (task, solution) pairs

    def guidance(self, query: str) -> str:
        shots = "\n\n".join(f"Task: {task}\nSolution: {solution}" for task, solution in self.examples)
        return f"Examples of solved tasks:\n\n{shots}" if shots else ""


@dataclass(frozen=True)
class Plan:
    """A plan to follow: fixed text, or made from the prompt by `make` (e.g. a planner model)."""

    make: str | Callable[[str], str]

    def guidance(self, query: str) -> str:
        plan = self.make if isinstance(self.make, str) else self.make(query)
        return f"Follow this plan:\n{plan}" if plan else ""


@dataclass(frozen=True)
class GuidanceConfig:
    """The guidance a trainer's episodes get (its `[generate]` settings); built by
    `gfcr.control.guided(policy, config, history)`.

    >>> GuidanceConfig(kind="plan", plan="1. read 2. answer").kind
    'plan'
    >>> GuidanceConfig(kind="fewshots")
    Traceback (most recent call last):
    ...
    gfcr.errors.UnknownNameError: unknown guidance kind 'fewshots'; did you mean 'fewshot'? Known: ...
    """

    kind: str = setting("none", "Guidance in the prompt: none, fewshot, plan or skills.")
    fewshot: tuple[tuple[str, str], ...] = setting(
        (), "kind = fewshot: worked examples, a list of [task, solution] pairs."
    )
    plan: str = setting("", "kind = plan: the plan every prompt is told to follow.")
    skills: str = setting(
        "",
        "kind = skills: the skill library (a SQLAlchemy URL or SQLite path); unset: the run's own, "
        "grown by training ([replay.skills] enabled).",
    )
    adaptive_below: float | None = setting(
        None,
        "Guide a prompt only while its posterior mean success is below this (None: always guide).",
    )

    def __post_init__(self) -> None:
        if self.kind not in GUIDANCE_KINDS:
            raise UnknownNameError("guidance kind", self.kind, GUIDANCE_KINDS)
        pairs = tuple(tuple(pair) for pair in self.fewshot)  # TOML gives lists
        if any(len(pair) != 2 or not all(isinstance(s, str) for s in pair) for pair in pairs):
            raise ConfigError(
                f"fewshot must be [task, solution] pairs of strings, got {self.fewshot!r}; "
                'write fewshot = [["2+2?", "4"], ...]'
            )
        object.__setattr__(self, "fewshot", pairs)
        given = {"fewshot": self.fewshot, "plan": self.plan, "skills": self.skills}
        if self.kind in ("fewshot", "plan") and not given[self.kind]:  # skills unset: the run's own
            raise ConfigError(
                f"guidance kind {self.kind!r} needs its {self.kind} setting; set {self.kind} = ..."
            )
        unused = [name for name, value in given.items() if value and name != self.kind]
        if self.adaptive_below is not None and self.kind == "none":
            unused.append("adaptive_below")
        if unused:  # a setting that would do nothing is a mistake, not a choice
            raise ConfigError(
                f"{', '.join(unused)} set but guidance kind is {self.kind!r}, which does not use it; "
                f"set kind to the guidance you want, or remove {', '.join(unused)}"
            )
        if self.adaptive_below is not None and not 0.0 < self.adaptive_below <= 1.0:
            raise ConfigError(
                f"adaptive_below must be in (0, 1] (a posterior success rate), got {self.adaptive_below}; "
                "leave it unset to always guide"
            )


def first_user_text(messages: Sequence[Message]) -> str:
    """The prompt x: the first user message's text ("" if there is none)."""
    return next((m.text for m in messages if m.role == "user"), "")


def inject(messages: Sequence[Message], text: str) -> list[Message]:
    """`messages` with `text` appended to the system message (one is added first if missing).

    >>> [m.to_dict() for m in inject([Message("user", "hi")], "Be brief.")]
    [{'role': 'system', 'content': 'Be brief.'}, {'role': 'user', 'content': 'hi'}]
    """
    if not text:
        return list(messages)
    if messages and messages[0].role == "system":
        first = dataclasses.replace(messages[0], content=f"{messages[0].text}\n\n{text}")
        return [first, *messages[1:]]
    return [Message("system", text), *messages]


class GuidedPolicy:
    """Any policy, with `guide`'s guidance injected into the conversations it sees.

    It keeps the wrapped policy's name, version and capabilities: `GuidedPolicy(policy, guide)`
    is of a subclass that defines `encode_prompt` and `encode_observation` (a `TokenPolicy`: the
    guidance enters the prompt ids, so the trajectory keeps its token data) and `agenerate` (an
    async policy) exactly when the wrapped policy has them.

    `when(task)` picks the tasks to guide (None: all). A prompt's guidance is decided once per
    round and kept for every turn and episode of the prompt until `record(trajectories)` writes
    it on the finished trajectories and starts the next round, so a multi-turn episode never sees
    it change (a planner called again, a skill library grown by Replay, a posterior that moved).
    A token policy encodes the prompt before any request names its task: the runner names it
    first (`begin_episode`), so `when` decides from a prompt's first round there too.

    >>> from gfcr.core import Request
    >>> class Echo:
    ...     name, version = "echo", "1"
    ...     def generate(self, requests):
    ...         return [r.messages[0].text for r in requests]
    >>> guided = GuidedPolicy(Echo(), Plan("1. read 2. answer"))
    >>> guided.generate([Request((Message("user", "q"),))])
    ['Follow this plan:\\n1. read 2. answer']
    >>> trajectory = Trajectory("e", "t", "q", messages=[Message("user", "q")])
    >>> guided.record([trajectory])
    >>> trajectory.guidance
    'Follow this plan:\\n1. read 2. answer'
    """

    def __new__(cls, policy: Any = None, *args: Any, **kwargs: Any) -> GuidedPolicy:
        if cls is GuidedPolicy:  # the subclass with the wrapped policy's capabilities
            tokens = all(callable(getattr(policy, m, None)) for m in ("encode_prompt", "encode_observation"))
            cls = _CAPABLE[(tokens, callable(getattr(policy, "agenerate", None)))]
        return super().__new__(cls)

    def __init__(self, policy: Any, guide: Guide, when: Callable[[Task], bool] | None = None) -> None:
        if not callable(getattr(policy, "generate", None)):
            raise ConfigError(f"GuidedPolicy wraps a policy (an object with generate()), got {policy!r}")
        self.policy, self.guide, self.when = policy, guide, when
        self._given: dict[str, str] = {}  # prompt -> the guidance it gets this round
        self._tasks: dict[str, Task] = {}  # prompt -> its task, as the requests named it

    def guidance_for(self, prompt: str) -> str:
        """The guidance text `prompt` gets this round ("" for none), decided on first use."""
        given = self._given.get(prompt)
        if given is None:
            task = self._tasks.get(prompt)
            guide = self.when is None or (task is not None and self.when(task))
            given = self._given.setdefault(prompt, self.guide.guidance(prompt) if guide else "")
        return given

    def begin_episode(self, messages: Sequence[Message], task: Task) -> None:
        """The runner names an episode's task before its prompt is encoded (a token policy's
        prompt ids come before any request), so `when` can decide for the prompt at once."""
        self._tasks[first_user_text(messages)] = task

    def record(self, trajectories: Iterable[Trajectory]) -> None:
        """Write on each finished trajectory the guidance its prompt got (`Trajectory.guidance`),
        then start a new round: the next episode of a prompt is guided afresh."""
        for trajectory in trajectories:
            trajectory.guidance = self._given.get(first_user_text(trajectory.messages), "")
        self._given.clear()

    def generate(self, requests: Sequence[Any]) -> list[Any]:
        return self.policy.generate([self._guided(r) for r in requests])

    def _guided(self, request: Any) -> Any:
        prompt = first_user_text(request.messages)
        if request.task is not None:
            self._tasks[prompt] = request.task
        return dataclasses.replace(
            request, messages=tuple(inject(request.messages, self.guidance_for(prompt)))
        )

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name in ("policy", "guide", "when"):  # not set yet (copy, unpickle)
            raise AttributeError(name)
        return getattr(self.policy, name)  # AttributeError where the wrapped policy lacks it


class _GuidedTokenPolicy(GuidedPolicy):
    """A guided `TokenPolicy`: the guidance is in the prompt ids (never in the loss mask, which
    covers sampled tokens only); observations are encoded as the wrapped policy does."""

    def encode_prompt(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]]) -> list[int]:
        text = self.guidance_for(first_user_text(messages))
        return self.policy.encode_prompt(inject(messages, text), tools)

    def encode_observation(self, messages: Sequence[Message], after: Sequence[int]) -> list[int]:
        return self.policy.encode_observation(messages, after)


class _GuidedAsyncPolicy(GuidedPolicy):
    """A guided `AsyncPolicy`."""

    async def agenerate(self, requests: Sequence[Any]) -> list[Any]:
        return await self.policy.agenerate([self._guided(r) for r in requests])


class _GuidedAsyncTokenPolicy(_GuidedTokenPolicy, _GuidedAsyncPolicy):
    """A guided policy that is both a `TokenPolicy` and an `AsyncPolicy`."""


# (keeps token ids, serves async) -> the guided class with those capabilities
_CAPABLE: dict[tuple[bool, bool], type[GuidedPolicy]] = {
    (False, False): GuidedPolicy,
    (True, False): _GuidedTokenPolicy,
    (False, True): _GuidedAsyncPolicy,
    (True, True): _GuidedAsyncTokenPolicy,
}
