"""Math proposals: a problem and a Python program that computes its answer, run in the sandbox.

The answer is what the program prints (its last line), never what the proposer claims: a claimed
answer is only checked against it (`Verified.claimed_agrees`), and the env's answer checker grades
the solver against the printed one. The program runs twice: `Verified.rerun_agrees` says whether
it printed the same answer both times (a program that reads the clock or draws unseeded random
numbers does not).
"""

from __future__ import annotations

from collections.abc import Sequence

from gfcr.core import Task
from gfcr.envs.math.env import MathEnv
from gfcr.envs.math.verifier import check_answer
from gfcr.envs.proposals.base import Verified, text_gold
from gfcr.proposals import Rejected, blind_task, parse_sections
from gfcr.sandboxes import Limits, shared_sandbox

FORMAT = """Write it in tagged sections:
<problem>the problem statement, with a single final answer</problem>
<program>a Python program that computes the answer and prints it (only the answer, on the last line)</program>
<answer>the answer you expect the program to print</answer>"""
LIMITS = Limits(wall_s=10.0, cpu_s=10.0, memory_mb=512, max_output_bytes=100_000)
MAX_ANSWER_CHARS = 100  # an answer longer than this is a dump, not a final answer


class MathProposals:
    """The math family's proposals (`gfcr.envs.proposals.ProposalFamily`)."""

    format = FORMAT

    def __init__(self, backend: str = "auto") -> None:
        self.backend = backend

    def describe(self, task: Task, env: MathEnv | None) -> str:
        return task.prompt

    def verify(self, text: str, env: MathEnv | None, task_id: str, parents: Sequence[Task]) -> Verified:
        sections = parse_sections(text, ["problem", "program"], ["answer"])
        answer = self.answer(sections["program"])
        if answer is None:
            raise Rejected("invalid", "the answer program printed nothing; print the answer on the last line")
        if len(answer) > MAX_ANSWER_CHARS:
            raise Rejected(
                "invalid", f"the printed answer is {len(answer)} characters; print only the final answer"
            )
        task = Task(task_id, sections["problem"], answer, "generated")
        claimed = sections.get("answer")
        rerun = self.answer(sections["program"]) == answer
        return Verified(task, check_answer(task, claimed) if claimed is not None else None, rerun)

    def withheld(self, task: Task) -> Task:
        """The problem withheld: the env shows the blind prompt and its answer format, nothing more.

        >>> MATH.withheld(Task("gen/1", "Is 91 prime? Answer yes or no.", "no")).prompt
        'Give your answer.'
        """
        return blind_task(task)

    def answer(self, program: str) -> str | None:
        """The last non-empty line `program` prints in the sandbox (None: it prints nothing);
        `Rejected` when it fails."""
        result = shared_sandbox(self.backend).run(program, limits=LIMITS)
        if not result.ok:
            raise Rejected(
                "invalid", f"the answer program failed ({result.status}): {result.stderr.strip()[-300:]}"
            )
        lines = [line.strip() for line in result.stdout.splitlines() if line.strip()]
        return lines[-1] if lines else None

    def gold_from(self, data: object) -> str:
        """A math task's gold is its answer, a string.

        >>> MATH.gold_from("42")
        '42'
        """
        return text_gold(data, "a math task's answer")


MATH = MathProposals()
