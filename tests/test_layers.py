"""The layer order of README.md's "Layout", enforced: each layer reaches only the layers below it.

Three kinds of reach count, anywhere in the library — at module level, inside functions, under
`TYPE_CHECKING`:
- every `import` and `from … import` of a gfcr module;
- loading by name: a gfcr module path, or a `module:attribute` entry point, written as a string
  (`importlib.import_module("gfcr.agents")`, `"gfcr.agents.policies:make_policy"`), which some
  code resolves at run time;
- the code of `>>>` examples in docstrings, which tests/test_doctests.py runs.
Layers, bottom up: the core (contracts, errors, storage, the registries), sandboxes, the GFCR
modules, envs, agents, trainers, apps. Modules of one layer may reach each other. One edge is
allowed by name only (`BY_NAME_ALLOWED`): the core's env registry binds the bundled env ids to
their classes, as the contract "`import gfcr` registers every bundled env" asks, and
Gymnasium imports a class only when its env is made.
"""

from __future__ import annotations

import ast
import doctest
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# pyproject's package-dir mapping: import name -> folder.
FOLDERS = {"gfcr": "gfcr", "gfcr.envs": "envs", "gfcr.agents": "agents", "gfcr.trainers": "trainers",
           "gfcr.sandboxes": "sandboxes"}  # fmt: skip
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    (
        "core",
        ("gfcr", "gfcr.core", "gfcr.errors", "gfcr.storage", "gfcr.registry", "gfcr.suites", "gfcr.version"),
    ),
    ("sandboxes", ("gfcr.sandboxes",)),
    (
        "GFCR modules",
        ("gfcr.generate", "gfcr.filter", "gfcr.control", "gfcr.replay", "gfcr.skills", "gfcr.workloads", "gfcr.proposals"),
    ),
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


# (module, layer it may name) for the by-name edges the contract asks for; see the module docstring.
BY_NAME_ALLOWED = {("gfcr.registry", "gfcr.envs")}
MODULE_PATH = re.compile(r"gfcr(?:\.\w+)+(?::[\w.]+)?")  # gfcr.x.y or gfcr.x.y:attribute


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


def names_loaded(source: str) -> list[tuple[int, str]]:
    """(line, module) for every string that names a gfcr module or entry point, docstrings and
    entry-point group names (`entry_points(group="gfcr.envs")`) aside."""
    tree = ast.parse(source)
    skipped = {id(node.body[0].value) for node, _ in docstrings(tree)}
    skipped |= {
        id(k.value) for n in ast.walk(tree) if isinstance(n, ast.Call) for k in n.keywords if k.arg == "group"
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skipped:
            if MODULE_PATH.fullmatch(node.value):
                found.append((node.lineno, node.value.partition(":")[0]))
    return found


def docstrings(tree: ast.AST) -> list[tuple[ast.AST, str]]:
    """(node, docstring) of the module, each class and each function of `tree`."""
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return [
        (node, doc) for node in ast.walk(tree) if isinstance(node, kinds) and (doc := ast.get_docstring(node))
    ]


def doctest_code(source: str) -> list[tuple[int, str]]:
    """(line of the docstring, code of its `>>>` examples) for each docstring of `source` with examples."""
    parser = doctest.DocTestParser()
    found = []
    for node, doc in docstrings(ast.parse(source)):
        code = "\n".join(example.source for example in parser.get_examples(doc))
        if code:
            found.append((node.body[0].lineno, code))  # type: ignore[attr-defined]
    return found


def reaches(source: str) -> list[tuple[int, str, str]]:
    """(line, how, module) for every gfcr module `source` reaches: imports, names, doctest code."""
    found = [(line, "imports", target) for line, target in gfcr_imports(source)]
    found += [(line, "loads by name", target) for line, target in names_loaded(source)]
    for line, code in doctest_code(source):
        found += [(line, "imports in a doctest", t) for _, t in gfcr_imports(code)]
        found += [(line, "loads by name in a doctest", t) for _, t in names_loaded(code)]
    return found


def known_layer(module: str) -> int | None:
    try:
        return layer_of(module)
    except LookupError:  # a string that only looks like a module path (no such layer)
        return None


def upward_imports(module: str, source: str) -> list[str]:
    """Each reach of `source` (the code of `module`) into a layer above the module's own."""
    own = layer_of(module)
    found = []
    for line, how, target in reaches(source):
        layer = known_layer(target)
        allowed = how == "loads by name" and any(
            module == m and (target == t or target.startswith(t + ".")) for m, t in BY_NAME_ALLOWED
        )
        if layer is not None and layer > own and not allowed:
            found.append(f"{module}:{line} {how} {target} ({LAYERS[layer][0]} is above {LAYERS[own][0]})")
    return found


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
        (
            "gfcr.envs.math.env",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from gfcr.trainers import x\n",
        ),
        ("gfcr.trainers.trainer", "from gfcr.apps.cli import app\n"),
        ("gfcr.sandboxes.local", "from gfcr.filter import Rubric\n"),
        ("gfcr.core.chat", 'import importlib\nimportlib.import_module("gfcr.agents.policies")\n'),  # by name
        ("gfcr.registry", 'FACTORY = "gfcr.agents.policies:make_policy"\n'),  # an entry point, resolved later
        (
            "gfcr.filter.judge",
            'def f():\n    """Judge.\n\n    >>> from gfcr.agents import make_policy\n    """\n',
        ),
        (
            "gfcr.control.dynamic",
            '"""Doc.\n\n>>> import_modules(["gfcr.envs.math"])\n"""\n',
        ),  # by name, in a doctest
        ("gfcr.suites", 'SMOKE = "gfcr.envs.suites:smoke"\n'),  # only the registry may name envs
    ],
)
def test_the_check_catches_an_upward_import(module, source):
    assert upward_imports(module, source), f"{source!r} in {module} should be an upward import"


