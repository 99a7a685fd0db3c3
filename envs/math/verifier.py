"""The math family's checker as a Filter `Verifier`: the env and any GFCR module share it.

`check_answer(task, answer)` decides one extracted answer; `MathVerifier` reads the final
`\\boxed{}` answer of a response (or of a trajectory's last action) and gives the verdict with
the env's signals: `format_ok`, `answer_extracted`, `correct`.

>>> from gfcr.core import Task
>>> MathVerifier().check(Task("t", "1+1?", gold="2"), "so \\\\boxed{2}")
Verdict(reward=1.0, passed=True, signals={'format_ok': True, 'answer_extracted': True, 'correct': True})
"""

from __future__ import annotations

from gfcr.core import Task, Trajectory, Verdict
from gfcr.core.trajectory import Signals
from gfcr.envs.math.answers.equivalence import is_equivalent
from gfcr.envs.math.answers.extract import extract_boxed


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
    return score >= 1.0


def answer_signals(answer: str | None, correct: bool) -> Signals:
    """The math signals for an extracted answer (None: no final `\\boxed{}` answer) and its verdict.

    >>> answer_signals(None, False)
    {'format_ok': False, 'answer_extracted': False, 'correct': False}
    """
    found = answer is not None
    return {"format_ok": found, "answer_extracted": found, "correct": correct}


class MathVerifier:
    """Reward 1.0 for a correct final `\\boxed{}` answer, else 0.0 (implements `gfcr.filter.Verifier`)."""

    def verify(self, task: Task, trajectory: Trajectory) -> Verdict:
        return self.check(task, trajectory.steps[-1].action if trajectory.steps else "")

    def check(self, task: Task, text: str) -> Verdict:
        """The verdict on one response text."""
        answer = extract_boxed(text)
        correct = answer is not None and check_answer(task, answer)
        return Verdict(1.0 if correct else 0.0, correct, answer_signals(answer, correct))
