"""The math family: `gfcr/Math-v0`, its data sources, answer extraction and checking."""

from gfcr.envs.math.answers.equivalence import is_equivalent
from gfcr.envs.math.answers.extract import extract_boxed
from gfcr.envs.math.env import MathEnv
from gfcr.envs.math.verifier import MathVerifier, check_answer

__all__ = ["MathEnv", "MathVerifier", "check_answer", "extract_boxed", "is_equivalent"]
