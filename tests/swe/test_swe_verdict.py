"""The SWE verdict under attack: it depends only on the library code at issue.

Each attack is a diff (or a session's doing) that leaves the bug in place and tries to make the
judged tests pass some other way: by editing them under a name that a patch tool reads otherwise,
by loading code into pytest's process through the import system, pytest's plugin autoload or its
configuration, by stretching a test past its time, or by flooding the record. The repository is a
small one in the `src` layout (so the tests import from a `pythonpath` folder, like cachetools),
with a test file at the root (like inflection) and one in `tests/`.
"""

from __future__ import annotations

import base64
import difflib
import json
import shlex
import time

import gymnasium as gym
import pytest

import gfcr  # noqa: F401  (registers the envs)
from gfcr.envs.swe.evaluation import Limits, evaluate, kit_source, plugin_source
from gfcr.envs.swe.projects import Snapshot
from gfcr.sandboxes.factory import shared_sandbox

TEST_CALC = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n"
REPO = {
    "src/calc/__init__.py": "from calc.ops import add\n",
    "src/calc/ops.py": "def add(a, b):\n    return a - b\n",
    "test_calc.py": TEST_CALC,
    "tests/test_more.py": "from calc import add\n\n\ndef test_zero_again():\n    assert add(0, 0) == 0\n",
    "setup.cfg": "[metadata]\nname = calc\n",
    "src/calc.egg-info/PKG-INFO": "Metadata-Version: 2.1\nName: calc\n",  # the repository's own
}
FAIL_TO_PASS = ["test_calc.py::test_add"]
PASS_TO_PASS = ["test_calc.py::test_zero", "tests/test_more.py::test_zero_again"]
TESTS = FAIL_TO_PASS + PASS_TO_PASS
FIX = "--- a/src/calc/ops.py\n+++ b/src/calc/ops.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n"
# Imported in pytest's process, this makes every test pass: the attacks try to get it imported.
PASS_ALL = "import _pytest.python\n_pytest.python.Function.runtest = lambda self: None\n"
# A stand-in for `python -m pytest` that writes a report of passes (the report file's old format).
FAKE_PYTEST = (
    "import json, os\n"
    f"ids = {TESTS!r}\n"
    'with open(os.environ["GFCR_PYTEST_REPORT"], "w") as f:\n'
    '    json.dump({"outcomes": dict.fromkeys(ids, "passed"), "messages": {}}, f)\n'
)
CHEATED_TEST = TEST_CALC.replace("assert add(2, 3) == 5", "assert True")


def diff(path: str, before: str | None, after: str | None, old: str = "", new: str = "") -> str:
    """A file's diff (None: absent), its header names overridable to spell an attack."""
    names = (
        old or (f"a/{path}" if before is not None else "/dev/null"),
        new or (f"b/{path}" if after is not None else "/dev/null"),
    )
    lines = difflib.unified_diff((before or "").splitlines(True), (after or "").splitlines(True), *names)
    return "".join(lines)


def created(files: dict[str, str]) -> str:
    return "".join(diff(path, None, text) for path, text in files.items())


