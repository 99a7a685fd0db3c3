"""`gfcr new-env NAME`: write a plugin package skeleton that passes `gfcr check` as generated.

The package holds a pyproject with the `gfcr.envs` entry point, an env (`respond` plus the
lifecycle hook `begin_episode`) with a tool that reads the env's state, an oracle that is called
every turn, tasks built without closures (so the env pickles), and a test that runs gfcr's
contract checks on it.
"""

from __future__ import annotations

import keyword
import re
from pathlib import Path
from string import Template

from gfcr.errors import ConfigError

PYPROJECT = """[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "$dist"
version = "0.1.0"
description = "A gfcr environment: $env_id"
requires-python = ">=3.10"
dependencies = ["gfcr"]

[project.optional-dependencies]
dev = ["pytest>=8"]

# `import gfcr` registers the env: the entry point's name is the env id, its value the env class.
[project.entry-points."gfcr.envs"]
"$env_id" = "$package.env:$cls"

[tool.setuptools]
packages = ["$package"]
"""

INIT = '''"""$env_id: a gfcr environment (registered through the `gfcr.envs` entry point)."""

from $package.env import $cls

__all__ = ["$cls"]
'''

ENV = '''"""$env_id: count a letter in a hidden word; the `reveal` tool shows the word.

A two-turn episode: the agent calls `reveal` (a tool that reads the env's state), then answers
with the count. Reward 1.0 for the right count after a reveal, else 0.0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from gfcr.core import Action, Message, Task, ToolSpec
from gfcr.envs.base import Outcome, TextEnv
from gfcr.envs.tasks import TaskSource

WORDS = ("banana", "bookkeeper", "mississippi", "rollout", "verifier", "gymnasium")
PROMPT = "How many times does the letter '{letter}' occur in the hidden word? Call reveal, then answer."


def make_tasks(words: Sequence[str] = WORDS) -> TaskSource:
    """One task per word; built from plain data (no closure), so an env holding it pickles."""
    tasks = []
    for word in words:
        letter = max(set(word), key=lambda c: (word.count(c), c))  # a letter that occurs most
        prompt = PROMPT.format(letter=letter)
        tasks.append(Task(f"$name/{word}", prompt, str(word.count(letter)), metadata={"word": word}))
    return TaskSource.from_tasks("$name", tasks)


class $cls(TextEnv):
    """Count a letter in a hidden word, revealed by the `reveal` tool."""

    # Every signal key the env reports, with its value for an unusable action: `gfcr check`
    # fails on a key returned but not declared here.
    signal_defaults: ClassVar[dict[str, float | bool]] = {
        "format_ok": False,
        "revealed": False,
        "correct": False,
    }

    def __init__(
        self, words: Sequence[str] = WORDS, max_turns: int = 3, render_mode: str | None = None
    ) -> None:
        # A bound method is a tool that reaches the env's state (the current task).
        no_arguments = {"type": "object", "properties": {}}
        reveal = ToolSpec("reveal", "Show the hidden word.", no_arguments, self.reveal)
        super().__init__(make_tasks(words), tools=[reveal], max_turns=max_turns, render_mode=render_mode)
        self.revealed = False

    # The episode's lifecycle hooks: `reset` calls begin_episode(task) before it renders the prompt,
    # and end_episode() runs once when the episode ends (the step that ends it, the next reset, or
    # close). Open an episode's own resources (a sandbox session, a database, a page) in the first,
    # release them in the second; this env's episode holds a flag only. reset and step stay the base's.
    def begin_episode(self, task: Task) -> None:
        self.revealed = False

    def reveal(self) -> str:
        assert self.task is not None  # tools run only inside step(), after reset()
        self.revealed = True
        return self.task.metadata["word"]

    def respond(self, action: Action) -> Outcome:
        if action.tool_calls:
            outcome = self.run_tools(action)
            signals = {"format_ok": True, "revealed": self.revealed}
            return Outcome(outcome.observation, signals=signals, messages=outcome.messages)
        assert self.task is not None
        correct = self.revealed and action.text.strip() == self.task.gold
        signals = {"format_ok": True, "revealed": self.revealed, "correct": correct}
        return Outcome("Correct." if correct else "Wrong.", float(correct), terminated=True, signals=signals)

    @classmethod
    def oracle(cls, task: Task, messages: Sequence[Message]) -> str:
        """Called every turn with the conversation so far: reveal first, then answer."""
        if not any(m.role == "tool" and m.name == "reveal" for m in messages):
            return '<tool_call>{"name": "reveal", "arguments": {}}</tool_call>'
        return str(task.gold)
'''

TEST = '''"""$env_id meets the gfcr env contract (the checks `gfcr check $env_id` runs)."""

from __future__ import annotations

import gymnasium as gym

import gfcr  # noqa: F401  # registers the env through the entry point
from gfcr.testing import check_contract


def test_the_env_meets_the_contract():
    report = check_contract("$env_id")
    assert report.passed, report.summary()


def test_reveal_then_answer_solves_a_task():
    env = gym.make("$env_id")
    env.reset(options={"task_id": "$name/banana"})
    obs, *_ = env.step('<tool_call>{"name": "reveal", "arguments": {}}</tool_call>')
    assert obs == "banana"
    assert env.step("3")[1] == 1.0


def test_each_episode_must_reveal_the_word_again():
    env = gym.make("$env_id")
    env.reset(options={"task_id": "$name/banana"})
    env.step('<tool_call>{"name": "reveal", "arguments": {}}</tool_call>')
    env.reset(options={"task_id": "$name/banana"})  # begin_episode: nothing revealed yet
    assert env.step("3")[1] == 0.0
'''

README = """# $dist

A [gfcr](https://pypi.org/project/gfcr/) environment, `$env_id`.

    pip install -e .
    gfcr check $env_id                                 # the env contract, as gfcr checks its own
    gfcr run $env_id --agent scripted:oracle -n 6      # scores 1.0
    pytest
"""


def package_name(name: str) -> str:
    """The Python package for NAME: lower case, `-` and spaces as `_`; a ConfigError if not an identifier.

    >>> package_name("Letter-Count")
    'letter_count'
    """
    package = re.sub(r"[-\s]+", "_", name.strip()).lower()
    if not package.isidentifier() or keyword.iskeyword(package):
        raise ConfigError(
            f"env name {name!r} must make a Python package name (letters, digits, _ or -), e.g. letter-count"
        )
    return package


def write_env_package(name: str, directory: Path) -> tuple[Path, str]:
    """Write the plugin package for env NAME under `directory / NAME`; return it and its env id.

    >>> import tempfile
    >>> root, env_id = write_env_package("letter-count", Path(tempfile.mkdtemp()))
    >>> env_id, sorted(p.name for p in root.rglob("*") if p.is_file())
    ('letter_count/LetterCount-v0', ['README.md', '__init__.py', 'env.py', 'pyproject.toml', 'test_env.py'])
    """
    package = package_name(name)
    cls = "".join(part.capitalize() for part in package.split("_") if part) + "Env"
    values = {"name": package, "package": package, "dist": package.replace("_", "-"), "cls": cls,
              "env_id": f"{package}/{cls.removesuffix('Env')}-v0"}  # fmt: skip
    root = directory / package.replace("_", "-")
    if root.exists():
        raise ConfigError(f"{root} exists; pick another name or --dir, or remove it")
    files = {
        "pyproject.toml": PYPROJECT,
        "README.md": README,
        f"{package}/__init__.py": INIT,
        f"{package}/env.py": ENV,
        "tests/test_env.py": TEST,
    }
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(Template(text).substitute(values))
    return root, values["env_id"]
