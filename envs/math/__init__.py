"""The math family: `gfcr/Math-v0`, its data sources, answer extraction and checking."""

from gfcr.envs.math.env import MathEnv, check_answer
from gfcr.envs.math.equivalence import is_equivalent
from gfcr.envs.math.extract import extract_boxed

__all__ = ["MathEnv", "check_answer", "extract_boxed", "is_equivalent"]