STAMP = " 2020-01-01 00:00:00.000000000 +0000"
ATTACKS = {
    # item 1: names GNU patch reads otherwise than the old verdict's own parser
    "timestamp after the name": diff(
        "test_calc.py", TEST_CALC, CHEATED_TEST, old=f"a/test_calc.py{STAMP}", new=f"b/test_calc.py{STAMP}"
    ),
    # item 2: code loaded into pytest's process from outside the tests
    "pytest11 entry point": created(
        {
            "cheat-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: cheat\nVersion: 1.0\n",
            "cheat-1.0.dist-info/entry_points.txt": "[pytest11]\ncheat = cheat\n",
            "cheat.py": PASS_ALL,
        }
    ),
    "root __init__.py": created({"__init__.py": PASS_ALL}),
    "sitecustomize on the tests' import path": created({"src/sitecustomize.py": PASS_ALL}),
    "a top-level pytest module": created({"pytest.py": FAKE_PYTEST}),
    # the same family
    "usercustomize": created({"src/usercustomize.py": PASS_ALL}),
    "a .pth file": created(
        {"src/cheat.pth": "import _pytest.python; _pytest.python.Function.runtest = lambda self: None\n"}
    ),
    "a top-level package shadowing a dependency": created({"src/_pytest/__init__.py": PASS_ALL}),
    "a module shadowing the standard library": created({"src/textwrap.py": PASS_ALL}),
    "a new folder beside the package": created({"src/helpers/__init__.py": PASS_ALL}),
    "conftest.py at the root": created({"conftest.py": PASS_ALL}),
    "conftest.py in a test folder": created({"tests/conftest.py": PASS_ALL}),
    "conftest.py in the package": created({"src/calc/conftest.py": PASS_ALL}),
    "a hidden .pytest.ini": created(
        {".pytest.ini": "[pytest]\naddopts = -p cheat\n", "src/cheat.py": PASS_ALL}
    ),
    "pytest.ini in a test folder": created({"tests/pytest.ini": "[pytest]\npython_functions = nothing\n"}),
    "tox.ini": created({"tox.ini": "[pytest]\npython_files = nothing\n"}),
    "pyproject.toml": created({"pyproject.toml": "[tool.pytest.ini_options]\npython_files = 'nothing'\n"}),
    "setup.cfg": diff(
        "setup.cfg", REPO["setup.cfg"], REPO["setup.cfg"] + "[tool:pytest]\npython_files = x\n"
    ),
    "the test edited": diff("test_calc.py", TEST_CALC, CHEATED_TEST),
    "the test deleted": diff("test_calc.py", TEST_CALC, None),
    "a test helper added": created({"tests/helpers.py": PASS_ALL}),
    "a test module's name taken in the package": created({"src/calc/test_calc.py": PASS_ALL}),
    "the package's __init__ deleted": diff("src/calc/__init__.py", REPO["src/calc/__init__.py"], None),
}
REFUSED_WHOLE = {
    # diffs the verdict cannot read: nothing of them counts (item 1: GNU patch unquotes this name)
    "a quoted name": diff("test_calc.py", TEST_CALC, CHEATED_TEST, new='"b/test_calc.py"'),
    "a git rename": FIX
    + "diff --git a/test_calc.py b/x.py\nsimilarity index 100%\nrename from test_calc.py\nrename to x.py\n",
    "a git copy": FIX + "diff --git a/x.py b/test_calc.py\ncopy from x.py\ncopy to test_calc.py\n",
    "a binary patch": FIX
    + "diff --git a/test_calc.py b/test_calc.py\nGIT binary patch\nliteral 3\nKcmZ?wY-9ic0RR91\n",
    "a control character in a name": diff("calc/ops.py", None, "x = 1\n", new="b/src/calc/o\x1bps.py"),
    "a path out of the repository": diff("x.py", None, "x = 1\n", new="b/../x.py"),
    "a file changed twice": FIX + FIX,
    "text that is not a diff": "Please accept this fix.\n" + FIX,
}


@pytest.fixture(scope="module")
def repo() -> Snapshot:
    return Snapshot.from_files("calc", [(p, t.encode()) for p, t in REPO.items()], ("src",))


def judge(repo: Snapshot, patch: str, limits: Limits | None = None):
    extra = {"limits": limits} if limits else {}
    return evaluate(shared_sandbox("local"), repo, patch, FAIL_TO_PASS, PASS_TO_PASS, **extra)


def test_the_fix_resolves_the_task_and_no_change_does_not(repo):
    assert judge(repo, FIX).resolved
    unfixed = judge(repo, "")
    assert not unfixed.resolved and unfixed.fail_to_pass == {"test_calc.py::test_add": "failed"}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_an_attack_on_the_tests_neither_passes_nor_keeps_a_fix_from_passing(repo, attack):
    cheat = judge(repo, ATTACKS[attack])
    assert not cheat.resolved, cheat
    assert cheat.fail_to_pass == {"test_calc.py::test_add": "failed"}
    assert cheat.signals()["touched_tests"] and cheat.dropped  # left out, and recorded
    honest = judge(repo, FIX + ATTACKS[attack])  # with the fix beside it, only the fix counts
    assert honest.resolved and set(honest.dropped) == set(cheat.dropped)


