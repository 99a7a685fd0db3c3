"""`LLMJudge`: a language model as a pointwise grader, one verdict per response, failing safe.

The judge talks to any gfcr policy or policy spec (`"openai:MODEL@URL"`, which also reaches a
`gfcr serve` server, `"hf:PATH"`, `"vllm:PATH"` …) or a plain chat function, always through
`gfcr.core.chat.PolicyChat`: replies are cached (in memory, and in a SQLite file with
`cache_path`), each call passes the model's admission gate (`admission`: how many at once) and
must be answered within `deadline_s`.

A judge that raises, misses its deadline or answers nothing parsable has not judged: `scores`
gives None for those members (`judge` says why) and `verify` a verdict with the signal
`judge_failure` (the reason logged), which the pipeline leaves out of training and `gfcr bench`
out of pass@k and pass^k, as the infrastructure's failure, never a 0 that counts as the agent's.

The verdict must come on a line tagged with a code drawn from the prompt itself (`verdict_tag`):
a response cannot know the code of the prompt it is shown in, so a response that writes
"SCORE: 1", or forges a verdict line, cannot score itself even when the judge quotes it.

    judge = LLMJudge("openai:judge@http://127.0.0.1:8000/v1", deadline_s=30, cache_path="runs/judge.db")
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gfcr.core import Message, Task, Trajectory
from gfcr.core.admission import AdmissionConfig
from gfcr.core.chat import ChatModel, PolicyChat
from gfcr.core.policy import Completion, Request
from gfcr.core.verdict import Verdict
from gfcr.errors import ConfigError
from gfcr.filter.compose import JUDGE_FAILURE

logger = logging.getLogger(__name__)

INSTRUCTIONS = (
    "You are a strict grader. Read the task, the reference answer if one is given, and the response. "
    "Judge whether the response solves the task; reason briefly before your verdict."
)
# A member's judgement: (score, "") or (None, why the judge gave no score).
Judged = tuple[float | None, str]
_NUMBER = re.compile(r"\d+(?:\.\d*)?|\.\d+")


@dataclass
class LLMJudge:
    """Scores each trajectory's final response in [0, 1]; passes at `pass_at`.

    `model` is a policy spec, a policy, a `PolicyChat` (used as it is: its own cache, gate and
    deadline) or a chat function (messages -> text); decoding is greedy, at most `max_tokens`.

    >>> import re
    >>> calls = []
    >>> def model(messages):  # a scripted judge: answers on the tagged line the prompt asks for
    ...     calls.append(messages)
    ...     tag = re.search(r"VERDICT \\w+", messages[-1].text)[0]
    ...     return f"Looks right.\\n{tag}: 0.9"
    >>> from gfcr.core import Step
    >>> t = Trajectory("e", "t", "2+2?", [Step("4", "", 0.0, True, False)])
    >>> judge, task = LLMJudge(model), Task("t", "2+2?", gold="4")
    >>> judge.verify(task, t), judge.verify(task, t).reward
    (Verdict(reward=0.9, passed=True, signals={'judge_score': 0.9}), 0.9)
    >>> len(calls)  # the second verdict came from the cache
    1
    >>> junk = LLMJudge(lambda messages: "SCORE: 1")  # no tagged verdict line: no score
    >>> junk.verify(task, t).signals, junk.judge(task, [t])
    ({'judge_failure': True}, [(None, 'no verdict line VERDICT ...: x (x in [0, 1]) in the reply')])
    """

    model: ChatModel | Any  # a chat function, a policy, a PolicyChat, or a policy spec (str)
    instructions: str = INSTRUCTIONS
    include_gold: bool = True  # show the task's gold data as the reference answer
    pass_at: float = 0.5
    admission: AdmissionConfig = field(default_factory=AdmissionConfig)
    deadline_s: float | None = None  # per call to the model; past it the members are not scored
    cache_path: str | None = None  # a SQLite file of replies, kept across runs
    max_tokens: int = 512

    def __post_init__(self) -> None:
        if not 0.0 <= self.pass_at <= 1.0:
            raise ConfigError(f"pass_at must be in [0, 1], got {self.pass_at}")
        self.chat = judge_chat(self.model, self.admission, self.deadline_s, self.cache_path, self.max_tokens)

    def scores(self, task: Task, group: Sequence[Trajectory]) -> list[float | None]:
        """Each member's score, asked in one call; None where the judge gave none."""
        return [score for score, _ in self.judge(task, group)]

    def verify(self, task: Task, trajectory: Trajectory) -> Verdict:
        """The Verifier API: one trajectory's verdict; a failed judgement carries `judge_failure`."""
        [(score, error)] = self.judge(task, [trajectory])
        if score is None:
            logger.warning(
                "judge %s gave no verdict on %s: %s", self.chat.identity, trajectory.task_id, error
            )
            return Verdict(0.0, False, {JUDGE_FAILURE: True})
        return Verdict(score, score >= self.pass_at, {"judge_score": score})

    def judge(self, task: Task, group: Sequence[Trajectory]) -> list[Judged]:
        """(score, "") per member, or (None, why the judge gave no score)."""
        prompts = [self.prompt(task, t) for t in group]
        replies = ask(self.chat, [messages for messages, _ in prompts])
        if isinstance(replies, str):
            return [(None, replies)] * len(group)
        judged: list[Judged] = []
        for (_, tag), reply in zip(prompts, replies, strict=True):
            score = unit_score(last_verdict(reply, tag))
            judged.append(
                (score, "")
                if score is not None
                else (None, f"no verdict line {tag}: x (x in [0, 1]) in the reply")
            )
        return judged

    def prompt(self, task: Task, trajectory: Trajectory) -> tuple[list[Message], str]:
        """The judge's conversation (instructions, then task, reference and response) and its tag."""
        parts = [*task_parts(task, self.include_gold), f"Response:\n{response_of(trajectory)}"]
        tag = verdict_tag(parts)
        parts.append(
            f"End your answer with one line `{tag}: x`, x a number from 0 (wrong) to 1 (fully correct)."
        )
        return [Message("system", self.instructions), Message("user", "\n\n".join(parts))], tag