def test_downward_and_same_layer_imports_pass():
    assert not upward_imports(
        "gfcr.control.controller", "from gfcr.generate.groups import x\nimport gfcr.core\n"
    )
    assert not upward_imports(
        "gfcr.apps.cli", "from gfcr.trainers import main\nfrom gfcr.agents import Runner\n"
    )
    prose = '"""Built by `gfcr.agents.make_policy`, which registers with gfcr.registry."""\n'
    group = 'entry_points(group="gfcr.envs")\n'  # a plugin group's name, not a module to load
    assert not upward_imports("gfcr.core.chat", prose + group)
    assert not upward_imports("gfcr.registry", 'BUILTIN = {"gfcr/Math-v0": "gfcr.envs.math.env:MathEnv"}\n')


def test_the_core_resolves_a_policy_spec_only_through_the_factory_the_agents_layer_registers():
    code = (
        "import sys\nfrom gfcr.core.chat import PolicyChat\nfrom gfcr.errors import ConfigError\n"
        "try:\n    PolicyChat('scripted:random')\nexcept ConfigError as e:\n    print('refused:', e)\n"
        "print('agents loaded:', 'gfcr.agents' in sys.modules)\n"
        "import gfcr.agents\nprint('built:', PolicyChat('scripted:random').policy.name)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert (
        "refused: policy spec 'scripted:random' needs the agents layer" in out and "import gfcr.agents" in out
    )
    assert "agents loaded: False" in out and "built: scripted:random" in out


def test_every_library_module_has_a_layer():
    for path in library_files():
        layer_of(module_name(path))


def test_importing_the_core_loads_only_the_core():
    code = "import gfcr.core, sys; print(*sorted(m for m in sys.modules if m.split('.')[0] == 'gfcr'))"
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert "gfcr.core.policy" in loaded
    assert [m for m in loaded if layer_of(m) > 0] == []


def test_importing_a_gfcr_module_does_not_load_the_runner():
    code = "import gfcr.control, gfcr.filter, sys; print(*sorted(m for m in sys.modules if m.startswith('gfcr.')))"
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert [m for m in loaded if layer_of(m) > 2] == []


@pytest.mark.parametrize(
    ("module", "names"),
    [
        ("gfcr", "list_envs register_env GfcrError __version__"),
        (
            "gfcr.core",
            "Task Message ToolCall ToolSpec Action Step Trajectory Policy Request SamplingParams "
            "Completion Controller Decision SignalReader ReplaySink Verifier Verdict EpisodeSpec",
        ),
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
