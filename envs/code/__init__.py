"""The code family: `gfcr/Code-v0` and `gfcr/CodeInteractive-v0`, their data, extraction and grading."""

from gfcr.envs.code.data import CodeTests, IOCase, load_source
from gfcr.envs.code.env import CodeEnv
from gfcr.envs.code.extract import extract_code
from gfcr.envs.code.grading import GradingReport, grade
from gfcr.envs.code.interactive import CodeInteractiveEnv
from gfcr.envs.code.verifier import CodeVerifier

__all__ = [
    "CodeEnv",
    "CodeInteractiveEnv",
    "CodeTests",
    "CodeVerifier",
    "GradingReport",
    "IOCase",
    "extract_code",
    "grade",
    "load_source",
]
