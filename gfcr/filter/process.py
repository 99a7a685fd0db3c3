"""Process scores: a score for a step (or a segment) of an episode, not only for its outcome.

A `ProcessScorer` (a process reward model, a rule, a partial verifier) scores the trajectory so
far: its last step. None means it could not (a PRM that failed or answered nothing readable, a
rule with nothing to check in that step): the step has no score, which is not a score of 0.

- `ProgressScorer` is the rule scorers' shape: an env family says what level a step reached
  (the share of visible tests passing after a `run_tests` call, …; `TextEnv.process_rules`), and
  the step scores its progress over the best level before it, so repeating a check pays nothing.
- `PolicyPRM` is any gfcr policy as a PRM: it is asked to grade each step (or each segment, e.g.
  each line of reasoning) given what came before, through `gfcr.core.chat.PolicyChat`.
- `ProcessScoreHook` is the runner's Filter hook (`on_step`): it stores the score as the step's
  signal `process_score` during a rollout, where Control (`PrefixStop`) reads it.

The training path (the judge stage scores every step after generation; credit turns the scores
into per-token advantages) is `gfcr.filter.process_credit`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol, runtime_checkable

from gfcr.core import Message, Step, Trajectory
from gfcr.core.admission import AdmissionConfig
from gfcr.core.trajectory import Signals
from gfcr.errors import ConfigError
from gfcr.filter.judge import ask, judge_chat, last_verdict, unit_score, verdict_tag

PROCESS_SCORE = "process_score"  # the step signal a process score is written to


@runtime_checkable
class ProcessScorer(Protocol):
    """Scores the last step of a partial trajectory (no gold data needed): higher is better;
    None where it cannot score that step."""

    def score(self, trajectory: Trajectory) -> float | None: ...


@dataclass(frozen=True)
class ProcessScoreHook:
    """Runner hook: `Runner(..., filters=[ProcessScoreHook(scorer)])`. A step the scorer gives
    None gets no signal.

    >>> class Short:
    ...     def score(self, trajectory):
    ...         return 1.0 if len(trajectory.steps[-1].action) < 10 else 0.0
    >>> t = Trajectory("e", "t", "?", [Step("a very long step", "", 0.0, False, False)])
    >>> ProcessScoreHook(Short()).on_step(t, t.steps[-1])
    >>> t.steps[-1].signals
    {'process_score': 0.0}

    A plain function of the trajectory works too: `ProcessScoreHook(lambda t: 1.0)`.
    """

    scorer: ProcessScorer | Callable[[Trajectory], float | None]
    key: str = PROCESS_SCORE

    def __post_init__(self) -> None:
        if not self.key:
            raise ConfigError("ProcessScoreHook needs a signal key, got ''")
        if not isinstance(self.scorer, ProcessScorer) and not callable(self.scorer):
            raise ConfigError(
                f"ProcessScoreHook needs a scorer with score(trajectory) -> float or a function "
                f"trajectory -> float, got {type(self.scorer).__name__}"
            )

    def on_step(self, trajectory: Trajectory, step: Step) -> None:
        scorer = self.scorer
        score = scorer.score(trajectory) if isinstance(scorer, ProcessScorer) else scorer(trajectory)
        if score is not None:
            step.signals[self.key] = float(score)


@dataclass(frozen=True)
class ProgressScorer:
    """A rule scorer: `level(signals)` is the level a step's own check reached, in [0, 1] (None:
    the step checked nothing); the step scores its progress, max(0, level − the best level of
    the steps before it, 0 at first).

    Paying progress rather than the level is what keeps a rule from paying for work not done: a
    check repeated without a change scores 0, and an episode's scores sum to its best level at
    most (a regression and its repair pay once), however many checks it makes.

    >>> def level(signals):  # e.g. the share of visible tests passing, on steps that ran them
    ...     return signals["passing"] if signals.get("tested") else None
    >>> steps = [Step("", "", 0.0, False, False, {"tested": True, "passing": p}) for p in (0.5, 0.5, 1.0)]
    >>> scorer = ProgressScorer(level)
    >>> [scorer.score(Trajectory("e", "t", "?", steps[: i + 1])) for i in range(3)]
    [0.5, 0.0, 0.5]
    """

    level: Callable[[Signals], float | None]

    def score(self, trajectory: Trajectory) -> float | None:
        levels = [self.level(step.signals) for step in trajectory.steps]
        if not levels or levels[-1] is None:
            return None
        best = max((level for level in levels[:-1] if level is not None), default=0.0)
        return max(0.0, levels[-1] - best)


class Ask(NamedTuple):
    """What a PRM is asked about: `unit` (a step's action, or a line of it) of the task `prompt`,
    after the texts of `context` (the steps before it, and the lines before it in its step)."""

    prompt: str
    context: Sequence[str]
    unit: str


def step_text(step: Step) -> str:
    """A step as a PRM's context shows it: the action, then what the env answered."""
    return f"{step.action}\n[observation] {step.observation}"


PRM_INSTRUCTIONS = (
    "You grade one step of a solution in progress, not the whole solution. Read the task, the steps "
    "before it and the step; judge whether the step is correct and moves the solution forward. Reason "
    "briefly before your verdict."
)


@dataclass
class PolicyPRM:
    """Any gfcr policy (a spec such as `"hf:PATH"` or `"openai:MODEL@URL"`, a policy, a
    `PolicyChat`, or a chat function) as a process reward model: it grades a step given the task
    and what came before, on a verdict line tagged with a code drawn from the prompt (as
    `LLMJudge` does: a step that writes its own verdict line cannot score itself).

    A call that fails (raised, missed `deadline_s`) or a reply with no readable verdict gives
    None for that step: no score, never 0.

    >>> import re
    >>> def grader(messages):  # a scripted PRM: steps that show their working score 1
    ...     tag = re.search(r"VERDICT \\w+", messages[-1].text)[0]
    ...     return f"{tag}: {1.0 if '=' in messages[-1].text.split('Step:')[-1] else 0.0}"
    >>> prm = PolicyPRM(grader)
    >>> prm.scores([Ask("2+2*3?", (), "2*3 = 6"), Ask("2+2*3?", ("2*3 = 6",), "so 8")])
    [1.0, 0.0]
    >>> PolicyPRM(lambda messages: "SCORE: 1").scores([Ask("2+2?", (), "4")])  # no tagged verdict
    [None]
    """

    model: Any  # a policy spec, a policy, a PolicyChat or a chat function
    instructions: str = PRM_INSTRUCTIONS
    max_tokens: int = 256
    deadline_s: float | None = None  # per call to the model; past it the steps are not scored
    cache_path: str | None = None  # a SQLite file of replies, kept across runs
    admission: AdmissionConfig = field(default_factory=AdmissionConfig)

    def __post_init__(self) -> None:
        self.chat = judge_chat(self.model, self.admission, self.deadline_s, self.cache_path, self.max_tokens)

    def score(self, trajectory: Trajectory) -> float | None:
        """The last step's score, the steps before it (with their observations) as its context."""
        if not trajectory.steps:
            return None
        *earlier, last = trajectory.steps
        return self.scores([Ask(trajectory.prompt, [step_text(s) for s in earlier], last.action)])[0]

    def scores(self, asks: Sequence[Ask]) -> list[float | None]:
        """One score per `Ask`, all asked in one call (one batch for an HF or vLLM policy); None
        where the PRM gave none."""
        if not asks:
            return []
        conversations = [self.prompt(*ask) for ask in asks]
        replies = ask(self.chat, [messages for messages, _ in conversations])
        if isinstance(replies, str):  # the call failed: no unit is scored
            return [None] * len(asks)
        return [
            unit_score(last_verdict(reply, tag))
            for (_, tag), reply in zip(conversations, replies, strict=True)
        ]

    def prompt(self, prompt: str, context: Sequence[str], unit: str) -> tuple[list[Message], str]:
        """The PRM's conversation about `unit` and the tag its verdict line must carry."""
        earlier = "\n\n".join(f"Step {i}:\n{text}" for i, text in enumerate(context, 1)) or "(none)"
        parts = [f"Task:\n{prompt}", f"Steps so far:\n{earlier}", f"Step:\n{unit}"]
        tag = verdict_tag(parts)
        parts.append(
            f"End your answer with one line `{tag}: x`, x a number from 0 (a wrong or useless step) "
            "to 1 (a correct step that makes progress)."
        )
        return [Message("system", self.instructions), Message("user", "\n\n".join(parts))], tag


@dataclass(frozen=True)
class ByEnv:
    """Each env's own scorer, for a pool of several envs: an episode of an env without one (or of
    one not named) gets no score.

    >>> t = Trajectory("gfcr/A-v0", "t", "?", [Step("x", "", 0.0, True, False)])
    >>> ByEnv({"gfcr/A-v0": ProgressScorer(lambda s: 1.0)}).score(t), ByEnv({}).score(t)
    (1.0, None)
    """

    scorers: Mapping[str, ProcessScorer | None]

    def score(self, trajectory: Trajectory) -> float | None:
        scorer = self.scorers.get(trajectory.env_id)
        return None if scorer is None else scorer.score(trajectory)
