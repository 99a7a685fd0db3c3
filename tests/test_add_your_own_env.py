"""The docs' "Add your own environment" example runs as written and meets the env contract."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import gymnasium as gym
from gymnasium.utils.env_checker import check_env

import gfcr
from gfcr.agents import OraclePolicy
from gfcr.agents.runner.rollout import rollout

DOC = Path(__file__).parents[1] / "docs" / "add-your-own-environment.md"


def example_code() -> str:
    return re.search(r"```python\n(.*?)```", DOC.read_text(), re.DOTALL).group(1)


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


def test_entry_point_plugins_are_registered_on_import(tmp_path):
    """A real installed distribution with a `gfcr.envs` entry point, seen by `import gfcr`."""
    package = tmp_path / "acme_envs"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "reverse.py").write_text(example_code().split("gfcr.register_env")[0])
    dist_info = tmp_path / "acme_envs-1.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-envs\nVersion: 1.0\n")
    (dist_info / "entry_points.txt").write_text(
        '[gfcr.envs]\nacme/Reverse-v0 = acme_envs.reverse:ReverseEnv\nacme/Broken-v0 = no_such_module:Env\n'
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
