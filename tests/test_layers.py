"""The layer order of shared/DESIGN.md, enforced: each layer imports only the layers below it.

Every `import` and `from … import` of a gfcr module counts — at module level, inside functions,
under `TYPE_CHECKING` — so an upward import anywhere in the library fails here. Layers, bottom up:
the core (contracts, errors, storage, the registries), sandboxes, the GFCR modules, envs, agents,
trainers, apps. Modules of one layer may import each other.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# pyproject's package-dir mapping: import name -> folder.
FOLDERS = {"gfcr": "gfcr", "gfcr.envs": "envs", "gfcr.agents": "agents", "gfcr.trainers": "trainers",
           "gfcr.sandboxes": "sandboxes"}  # fmt: skip
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("core", ("gfcr", "gfcr.core", "gfcr.errors", "gfcr.storage", "gfcr.registry", "gfcr.suites", "gfcr.version")),
    ("sandboxes", ("gfcr.sandboxes",)),
    ("GFCR modules", ("gfcr.generate", "gfcr.filter", "gfcr.control", "gfcr.replay", "gfcr.skills")),
    ("envs", ("gfcr.envs",)),
    ("agents", ("gfcr.agents",)),
    ("trainers", ("gfcr.trainers",)),
    ("apps", ("gfcr.apps", "gfcr.testing", "gfcr.remote", "gfcr.integrations", "gfcr.__main__")),
]


def layer_of(module: str) -> int:
    """The layer of a module: that of the longest listed name it is or lies under (`gfcr` only exactly)."""
    best, best_len = None, -1
    for index, (_, names) in enumerate(LAYERS):
        for name in names:
            matches = module == name or (name != "gfcr" and module.startswith(name + "."))
            if matches and len(name) > best_len:
                best, best_len = index, len(name)
    if best is None:
        raise LookupError(f"{module} is in no layer; add it to LAYERS in tests/test_layers.py")
    return best


def module_name(path: Path) -> str:
    for package, folder in sorted(FOLDERS.items(), key=lambda item: -len(item[0])):
        try:
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
        except ValueError:
            continue
        if parts and parts[-1] == "__init__":
            parts.pop()
        return ".".join([package, *parts])
    raise LookupError(path)


def gfcr_imports(source: str) -> list[tuple[int, str]]:
    """(line, module) for every absolute import of a gfcr module, wherever it stands."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names if alias.name.split(".")[0] == "gfcr"]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] == "gfcr":
                found.append((node.lineno, node.module))
    return found


def upward_imports(module: str, source: str) -> list[str]:
    """Each import of `source` (the code of `module`) that reaches a layer above the module's own."""
    own = layer_of(module)
    return [
        f"{module}:{line} imports {target} ({LAYERS[layer_of(target)][0]} is above {LAYERS[own][0]})"
        for line, target in gfcr_imports(source)
        if layer_of(target) > own
    ]


def library_files() -> list[Path]:
    return sorted(path for folder in set(FOLDERS.values()) for path in (ROOT / folder).rglob("*.py"))


def test_no_module_imports_a_layer_above_its_own():
    violations = [v for path in library_files() for v in upward_imports(module_name(path), path.read_text())]
    assert not violations, "upward imports:\n" + "\n".join(violations)


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("gfcr.core.trajectory", "import gfcr.agents\n"),  # top level
        ("gfcr.control.controller", "def f():\n    from gfcr.agents.runner import Runner\n"),  # in a function
        ("gfcr.envs.math.env", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from gfcr.trainers import x\n"),
        ("gfcr.trainers.trainer", "from gfcr.apps.cli import app\n"),
        ("gfcr.sandboxes.local", "from gfcr.filter import Rubric\n"),
    ],
)
def test_the_check_catches_an_upward_import(module, source):
    assert upward_imports(module, source), f"{source!r} in {module} should be an upward import"


def test_downward_and_same_layer_imports_pass():
    assert not upward_imports("gfcr.control.controller", "from gfcr.generate.groups import x\nimport gfcr.core\n")
    assert not upward_imports("gfcr.apps.cli", "from gfcr.trainers import main\nfrom gfcr.agents import Runner\n")


def test_every_library_module_has_a_layer():
    for path in library_files():
        layer_of(module_name(path))


def test_importing_the_core_loads_only_the_core():
    code = "import gfcr.core, sys; print(*sorted(m for m in sys.modules if m.split('.')[0] == 'gfcr'))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert "gfcr.core.policy" in loaded
    assert [m for m in loaded if layer_of(m) > 0] == []


def test_importing_a_gfcr_module_does_not_load_the_runner():
    code = "import gfcr.control, gfcr.filter, sys; print(*sorted(m for m in sys.modules if m.startswith('gfcr.')))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert [m for m in loaded if layer_of(m) > 2] == []


@pytest.mark.parametrize(
    ("module", "names"),
    [
        ("gfcr", "list_envs register_env GfcrError __version__"),
        ("gfcr.core", "Task Message ToolCall ToolSpec Action Step Trajectory Policy Request SamplingParams "
                      "Completion Controller Decision SignalReader ReplaySink Verifier Verdict EpisodeSpec"),
        ("gfcr.agents", "make_policy Runner RunnerConfig Policy Request SamplingParams Completion"),
        ("gfcr.filter", "Verifier Verdict Rubric LLMJudge group_advantages"),
        ("gfcr.control", "RolloutController ControlConfig DynamicSampling"),
        ("gfcr.replay", "ReplayBuffer"),
        ("gfcr.skills", "SkillLibrary"),
        ("gfcr.trainers", "TrainConfig Trainer"),
        ("gfcr.apps.cli", "app"),
    ],
)
def test_the_design_contract_names_import(module, names):
    imported = importlib.import_module(module)
    assert [name for name in names.split() if not hasattr(imported, name)] == []


def test_the_contracts_are_one_class_each():
    import gfcr.agents
    import gfcr.core
    import gfcr.filter

    assert gfcr.agents.Policy is gfcr.core.Policy and gfcr.agents.Controller is gfcr.core.Controller
    assert gfcr.filter.Verdict is gfcr.core.Verdict and gfcr.filter.Verifier is gfcr.core.Verifier


def test_python_dash_m_gfcr_is_the_cli():
    out = subprocess.run([sys.executable, "-m", "gfcr", "--help"], capture_output=True, text=True, check=True)
    for command in ("list", "run", "bench", "train", "serve", "tiny-model"):
        assert command in out.stdout
