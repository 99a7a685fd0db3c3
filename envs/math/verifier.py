"""The math family's checker as a Filter `Verifier`: the env and any GFCR module share it.

`check_answer(task, answer)` decides one extracted answer; `MathVerifier` reads the final
answer of a response (or of a trajectory's last action) in its `answer_format` and gives the
verdict with the env's signals: `format_ok`, `answer_extracted`, `correct`.

- `"boxed"` (the default, as MATH and DeepSeek-R1 grade): the last `\\boxed{}` only.
- `"plain"`: a `\\boxed{}` answer if there is one, else the answer math-verify reads in the text
  ("The answer is 15", "32 + 38 = 70"), as lm-evaluation-harness's flexible extraction does;
  for small models that have not learned the box.

>>> from gfcr.core import Task
>>> MathVerifier().check(Task("t", "1+1?", gold="2"), "so \\\\boxed{2}")
Verdict(reward=1.0, passed=True, signals={'format_ok': True, 'answer_extracted': True, 'correct': True})
>>> MathVerifier("plain").check(Task("t", "1+1?", gold="2"), "1 + 1 = 2.").passed
True
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Literal

from gfcr.core import Task, Trajectory, Verdict, solved
from gfcr.core.trajectory import Signals
from gfcr.envs.math.answers.bounded import explosive
from gfcr.envs.math.answers.equivalence import is_equivalent
from gfcr.envs.math.answers.extract import extract_boxed
from gfcr.errors import UnknownNameError


class _InputIsBounded(logging.Filter):
    """Drops math-verify's warning that parsing without a timeout may hang: `extract_answer`
    bounds its input itself (math-verify's timeouts need the main thread)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "parsing_timeout is None" not in record.getMessage()


logging.getLogger("math_verify.parser").addFilter(_InputIsBounded())
AnswerFormat = Literal["boxed", "plain"]
PLAIN_TAIL_CHARS = 400  # a plain answer is read from the reply's end
ANSWER_FORMATS: tuple[AnswerFormat, ...] = ("boxed", "plain")


def extract_answer(text: str, answer_format: AnswerFormat = "boxed") -> str | None:
    """The final answer of `text` in `answer_format` ("boxed" or "plain", see above), or None.

    >>> extract_answer("The answer is 15. Three is 14.", "plain"), extract_answer("so 15", "boxed")
    ('15', None)
    """
    answer = extract_boxed(text)
    if answer is not None or answer_format == "boxed":
        return answer
    from math_verify import ExprExtractionConfig, parse

    tail = text[-PLAIN_TAIL_CHARS:]
    if explosive(tail):  # no timeout can stop sympy inside C code: such input never reaches it
        return None
    parsed = parse(tail, extraction_config=[ExprExtractionConfig()], parsing_timeout=None)  # type: ignore[arg-type]
    return str(parsed[1]) if len(parsed) > 1 else None


def final_answer(trajectory: Trajectory) -> str | None:
    """The answer `gfcr/Math-v0` read from `trajectory`'s last action, or None where it read none.

    The env's `answer_extracted` signal says whether it read one; reading the box first, then
    the plain text, gives what either answer format read (a boxed env reads only boxes, so its
    extracted answers are boxed).

    >>> from gfcr.core import Step
    >>> step = Step("so \\\\boxed{\\\\frac12}", "", 1.0, True, False, {"answer_extracted": True})
    >>> final_answer(Trajectory("gfcr/Math-v0", "t", "?", [step]))
    '\\\\frac12'
    """
    if not trajectory.steps or not trajectory.signals.get("answer_extracted"):
        return None
    return extract_answer(trajectory.steps[-1].action, "plain")


def check_answer(task: Task, answer: str) -> bool:
    """Whether `answer` solves `task`: reasoning-gym tasks use their generator's own scorer."""
    entry = task.metadata.get("entry")
    if entry is None:
        return is_equivalent(answer, str(task.gold))
    import reasoning_gym

    try:
        score = reasoning_gym.get_score_answer_fn(entry["metadata"]["source_dataset"])(answer, entry)
    except Exception:  # a generator's scorer choking on junk is a wrong answer, not a crash
        return False
    return solved(score)


def answer_signals(answer: str | None, correct: bool) -> Signals:
    """The math signals for an extracted answer (None: no final answer) and its verdict.

    >>> answer_signals(None, False)
    {'format_ok': False, 'answer_extracted': False, 'correct': False}
    """
    found = answer is not None
    return {"format_ok": found, "answer_extracted": found, "correct": correct}


@dataclass(frozen=True)
class MathVerifier:
    """Reward 1.0 for a correct final answer, else 0.0 (implements `gfcr.filter.Verifier`)."""

    answer_format: AnswerFormat = "boxed"

    def __post_init__(self) -> None:
        if self.answer_format not in ANSWER_FORMATS:
            raise UnknownNameError("answer format", self.answer_format, ANSWER_FORMATS)

    def verify(self, task: Task, trajectory: Trajectory) -> Verdict:
        return self.check(task, trajectory.steps[-1].action if trajectory.steps else "")

    def check(self, task: Task, text: str) -> Verdict:
        """The verdict on one response text."""
        answer = extract_answer(text, self.answer_format)
        correct = answer is not None and check_answer(task, answer)
        return Verdict(1.0 if correct else 0.0, correct, answer_signals(answer, correct))
