"""The docs' "Add your own environment" example runs as written and meets the env contract."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import gfcr
from gfcr.agents import OraclePolicy
from gfcr.agents.runner.rollout import rollout

DOC = Path(__file__).parents[1] / "docs" / "add-your-own-environment.md"


def example_code() -> str:
    return re.search(r"```python\n(.*?)```", DOC.read_text(), re.DOTALL).group(1)


@pytest.fixture
def forget_reverse_env():
    """Unregister the example's gfcr/Reverse-v0 afterwards: re-registering an id is a no-op, so the
    docs test (tests/test_docs.py) would otherwise get this test's class instead of its own."""
    yield
    gym.registry.pop("gfcr/Reverse-v0", None)
    gfcr.registry._registered.discard("gfcr/Reverse-v0")


@pytest.mark.usefixtures("forget_reverse_env")
def test_the_example_is_about_thirty_lines_and_runs():
    namespace: dict = {}
    exec(compile(example_code(), str(DOC), "exec"), namespace)  # its own asserts check the episode
    body = example_code().split("gfcr.register_env")[0]
    assert len([line for line in body.splitlines() if line.strip()]) <= 40
    assert "gfcr/Reverse-v0" in gfcr.list_envs()
    env = gym.make("gfcr/Reverse-v0")
    check_env(env.unwrapped)
    rewards = [rollout(env, OraclePolicy(), env_id="gfcr/Reverse-v0", task_id=t).total_reward
               for t in env.unwrapped.tasks.ids()]  # fmt: skip
    assert rewards == [1.0, 1.0, 1.0]


def test_entry_point_plugins_are_registered_on_import(tmp_path, installed_distribution):
    """A real installed distribution with a `gfcr.envs` entry point, seen by `import gfcr`."""
    installed_distribution(
        "acme-envs",
        "[gfcr.envs]\nacme/Reverse-v0 = acme_envs.reverse:ReverseEnv\nacme/Broken-v0 = no_such_module:Env\n",
        {"acme_envs/__init__.py": "", "acme_envs/reverse.py": example_code().split("gfcr.register_env")[0]},
    )
    script = textwrap.dedent(f"""
        import sys; sys.path.insert(0, {str(tmp_path)!r})
        import gymnasium as gym, gfcr
        assert "acme/Reverse-v0" in gfcr.list_envs(), gfcr.list_envs()
        env = gym.make("acme/Reverse-v0")
        env.reset(options={{"task_id": "reverse/verifier"}})
        print(env.step("reifirev")[1])
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "1.0"
