"""The vision family: `gfcr/Vision-v0`, visual questions with exact answers (generated, or your images)."""

from gfcr.envs.math.answers.equivalence import is_equivalent
from gfcr.envs.vision.env import VisionEnv
from gfcr.envs.vision.kinds import KINDS
from gfcr.envs.vision.tasks import file_tasks, generated_task, generated_tasks
from gfcr.envs.vision.verifier import VisionVerifier, check_answer, final_answer
from gfcr.filter.semantic import AnswerFamily, register_answers

# Semantic clusters of answers (gfcr.filter.semantic): the boxed answers, compared as math compares.
register_answers("gfcr/Vision-", AnswerFamily(final_answer, is_equivalent))

__all__ = [
    "KINDS",
    "VisionEnv",
    "VisionVerifier",
    "check_answer",
    "final_answer",
    "file_tasks",
    "generated_task",
    "generated_tasks",
]