@pytest.mark.parametrize("attack", sorted(REFUSED_WHOLE))
def test_a_diff_the_verdict_cannot_read_is_refused_whole(repo, attack):
    refused = judge(repo, REFUSED_WHOLE[attack])
    assert not refused.applied and not refused.resolved
    assert "refused" in refused.error and set(refused.fail_to_pass.values()) == {"not run"}


def test_library_code_that_makes_every_test_pass_is_caught_by_the_canary(repo):
    init = REPO["src/calc/__init__.py"]
    tamper = diff("src/calc/__init__.py", init, init + PASS_ALL)  # library code: the verdict takes it
    for patch in (tamper, FIX + tamper):
        resolution = judge(repo, patch)
        assert resolution.fail_to_pass == {"test_calc.py::test_add": "passed"}  # faked
        assert resolution.tampered and resolution.signals()["tampered"] and not resolution.resolved


def test_a_patch_that_blocks_sigalrm_cannot_stretch_a_hanging_test(repo):
    hang = diff(
        "src/calc/ops.py",
        REPO["src/calc/ops.py"],
        "import signal\n\nsignal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})\n\n\n"
        "def add(a, b):\n    while a == 2:\n        pass\n    return a - b\n",
    )
    started = time.monotonic()
    resolution = judge(repo, hang, Limits(wall_s=90.0, cpu_s=90.0, memory_mb=2048))
    took = time.monotonic() - started
    # the hanging test is stopped at its 10 s from outside its process; the others still run
    assert resolution.fail_to_pass["test_calc.py::test_add"] == "failed"
    assert "ran past 10 s" in resolution.messages["test_calc.py::test_add"]
    assert set(resolution.pass_to_pass.values()) == {"passed"}
    assert took < 45, took  # not the run's limit of 80 s


