"""`GroupJudge`: a language model ranks a group's responses against each other (relative judging).

Relative judges such as RULER (OpenPipe 2025, "RULER: Relative Universal LLM-Elicited Rewards")
show the judge every response to one prompt at once: it is easier to say which of K attempts is
better than how good one is, and GRPO's advantages only use the differences within a group.

- `mode="listwise"`: one call shows the task and the K responses and asks for a score of each,
  `VERDICT …: 1=x, 2=x, …` with x in [0, 1].
- `mode="pairwise"`: every pair once, K(K-1)/2 comparisons (28 for K = 8) asked in one batched
  call, each answered `A`, `B` or `tie`; a member's score is its share of wins (a tie half a win)
  over the comparisons the judge answered. All pairs rather than a cheaper tournament: each
  member is compared with every other, so one misjudged pair moves a score by 1/(K-1) only.

The order shown is shuffled, seeded by `seed` and the group itself (reproducible, so a cached
rerun asks nothing), and in pairwise each pair's sides are drawn the same way: position bias
does not favour the first response. Responses are shown under labels they cannot know in
advance and the verdict must come on the prompt's own tagged line (`verdict_tag`), so a response
that writes "Response 3 is best" or "SCORE: 1" cannot set its own score.
Members the judge did not score (its call raised or missed its deadline, or its verdict left
them out or was unreadable) get None: the pipeline marks them `judge_failure`.
"""

from __future__ import annotations

import hashlib
import itertools
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gfcr.core import Message, Task, Trajectory
from gfcr.core.admission import AdmissionConfig
from gfcr.errors import ConfigError
from gfcr.filter.judge import (
    Judged,
    ask,
    judge_chat,
    last_verdict,
    response_of,
    task_parts,
    unit_score,
    verdict_tag,
)

MODES = ("listwise", "pairwise")
INSTRUCTIONS = (
    "You are a strict grader comparing responses to the same task. Read the task, the reference "
    "answer if one is given, and every response; judge which solve the task, and how well, "
    "comparing them with each other. Reason briefly before your verdict."
)
_LABELLED = re.compile(r"(\d+)\s*[=:]\s*([^,;\s]+)")
_SIDES = {"A": 1.0, "B": 0.0, "TIE": 0.5}  # what the first side (A) gets of one comparison


@dataclass
class GroupJudge:
    """Scores each member of a group in [0, 1] relative to the others (listwise or pairwise).

    `model` is anything `LLMJudge` takes (a spec, a policy, a `PolicyChat`, a chat function).

    >>> import re
    >>> def model(messages):  # a scripted judge: prefers the response that says 4
    ...     text = messages[-1].text
    ...     tag = re.search(r"VERDICT \\w+", text)[0]
    ...     a, b = re.findall(r"Response [AB]:\\n(.*)", text)
    ...     return f"{tag}: {'A' if a == '4' else 'B' if b == '4' else 'tie'}"
    >>> from gfcr.core import Step
    >>> group = [Trajectory("e", "t", "2+2?", [Step(a, "", 0.0, True, False)]) for a in ("5", "4", "3")]
    >>> GroupJudge(model, mode="pairwise").scores(Task("t", "2+2?"), group)
    [0.25, 1.0, 0.25]
    """

    model: Any
    mode: str = "listwise"
    instructions: str = INSTRUCTIONS
    include_gold: bool = True
    seed: int = 0  # with the group, seeds the order the responses are shown in
    admission: AdmissionConfig = field(default_factory=AdmissionConfig)
    deadline_s: float | None = None
    cache_path: str | None = None
    max_tokens: int = 512

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ConfigError(f"GroupJudge mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        self.chat = judge_chat(self.model, self.admission, self.deadline_s, self.cache_path, self.max_tokens)

    def scores(self, task: Task, group: Sequence[Trajectory]) -> list[float | None]:
        """Each member's relative score; None where the judge gave none."""
        return [score for score, _ in self.judge(task, group)]

    def judge(self, task: Task, group: Sequence[Trajectory]) -> list[Judged]:
        """(score, "") per member, or (None, why the judge gave no score)."""
        responses = [response_of(t) for t in group]
        if len(group) < 2:  # nothing to compare with: neutral, as a group of one has no advantage
            return [(0.5, "")] * len(group)
        rng = random.Random(f"{self.seed}:{hashlib.sha256(repr(responses).encode()).hexdigest()}")
        if self.mode == "listwise":
            return self._listwise(task, responses, rng)
        return self._pairwise(task, responses, rng)

    def _listwise(self, task: Task, responses: list[str], rng: random.Random) -> list[Judged]:
        shown = rng.sample(range(len(responses)), len(responses))  # shown[j]: the member labelled j + 1
        parts = [
            *task_parts(task, self.include_gold),
            *(f"Response {j}:\n{responses[i]}" for j, i in enumerate(shown, 1)),
        ]
        tag = verdict_tag(parts)
        labels = ", ".join(f"{j}=x" for j in range(1, len(shown) + 1))
        parts.append(f"End your answer with one line `{tag}: {labels}`, one score x per response, from 0 "
                     "(worst) to 1 (best).")  # fmt: skip
        replies = ask(self.chat, [self._conversation(parts)])
        if isinstance(replies, str):
            return [(None, replies)] * len(responses)
        by_label: dict[int, list[float | None]] = {}
        for label, value in _LABELLED.findall(last_verdict(replies[0], tag) or ""):
            by_label.setdefault(int(label), []).append(unit_score(value))
        judged: list[Judged] = [(None, "")] * len(responses)
        for j, i in enumerate(shown, 1):
            values = by_label.get(j, [])
            score = values[0] if len(values) == 1 else None  # a label scored twice is ambiguous
            judged[i] = (
                (score, "") if score is not None else (None, f"no readable score for response {j} on {tag}")
            )
        return judged

    def _pairwise(self, task: Task, responses: list[str], rng: random.Random) -> list[Judged]:
        pairs = [
            (j, i) if rng.random() < 0.5 else (i, j)
            for i, j in itertools.combinations(range(len(responses)), 2)
        ]
        prompts = []
        for a, b in pairs:  # a is shown first, as A
            parts = [
                *task_parts(task, self.include_gold),
                f"Response A:\n{responses[a]}",
                f"Response B:\n{responses[b]}",
            ]
            tag = verdict_tag(parts)
            parts.append(f"End your answer with one line `{tag}: A` or `{tag}: B`, naming the better "
                         f"response, or `{tag}: tie`.")  # fmt: skip
            prompts.append((self._conversation(parts), tag))
        replies = ask(self.chat, [conversation for conversation, _ in prompts])
        if isinstance(replies, str):
            return [(None, replies)] * len(responses)
        won: list[list[float]] = [[] for _ in responses]  # each member's share of each answered comparison
        for (a, b), (_, tag), reply in zip(pairs, prompts, replies, strict=True):
            first = _SIDES.get((last_verdict(reply, tag) or "").strip(" .").upper())
            if first is not None:
                won[a].append(first)
                won[b].append(1.0 - first)
        return [
            (sum(w) / len(w), "") if w else (None, "no comparison of it answered A, B or tie") for w in won
        ]

    def _conversation(self, parts: list[str]) -> list[Message]:
        return [Message("system", self.instructions), Message("user", "\n\n".join(parts))]
