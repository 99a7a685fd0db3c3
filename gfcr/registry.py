"""Env registration: gfcr's own envs, third-party plugins, and `list_envs()`.

gfcr registers its envs with Gymnasium under the `gfcr/` namespace, by import path only, so
`import gfcr` stays fast and loads no dataset. Third-party packages add envs through the
entry-point group `gfcr.envs`: the entry point's name is the env id and its value the env class,

    [project.entry-points."gfcr.envs"]
    "acme/Sudoku-v0" = "acme_envs.sudoku:SudokuEnv"

and Gymnasium's own `gymnasium.register` keeps working for ids in the `gfcr/` namespace.
"""

from __future__ import annotations

import importlib
import logging
from importlib.metadata import entry_points
from typing import Any

import gymnasium as gym

logger = logging.getLogger(__name__)

BUILTIN_ENVS: dict[str, str] = {
    "gfcr/Math-v0": "gfcr.envs.math.env:MathEnv",
    "gfcr/Code-v0": "gfcr.envs.code.env:CodeEnv",
    "gfcr/CodeInteractive-v0": "gfcr.envs.code.interactive:CodeInteractiveEnv",
    "gfcr/SQL-v0": "gfcr.envs.sql.env:SQLEnv",
    "gfcr/Dialogue-v0": "gfcr.envs.dialogue.env:DialogueEnv",
    "gfcr/Browser-v0": "gfcr.envs.browser.env:BrowserEnv",
    "gfcr/ToolUse-v0": "gfcr.envs.tooluse.env:ToolUseEnv",
    "gfcr/Remote-v0": "gfcr.envs.remote.env:RemoteEnv",
}
_registered: set[str] = set()


def register_env(env_id: str, entry_point: str | Any, **kwargs: Any) -> None:
    """Register an env with Gymnasium and list it in `list_envs()` (re-registering is a no-op).

    >>> register_env("gfcr/Doc-v0", "gfcr.envs.math.env:MathEnv", kwargs={"dataset": "champ"})
    >>> "gfcr/Doc-v0" in list_envs()
    True
    """
    if env_id not in gym.registry:
        gym.register(env_id, entry_point=entry_point, disable_env_checker=False, **kwargs)
    _registered.add(env_id)


def register_builtin_envs() -> None:
    """Register gfcr's envs and every installed plugin's (a broken plugin is logged, not fatal)."""
    for env_id, entry_point in BUILTIN_ENVS.items():
        register_env(env_id, entry_point)
    for plugin in entry_points(group="gfcr.envs"):
        try:
            register_env(plugin.name, plugin.value)
        except Exception as e:  # one bad plugin must not break `import gfcr`
            logger.warning("skipping env plugin %s = %s: %s", plugin.name, plugin.value, e)


def list_envs() -> list[str]:
    """Every env id gfcr knows: its own, plugins', and any Gymnasium id in the `gfcr/` namespace."""
    in_namespace = {env_id for env_id, spec in gym.registry.items() if spec.namespace == "gfcr"}
    return sorted(_registered | in_namespace)


def env_class(env_id: str) -> Any:
    """The class behind a registered env id (for class-level hooks such as `oracle`)."""
    from gymnasium.envs.registration import load_env_creator

    from gfcr.errors import UnknownNameError

    if env_id not in gym.registry:
        raise UnknownNameError("env id", env_id, list_envs())
    entry_point = gym.spec(env_id).entry_point
    return load_env_creator(entry_point) if isinstance(entry_point, str) else entry_point


# Policy specs are resolved by name, as env ids are: a judge or an LLM user given "hf:PATH" builds
# the policy through the agents layer without importing upward.
POLICY_FACTORY = "gfcr.agents.policies:make_policy"


def make_policy(spec: str) -> Any:
    """The policy a spec names (`scripted:oracle`, `hf:PATH`, `openai:MODEL@URL` …): see
    `gfcr.agents.make_policy`, which this loads by name on first use.

    >>> make_policy("scripted:oracle").name
    'scripted:oracle'
    """
    module, _, name = POLICY_FACTORY.partition(":")
    return getattr(importlib.import_module(module), name)(spec)