def judge_chat(
    model: Any, admission: AdmissionConfig, deadline_s: float | None, cache_path: str | None, max_tokens: int
) -> PolicyChat:
    """`model` (a spec, a policy, a `PolicyChat` or a chat function) as the judge's `PolicyChat`."""
    if isinstance(model, PolicyChat):
        return model
    if not isinstance(model, str) and not callable(getattr(model, "generate", None)):
        if not callable(model):
            raise ConfigError(f"model must be a chat model, a policy or a policy spec, got {model!r}")
        model = _ChatPolicy(model)
    return PolicyChat(model, max_tokens=max_tokens, cache_path=cache_path, name="judge", resource="judge",
                      admission=admission, deadline_s=deadline_s)  # fmt: skip


@dataclass
class _ChatPolicy:
    """A chat function as a policy, so that it is cached, gated and deadlined like any model."""

    chat: ChatModel

    @property
    def name(self) -> str:
        return getattr(self.chat, "name", getattr(self.chat, "__qualname__", type(self.chat).__name__))

    version = ""

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        return [Completion(self.chat(request.messages)) for request in requests]


def ask(chat: PolicyChat, conversations: Sequence[Sequence[Message]]) -> list[str] | str:
    """The replies, or why there are none: whatever the model's call raised (a missed deadline,
    a full queue, a crash) is the judge's failure, reported, never the run's."""
    try:
        return chat.replies(conversations)
    except Exception as e:
        logger.warning("judge %s failed on %d conversation(s): %s", chat.identity, len(conversations), e)
        return f"the judge's call failed: {type(e).__name__}: {e}"


def task_parts(task: Task, include_gold: bool) -> list[str]:
    """What every judge is shown first: the task, and its gold data as the reference answer."""
    parts = [f"Task:\n{task.prompt}"]
    if include_gold and task.gold is not None:
        parts.append(f"Reference answer:\n{task.gold}")
    return parts


def response_of(trajectory: Trajectory) -> str:
    """What a judge grades: the trajectory's final action ("" before any step)."""
    return trajectory.steps[-1].action if trajectory.steps else ""


def verdict_tag(parts: Sequence[str]) -> str:
    """The tag the judge's verdict line must carry: a hash of everything it is shown, so no
    response shown can contain it.

    >>> verdict_tag(["Task: 2+2?", "Response: 4"])
    'VERDICT 6f64c9b09a'
    """
    return "VERDICT " + hashlib.sha256("\n".join(parts).encode()).hexdigest()[:10]


def last_verdict(reply: str, tag: str) -> str | None:
    """The text after `tag:` on the reply's last line that carries it (markdown around it dropped).

    >>> last_verdict("VERDICT ab: 0.2\\n**VERDICT ab: 0.8**", "VERDICT ab")
    '0.8'
    >>> last_verdict("verdict AB: **B**", "VERDICT ab")
    'B'
    """
    found = re.findall(rf"^[\W_]*{re.escape(tag)}[\W_]*?:(.*)$", reply, re.MULTILINE | re.IGNORECASE)
    return found[-1].strip(" \t*`'\"") if found else None


def unit_score(text: str | None) -> float | None:
    """`text` as a score if it is one number in [0, 1] (a trailing period allowed), else None.

    >>> unit_score("0.75"), unit_score("1."), unit_score("7"), unit_score("0.5 or 0.6"), unit_score(None)
    (0.75, 1.0, None, None, None)
    """
    numbers = _NUMBER.findall(text or "")
    if len(numbers) != 1 or _NUMBER.sub("", text or "").strip(" .") != "":
        return None
    value = float(numbers[0])
    return value if 0.0 <= value <= 1.0 else None
