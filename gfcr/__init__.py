"""gfcr: a Gymnasium-compatible environment suite for agentic LLM rollouts.

`import gfcr` registers every bundled env with Gymnasium under the `gfcr/` namespace:

>>> import gymnasium as gym
>>> import gfcr
>>> "gfcr/Math-v0" in gfcr.list_envs()
True
>>> env = gym.make("gfcr/Math-v0", dataset="mmath", split="AIME2025")
>>> obs, info = env.reset(seed=0)
>>> info["task"].id.startswith("mmath/AIME2025/")
True
"""

from gfcr.errors import ConfigError, DataError, GfcrError, ToolError, UnknownNameError
from gfcr.registry import list_envs, register_builtin_envs, register_env
from gfcr.suites import Suite, SuiteEntry, list_suites, make_suite, register_suite
from gfcr.version import __version__

register_builtin_envs()

__all__ = [
    "ConfigError",
    "DataError",
    "GfcrError",
    "Suite",
    "SuiteEntry",
    "ToolError",
    "UnknownNameError",
    "__version__",
    "list_envs",
    "list_suites",
    "make_suite",
    "register_env",
    "register_suite",
]
