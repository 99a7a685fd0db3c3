"""The vision family's checker as a Filter `Verifier`: the env and offline re-judging share it.

A reply answers in `\\boxed{...}`, as `gfcr/Math-v0`'s do. Every box in the reply must hold a
correct answer (hedging with `\\boxed{3} or \\boxed{4}` earns nothing), and a reply with more
than `MAX_BOXES` boxes is not read at all. How one answer is checked depends on the task's
`answer_kind`:

- `"number"`: one plain number after math's normalisation, compared exactly with math's number
  checker (12, 12.0, 24/2, \\frac{24}{2}, 40°, x = 12, 12 cm all match 12; a list such as 1, 2, 3,
  a percentage, or a number inside other text, 2JJB, does not);
- `"choice"`: the option's words (case, punctuation and articles aside: "The red circle." is
  "red circle"), or its letter (B, (B), or "(B) red circle" whose text agrees);
- `"text"`: the same words as the gold answer;
- `"path"`: moves through the task's maze (U, D, L, R), walked from S: correct when no move
  crosses a wall and the walk ends on G (see `gfcr.envs.vision.maze`).

>>> from gfcr.envs.vision.tasks import generated_task
>>> task = generated_task("count", 1, 0)
>>> VisionVerifier().check(task, "I count \\\\boxed{5}.").passed
True
>>> VisionVerifier().check(task, "\\\\boxed{5} or maybe \\\\boxed{4}").passed
False
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gfcr.core import Task, Trajectory, Verdict
from gfcr.core.trajectory import Signals
from gfcr.envs.math.answers.extract import extract_boxed
from gfcr.envs.math.answers.normalize import normalize, words
from gfcr.envs.math.answers.numeric import Number, numbers_match, parse_numbers
from gfcr.envs.math.answers.structures import choice_letter
from gfcr.envs.vision.maze import parse_moves, walk

MAX_BOXES = 5  # more boxes than this in one reply is a list of guesses, not an answer
NO_ANSWER = "No final answer found, so the episode is over with reward 0 (the rule was: answer in \\boxed{})."
_COMMAND = re.compile(r"\\[A-Za-z]+")
_BOX = re.compile(r"\\(?:boxed|fbox)(?![A-Za-z])")
_LABELLED = re.compile(r"\(?([A-Za-z])[).:]\s*(.+)", re.DOTALL)  # "(B) red circle", "B. red circle"


def boxed_answers(text: str) -> list[str]:
    """The content of every complete `\\boxed{}` in `text`, in order.

    >>> boxed_answers("first \\\\boxed{3}, then \\\\boxed{\\\\frac{1}{2}} and \\\\boxed{")
    ['3', '\\\\frac{1}{2}']
    """
    starts = [match.start() for match in _BOX.finditer(text)]
    ends = [*starts[1:], len(text)]
    segments = (text[start:end] for start, end in zip(starts, ends, strict=False))  # no box: no segment
    return [answer for segment in segments if (answer := extract_boxed(segment)) is not None]


def final_answer(trajectory: Trajectory) -> str | None:
    """The answer `gfcr/Vision-v0` read from `trajectory`'s last reply (its boxes, joined), or None
    where it read none (for `gfcr.filter.semantic`'s answer clusters).

    >>> from gfcr.core import Step
    >>> step = Step("so \\\\boxed{red}", "", 1.0, True, False, {"format_ok": True})
    >>> final_answer(Trajectory("gfcr/Vision-v0", "t", "?", [step]))
    'red'
    """
    if not trajectory.steps or not trajectory.signals.get("format_ok"):
        return None
    return ", ".join(boxed_answers(trajectory.steps[-1].action)) or None


def check_answer(task: Task, answer: str) -> tuple[bool, bool]:
    """Whether `answer` solves `task`, and (for a path) whether its moves stay within the walls."""
    kind, gold = task.metadata["answer_kind"], str(task.gold)
    if kind == "number":
        predicted, expected = plain_number(answer), plain_number(gold)
        return predicted is not None and expected is not None and numbers_match(predicted, expected), False
    if kind == "choice":
        return choice_matches(answer, gold, task.metadata["choices"]), False
    if kind == "text":
        said = text_words(answer)
        return bool(said) and said == text_words(gold), False
    scene = task.metadata["scene"]
    moves = parse_moves(answer, scene["size"])
    if moves is None:
        return False, False
    valid, reached = walk(scene, moves)
    return valid and reached, valid


def plain_number(text: str) -> Number | None:
    """The one number `text` states, after math's normalisation (units, degrees, `x =`, `\\text{}`
    dropped), or None: a percentage is none here (300% is not 3 objects), nor is a list.

    >>> [plain_number(t).value for t in ("40°", "x = \\\\frac{24}{2}", "5 objects")]
    [Fraction(40, 1), Fraction(12, 1), Fraction(5, 1)]
    >>> plain_number("300\\\\%"), plain_number("1, 2, 3"), plain_number("2JJB>")
    (None, None, None)
    """
    compact = normalize(text).replace(" ", "")
    numbers = () if compact.endswith("%") else parse_numbers(compact)
    return numbers[0] if numbers else None


def choice_matches(answer: str, gold: str, choices: list[str]) -> bool:
    """Whether `answer` picks the option `gold` of `choices`: by its words, or its letter (A is the
    first option), or both ("(B) blue", where the text must agree too).

    >>> answers = ("Blue.", "(B)", "b", "\\\\text{B}", "B. blue", "A. blue", "red or blue")
    >>> [choice_matches(answer, "blue", ["red", "blue"]) for answer in answers]
    [True, True, True, True, True, False, False]
    """
    gold_words = text_words(gold)
    answer = _COMMAND.sub("", answer).replace("{", "").replace("}", "").strip()  # \\text{(B)} is (B)
    labelled = _LABELLED.fullmatch(answer)
    if labelled is not None:  # a letter and a text: both must name the gold option
        option = _option(choices, labelled.group(1).lower())
        return option == gold and text_words(labelled.group(2)) == gold_words
    letter = choice_letter(answer)
    if letter is not None:
        return _option(choices, letter) == gold
    said = text_words(answer)
    return bool(said) and said == gold_words


def text_words(text: str) -> str:
    """A text answer's words: lower case, without punctuation, articles or LaTeX commands.

    >>> text_words("The \\\\text{Red} circle."), text_words("a square")
    ('red circle', 'square')
    """
    return words(_COMMAND.sub(" ", text))


def _option(choices: list[str], letter: str) -> str | None:
    index = ord(letter) - ord("a")
    return choices[index] if 0 <= index < len(choices) else None


@dataclass(frozen=True)
class VisionVerifier:
    """Reward 1.0 when every boxed answer of the reply is correct, else 0.0 (a `gfcr.filter.Verifier`).

    Signals: `format_ok` (one to `MAX_BOXES` boxed answers), `answer_extracted` (at least one box),
    `correct`, `path_valid` (a maze answer's moves cross no wall; False for other kinds).
    """

    def verify(self, task: Task, trajectory: Trajectory) -> Verdict:
        return self.check(task, trajectory.steps[-1].action if trajectory.steps else "")

    def check(self, task: Task, text: str) -> Verdict:
        """The verdict on one reply text."""
        return self.judge(task, text)[0]

    def judge(self, task: Task, text: str) -> tuple[Verdict, str]:
        """The verdict on one reply text, and what the env tells the agent about it."""
        answers = boxed_answers(text) if isinstance(text, str) else []
        if not answers:
            note = NO_ANSWER
            return Verdict(0.0, False, answer_signals(False, False, False, False)), note
        if len(answers) > MAX_BOXES:
            note = f"{len(answers)} boxed answers is more than {MAX_BOXES}: none is read, reward 0."
            return Verdict(0.0, False, answer_signals(False, True, False, False)), note
        checks = [check_answer(task, answer) for answer in answers]
        correct = all(ok for ok, _ in checks)
        path_valid = all(valid for _, valid in checks)
        verdict = "correct" if correct else "incorrect"
        note = (
            f"Your answer {answers[0]} is {verdict}."
            if len(answers) == 1
            else f"Your answers {', '.join(answers)} are {verdict}."
        )
        if len(answers) > 1 and not correct:
            note += " Every boxed answer must be correct."
        return Verdict(
            1.0 if correct else 0.0, correct, answer_signals(True, True, correct, path_valid)
        ), note


def answer_signals(format_ok: bool, extracted: bool, correct: bool, path_valid: bool) -> Signals:
    return {
        "format_ok": format_ok,
        "answer_extracted": extracted,
        "correct": correct,
        "path_valid": path_valid,
    }
