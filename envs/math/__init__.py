"""The math family: `gfcr/Math-v0`, its data sources, answer extraction and checking."""

from gfcr.envs.math.answers.equivalence import is_equivalent
from gfcr.envs.math.answers.extract import extract_boxed
from gfcr.envs.math.env import MathEnv
from gfcr.envs.math.verifier import MathVerifier, check_answer, final_answer
from gfcr.filter.semantic import AnswerFamily, register_answers

# Semantic clusters of math answers (gfcr.filter.semantic): the env's own answer and equivalence.
register_answers("gfcr/Math-", AnswerFamily(final_answer, is_equivalent))

__all__ = ["MathEnv", "MathVerifier", "check_answer", "extract_boxed", "final_answer", "is_equivalent"]