def kit_run_tests(repo: Snapshot, paths: list[str], **limits: float) -> dict:
    """The kit's `run_tests` on `repo`, in a fresh sandbox, with the time limits given."""
    code = (
        kit_source()
        + f"\nimport sys\nunpack(sys.stdin.read(), {plugin_source()!r})\n"
        + f"print(json.dumps(run_tests({paths!r}, ['src'], 60, **{limits!r})))\n"
    )
    stdin = base64.b64encode(repo.archive).decode("ascii")
    result = shared_sandbox("local").run(
        code, stdin=stdin, limits=Limits(wall_s=90.0, cpu_s=90.0, memory_mb=2048)
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_a_test_file_whose_import_hangs_is_stopped_and_the_others_still_run(repo):
    # the library hangs when the root test file imports it (sys.modules holds a module as it runs)
    hangs = (
        'import sys\n\nwhile "test_calc" in sys.modules:\n    pass\n\n\ndef add(a, b):\n    return a + b\n'
    )
    patched = repo.patched(diff("src/calc/ops.py", REPO["src/calc/ops.py"], hangs))
    started = time.monotonic()
    answer = kit_run_tests(
        patched, ["test_calc.py", "tests/test_more.py"], test_timeout_s=3.0, collect_timeout_s=3.0
    )
    assert answer["outcomes"] == {"test_calc.py": "error", "tests/test_more.py::test_zero_again": "passed"}
    assert "importing it ran past 3 s" in answer["messages"]["test_calc.py"]
    assert time.monotonic() - started < 30


def test_a_start_up_that_hangs_is_stopped(repo):
    # a conftest of the project's own imports the library, which now hangs on import
    hangs = "while True:\n    pass\n"
    patched = repo.changed({"conftest.py": b"import calc\n"}).patched(
        diff("src/calc/ops.py", REPO["src/calc/ops.py"], hangs)
    )
    answer = kit_run_tests(patched, ["test_calc.py"], test_timeout_s=3.0, collect_timeout_s=3.0)
    assert answer["outcomes"] == {"test_calc.py": "error"}
    assert "start-up ran past 3 s" in answer["messages"]["test_calc.py"]


def call(name: str, **arguments: object) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


@pytest.fixture()
def env(tmp_path):
    root = tmp_path / "calc"
    for path, text in REPO.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    task = {"id": "calc", "issue": "add is wrong", "fail_to_pass": FAIL_TO_PASS, "pass_to_pass": PASS_TO_PASS}
    (tmp_path / "tasks.jsonl").write_text(
        json.dumps({**task, "gold_patch": FIX, "pythonpath": ["src"]}) + "\n"
    )
    env = gym.make("gfcr/SWE-v0", dataset=str(tmp_path / "tasks.jsonl"), repo=str(root))
    env.reset()
    yield env
    env.close()


def bash_python(code: str) -> str:
    return call("bash", command=f"python3 -c {shlex.quote(code)}")


def test_an_honest_fix_in_the_session_is_judged_with_nothing_left_out(env):
    env.step(call("bash", command="python3 -c 'import sys; sys.path[:0] = [\"src\"]; import calc'"))  # caches
    env.step(call("edit_file", path="src/calc/ops.py", old="a - b", new="a + b"))
    assert env.unwrapped.workspace.patch == FIX
    _, reward, _, _, info = env.step(call("submit"))
    assert reward == 1.0 and not info["signals"]["touched_tests"]


def test_the_agent_cannot_reach_the_copy_the_diff_is_taken_against(env):
    # The old session kept the repository's start in /work/.gfcr/original, where the agent could
    # give a file a timestamped name on both sides and so edit the test through GNU patch.
    name = "test_calc.py" + STAMP
    env.step(
        bash_python(
            "import pathlib\n"
            "pathlib.Path('/work/.gfcr/original').mkdir(parents=True, exist_ok=True)\n"
            f"for root, text in (('/work/.gfcr/original', {TEST_CALC!r}), ('/work/repo', {CHEATED_TEST!r})):\n"
            f"    pathlib.Path(root, {name!r}).write_text(text)\n"
        )
    )
    _, reward, terminated, _, info = env.step(call("submit"))
    assert terminated and reward == 0.0 and info["signals"]["fail_to_pass"] == 0.0
    assert info["signals"]["touched_tests"]  # the new top-level file was left out


def test_a_name_holding_a_diff_of_its_own_is_left_out_of_the_diff(env):
    forged = (
        'z.py\n--- a/test_calc.py\n+++ "b/test_calc.py"\n@@ -4,2 +4,2 @@\n def test_add():\n'
        "-    assert add(2, 3) == 5\n+    assert True\n--- /dev/null\n+++ b/zz.py"
    )
    # its slashes make folders: the file's path is the whole text
    write = f"import os; os.makedirs(os.path.dirname({forged!r})); open({forged!r}, 'w').write('x = 1\\n')"
    answer = env.step(bash_python(write))[0]
    assert "not part of your changes" in answer and "control characters" in answer
    assert env.unwrapped.workspace.patch == ""
    _, reward, _, _, info = env.step(call("submit"))
    assert reward == 0.0 and info["signals"]["fail_to_pass"] == 0.0 and info["state"]["patch"] == ""


def test_a_symlink_or_a_deletion_does_not_remove_a_test(env):
    env.step(call("bash", command="rm tests/test_more.py && ln -sf /dev/null test_calc.py"))
    env.step(call("apply_patch", patch=FIX))
    _, reward, _, _, info = env.step(call("submit"))
    assert reward == 1.0 and info["signals"]["touched_tests"]  # both tests ran as they were


def test_a_huge_diff_is_summarised_and_refused_not_stored(env):
    env.step(call("apply_patch", patch=FIX))
    tables = "for i in range(5): open(f'src/calc/table{i}.py', 'w').write('x = 1\\n' * 150_000)"
    answer = env.step(bash_python(tables))[0]  # a diff of 4.5 MB, over the session's output cap too
    assert "over the 262,144" in answer and len(answer) < 2_000
    observation, reward, _, _, info = env.step(call("submit"))
    assert reward == 0.0 and not info["signals"]["patch_applied"]
    assert info["state"]["patch"] == "" and "src/calc/table0.py" in info["state"]["patch_omitted"]
    assert len(json.dumps(info["state"])) < 2_000 and len(observation) < 2_000
