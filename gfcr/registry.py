"""Env registration: gfcr's own envs, third-party plugins, and `list_envs()`; the policy factory.

gfcr registers its envs with Gymnasium under the `gfcr/` namespace, by import path only, so
`import gfcr` stays fast and loads no dataset. Third-party packages add envs through the
entry-point group `gfcr.envs`: the entry point's name is the env id and its value the env class,

    [project.entry-points."gfcr.envs"]
    "acme/Sudoku-v0" = "acme_envs.sudoku:SudokuEnv"

and Gymnasium's own `gymnasium.register` keeps working for ids in the `gfcr/` namespace. The
class is imported only when the env is made. A plugin whose env needs registration keywords
(default `kwargs`, `max_episode_steps` …: any keyword of `gymnasium.register`) names a mapping of
them in the group `gfcr.env_registrations` instead; that mapping is loaded at `import gfcr`, so
keep it in a light module:

    [project.entry-points."gfcr.env_registrations"]
    "acme/Sudoku-Easy-v0" = "acme_envs.registrations:SUDOKU_EASY"

    # acme_envs/registrations.py
    SUDOKU_EASY = {"entry_point": "acme_envs.sudoku:SudokuEnv", "kwargs": {"level": "easy"},
                   "max_episode_steps": 20}

The registry also holds the policy factory: what turns a policy spec ("hf:PATH" …) into a
policy for components below the agents layer that take a spec (an LLM judge, an LLM user).
The agents layer builds policies, so `gfcr.agents` registers its `make_policy` here when it is
imported (`register_policy_factory`); the core names nothing above it.
"""

from __future__ import annotations

import difflib
import importlib
import logging
import sys
from collections.abc import Callable, Iterable
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import gymnasium as gym

from gfcr.core.policy import Policy
from gfcr.errors import ConfigError

logger = logging.getLogger(__name__)

BUILTIN_ENVS: dict[str, str] = {
    "gfcr/Math-v0": "gfcr.envs.math.env:MathEnv",
    "gfcr/Code-v0": "gfcr.envs.code.env:CodeEnv",
    "gfcr/CodeInteractive-v0": "gfcr.envs.code.interactive:CodeInteractiveEnv",
    "gfcr/SQL-v0": "gfcr.envs.sql.env:SQLEnv",
    "gfcr/Dialogue-v0": "gfcr.envs.dialogue.env:DialogueEnv",
    "gfcr/Browser-v0": "gfcr.envs.browser.env:BrowserEnv",
    "gfcr/ToolUse-v0": "gfcr.envs.tooluse.env:ToolUseEnv",
    "gfcr/SWE-v0": "gfcr.envs.swe.env:SWEEnv",
    "gfcr/Remote-v0": "gfcr.envs.remote.env:RemoteEnv",
    "gfcr/Vision-v0": "gfcr.envs.vision.env:VisionEnv",
    "gfcr/Shop-v0": "gfcr.envs.shop.env:ShopEnv",
}
_registered: set[str] = set()


def register_env(env_id: str, entry_point: str | Any, **kwargs: Any) -> None:
    """Register an env with Gymnasium and list it in `list_envs()` (re-registering is a no-op).

    >>> register_env("acme/CartPole-v0", "gymnasium.envs.classic_control.cartpole:CartPoleEnv")
    >>> "acme/CartPole-v0" in list_envs()
    True
    """
    if env_id not in gym.registry:
        gym.register(env_id, entry_point=entry_point, **{"disable_env_checker": False, **kwargs})
    _registered.add(env_id)


def import_modules(modules: Iterable[str]) -> None:
    """Import `modules`, those that register envs (`--import`, a suite file's or trainer config's
    `imports`), finding them in the current folder too, as `python -m` does.

    The runner's env workers in other processes need nothing more: an env's configuration carries
    its entry point (`gfcr.agents.env_config`), whose class a worker imports from the same module.

    >>> import_modules(["gymnasium.envs.classic_control"])
    >>> import_modules(["no_such_envs"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gfcr.errors.ConfigError: cannot import no_such_envs (No module named 'no_such_envs'): ...
    """
    here = str(Path.cwd())
    if here not in sys.path:
        sys.path.insert(0, here)
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as e:
            raise ConfigError(
                f"cannot import {module} ({e}): give a module installed or in the current folder that "
                "registers the env, e.g. --import my_envs for ./my_envs.py"
            ) from e


def register_builtin_envs() -> None:
    """Register gfcr's envs and every installed plugin's (a broken plugin is logged, not fatal)."""
    for env_id, entry_point in BUILTIN_ENVS.items():
        register_env(env_id, entry_point)
    for plugin in entry_points(group="gfcr.envs"):
        try:
            register_env(plugin.name, plugin.value)
        except Exception as e:  # one bad plugin must not break `import gfcr`
            logger.warning("skipping env plugin %s = %s: %s", plugin.name, plugin.value, e)
    for plugin in entry_points(group="gfcr.env_registrations"):
        try:
            register_env(plugin.name, **registration_keywords(plugin.load(), plugin.value))
        except Exception as e:
            logger.warning("skipping env plugin %s = %s: %s", plugin.name, plugin.value, e)


REGISTRATION_KEYS = ("entry_point", "kwargs", "max_episode_steps", "reward_threshold", "nondeterministic",
                     "order_enforce", "disable_env_checker", "additional_wrappers")  # fmt: skip


def registration_keywords(registration: Any, where: str = "registration") -> dict[str, Any]:
    """The `gymnasium.register` keywords of a `gfcr.env_registrations` entry point's mapping, checked.

    >>> registration_keywords({"entry_point": "m:Env", "max_episode_step": 5}, "acme")
    Traceback (most recent call last):
    ...
    gfcr.errors.ConfigError: acme: unknown key 'max_episode_step'; did you mean 'max_episode_steps'? ...
    """
    if not isinstance(registration, dict) or "entry_point" not in registration:
        raise ConfigError(
            f"{where}: expected a dict of gymnasium.register keywords with an 'entry_point', "
            f"got {registration!r}"
        )
    for key in registration:
        if key not in REGISTRATION_KEYS:
            close = difflib.get_close_matches(key, REGISTRATION_KEYS, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ConfigError(f"{where}: unknown key {key!r}{hint} Known: {', '.join(REGISTRATION_KEYS)}")
    return dict(registration)


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


_policy_factory: Callable[[str], Policy] | None = None


def register_policy_factory(factory: Callable[[str], Policy]) -> None:
    """Make `factory` build the policies that specs name (`gfcr.agents` registers its `make_policy`)."""
    global _policy_factory
    _policy_factory = factory


def make_policy(spec: str) -> Policy:
    """The policy a spec names (`scripted:oracle`, `hf:PATH`, `openai:MODEL@URL` …), built by the
    registered factory: `gfcr.agents.make_policy` once `gfcr.agents` is imported."""
    if _policy_factory is None:
        raise ConfigError(
            f"policy spec {spec!r} needs the agents layer, which builds policies: `import gfcr.agents` "
            "first (it registers gfcr.agents.make_policy), or pass a policy object instead of a spec"
        )
    return _policy_factory(spec)
