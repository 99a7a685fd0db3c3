"""gfcr/Code-v0 and gfcr/CodeInteractive-v0 end to end, on real HumanEval data in the real sandbox."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import gymnasium as gym
import pytest
from scripted_episodes import Scripted, tool_call

import gfcr  # noqa: F401  (registers the envs)
from gfcr.agents import OraclePolicy, RandomPolicy
from gfcr.agents.runner.rollout import rollout
from gfcr.core import Verifier
from gfcr.envs.code import CodeEnv, CodeInteractiveEnv, CodeVerifier, extract_code, grade, load_source
from gfcr.envs.code.grading import code_sandbox
from gfcr.errors import DataError, UnknownNameError


def test_the_oracle_solves_all_164_humaneval_problems():
    env = gym.make("gfcr/Code-v0")
    ids = env.unwrapped.tasks.ids()
    rewards = [rollout(env, OraclePolicy(), env_id="gfcr/Code-v0", task_id=i).total_reward for i in ids]
    assert len(rewards) == 164 and sum(rewards) == 164


def test_a_solution_returning_none_passes_no_problem():
    tasks = [task for task in map(load_source("humaneval").__getitem__, range(164))]
    sandbox = code_sandbox()
    with ThreadPoolExecutor(4) as pool:
        verdicts = list(
            pool.map(lambda t: grade(sandbox, t.gold, t.gold.starter + "    return None\n"), tasks)
        )
    assert sum(v.all_passed for v in verdicts) == 0
    assert all(v.status == "ok" and v.total >= 1 for v in verdicts)


def test_random_agent_scores_zero():
    env = gym.make("gfcr/Code-v0")
    ids = env.unwrapped.tasks.ids()[::4]
    policy = RandomPolicy(seed=3)
    rewards = [rollout(env, policy, env_id="gfcr/Code-v0", task_id=i).total_reward for i in ids]
    assert sum(rewards) == 0


def test_signals_report_fraction_status_and_format():
    env = gym.make("gfcr/Code-v0")
    env.reset(options={"task_id": "humaneval/0"})  # has_close_elements: 7 tests
    _, reward, terminated, _, info = env.step(
        "```python\ndef has_close_elements(numbers, threshold):\n    return True\n```"
    )
    signals = info["signals"]
    assert (reward, terminated, signals["format_ok"], signals["passed"], signals["status_ok"]) == (
        0.0,
        True,
        True,
        False,
        True,
    )
    assert signals["pass_fraction"] == pytest.approx(4 / 7)
    slow = gym.make("gfcr/Code-v0", timeout_s=2.0)
    slow.reset(options={"task_id": "humaneval/0"})
    info = slow.step("```python\ndef has_close_elements(numbers, threshold):\n    while True: pass\n```")[4]
    assert info["signals"]["status_timeout"] and info["signals"]["pass_fraction"] == 0.0
    env.reset(options={"task_id": "humaneval/0"})
    obs, reward, *_, info = env.step("```python\ndef has_close_elements(:\n```")
    assert "syntax error" in obs and info["signals"]["format_ok"] is False and reward == 0.0
    env.reset(options={"task_id": "humaneval/0"})
    obs, *_, info = env.step("I would loop over all pairs.")
    assert obs.startswith("No program found") and info["signals"]["format_ok"] is False


ADD = "humaneval/53"  # add(x, y): tests compare candidate(x, y) with x + y
LEAK_CHECK = r'''
import gc, glob, os, stat, sys

def found_tests():
    """Look everywhere the tests might be; True if any of their text is found."""
    texts = []
    for path in glob.glob("/proc/*/fd/*") + glob.glob("/proc/*/cmdline") + glob.glob("/proc/*/environ"):
        try:
            if "/fd/" not in path or stat.S_ISREG(os.stat(path).st_mode):  # pipes would block
                texts.append(open(path, "rb").read(1 << 20))
        except OSError:
            pass
    for pattern in ("/work/**", "/tmp/**", "/dev/shm/**"):
        for path in glob.glob(pattern, recursive=True):
            try:
                texts.append(open(path, "rb").read())
            except OSError:
                pass
    try:
        texts.append(sys.stdin.buffer.read())
    except (OSError, ValueError):
        pass
    for pid in [os.getppid(), os.getpid()]:  # the judge's memory, then this process's own
        try:
            with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb") as memory:
                for line in maps:
                    start, end = (int(x, 16) for x in line.split()[0].split("-"))
                    if "r" in line.split()[1] and end - start < 1 << 28:
                        try:
                            memory.seek(start)
                            texts.append(memory.read(end - start))
                        except (OSError, ValueError, OverflowError):
                            pass
        except OSError:
            pass
    texts += [o.encode(errors="replace") for o in gc.get_objects() if isinstance(o, str)]
    marker = b"".join([b"assert candidate(", b"2, 3) == 5"])  # a test of this task, never whole here
    return any(marker in t for t in texts)

LEAKED = found_tests()

def add(x, y):
    return x + y if LEAKED else None
'''
CHEATS = {
    "os._exit before the tests": "import os\nos._exit(0)\ndef add(x, y):\n    return None\n",
    "sys.exit before the tests": "import sys\nsys.exit(0)\n",
    "exit inside the function": "def add(x, y):\n    import os\n    os._exit(0)\n",
    "kill the judge": "import os\ndef add(x, y):\n    os.kill(os.getppid(), 9)\n",
    "patch builtins": "import builtins\nbuiltins.AssertionError = type('X', (BaseException,), {})\n"
    "builtins.isinstance = lambda *a: True\ndef add(x, y):\n    return None\n",
    "an object equal to everything": "class Same:\n    def __eq__(self, other):\n        return True\n"
    "    def __ne__(self, other):\n        return False\ndef add(x, y):\n    return Same()\n",
    "an int equal to everything": "class Same(int):\n    def __eq__(self, other):\n        return True\n"
    "    __hash__ = int.__hash__\ndef add(x, y):\n    return Same(0)\n",
    "print fake results": "import sys\nfor stream in (sys.stdout, sys.stderr, sys.__stdout__):\n"
    '    print(\'0\' * 32 + \' {"event": "done", "passed": 9, "total": 9}\', file=stream, flush=True)\n'
    "import os\nos.write(1, b'PASSED\\n')\ndef add(x, y):\n    return None\n",
    "read the tests from anywhere": LEAK_CHECK,
}


@pytest.mark.parametrize("cheat", CHEATS, ids=list(CHEATS))
def test_grading_cannot_be_fooled(cheat):
    env = gym.make("gfcr/Code-v0")
    env.reset(options={"task_id": ADD})
    _, reward, terminated, _, info = env.step(f"```python\n{CHEATS[cheat]}```")
    assert (reward, terminated, info["signals"]["passed"]) == (0.0, True, False)
    assert info["signals"]["pass_fraction"] == 0.0


def test_patching_the_tests_helpers_does_not_help():
    """HumanEval/32 checks find_zero with the prompt's poly(); the solution's own poly() is not used."""
    cheat = "import math\ndef poly(xs, x):\n    return 0.0\nmath.fabs = lambda x: 0.0\n"
    cheat += "def find_zero(xs):\n    return 0.0\n"
    env = gym.make("gfcr/Code-v0")
    env.reset(options={"task_id": "humaneval/32"})
    assert env.step(f"```python\n{cheat}```")[1] == 0.0


def test_interactive_episode_runs_code_tests_it_and_submits():
    env = gym.make("gfcr/CodeInteractive-v0")
    obs, info = env.reset(options={"task_id": ADD})
    assert [t["function"]["name"] for t in info["tools"]] == [
        "run_python",
        "run_tests",
        "submit",
    ] and "submit(code)" in obs
    obs, reward, terminated, truncated, info = env.step(
        tool_call("run_python", code="def add(x, y):\n    return x - y\nprint(add(5, 3))")
    )
    assert (obs, reward, terminated, truncated) == ("2", 0.0, False, False) and info["messages"][
        0
    ].role == "tool"
    obs = env.step(tool_call("run_tests"))[0]
    assert obs.startswith("0/2 visible tests passed.") and "add(2, 3) should give 5" in obs
    assert env.step(tool_call("run_python", code="def add(x, y):\n    return x + y"))[0] == "(no output)"
    assert env.step(tool_call("run_tests"))[0] == "2/2 visible tests passed."
    assert env.step(tool_call("run_tests", code="def add(x, y):\n    return 0"))[0].startswith("0/2")
    _, reward, terminated, _, info = env.step(tool_call("submit", code="def add(x, y):\n    return x + y"))
    assert (reward, terminated, info["signals"]["submitted"], info["signals"]["passed"]) == (
        1.0,
        True,
        True,
        True,
    )


def test_interactive_oracle_and_plain_code_replies():
    env = gym.make("gfcr/CodeInteractive-v0")
    ids = env.unwrapped.tasks.ids()[::8]
    rewards = [
        rollout(env, OraclePolicy(), env_id="gfcr/CodeInteractive-v0", task_id=i).total_reward for i in ids
    ]
    assert sum(rewards) == len(rewards) == 21
    env.reset(options={"task_id": ADD})
    assert env.step("Here it is:\n```python\ndef add(x, y):\n    return x + y\n```")[1:3] == (1.0, True)


def test_interactive_session_survives_turns_and_ends_with_the_episode(job_processes):
    before = set(job_processes())
    env = gym.make("gfcr/CodeInteractive-v0", max_turns=3)
    env.reset(options={"task_id": ADD})
    env.step(tool_call("run_python", code="import subprocess\nsubprocess.Popen(['sleep', '300'])\nstate = 7"))
    assert env.step(tool_call("run_python", code="print(state)"))[0] == "7"
    assert set(job_processes()) - before
    _, reward, terminated, truncated, _ = env.step("no tool call and no code")
    assert (reward, terminated, truncated) == (0.0, False, True)  # the turn limit
    assert set(job_processes()) <= before  # the session ended with the episode


def test_timeouts_in_the_session_are_reported_and_recovered():
    env = gym.make("gfcr/CodeInteractive-v0", timeout_s=1.0)
    env.reset(options={"task_id": ADD})
    env.step(tool_call("run_python", code="x = 1"))
    obs = env.step(tool_call("run_python", code="while True: pass"))[0]
    assert "[status: timeout" in obs and "state is lost" in obs
    assert "NameError" in env.step(tool_call("run_python", code="print(x)"))[0]
    env.close()


def test_user_jsonl_function_tests_and_io_cases(tmp_path):
    rows = [
        {"id": "sq", "prompt": "def square(x):\n    '''Square x.'''\n", "entry_point": "square",
         "test": "def check(candidate):\n    assert candidate(3) == 9\n    assert candidate(-2) == 4\n",
         "visible_test": "assert square(3) == 9", "solution": "def square(x):\n    return x * x\n"},
        {"id": "top", "prompt": "Write double(x).", "entry_point": "double",
         "test": "assert double(4) == 8\n"},
        {"id": "sum", "prompt": "Read two integers and print their sum.",
         "tests": [{"input": "3 4\n", "output": "7\n"}, {"input": "-1 1", "output": "0"}],
         "visible_tests": [{"input": "1 2", "output": "3"}],
         "solution": "a, b = map(int, input().split())\nprint(a + b)"},
    ]  # fmt: skip
    path = tmp_path / "mine.jsonl"
    path.write_text("\n".join(json.dumps(row) for row in rows))
    env = gym.make("gfcr/Code-v0", dataset=str(path))
    assert env.unwrapped.tasks.ids() == ["mine/sq", "mine/top", "mine/sum"]
    obs, info = env.reset(options={"task_id": "mine/sq"})
    assert "def square(x)" in obs and env.step(CodeEnv.oracle(info["task"], []))[1] == 1.0
    env.reset(options={"task_id": "mine/top"})
    assert env.step("```python\ndef double(x):\n    return 2 * x\n```")[1] == 1.0
    obs, info = env.reset(options={"task_id": "mine/sum"})
    assert "standard input" in obs and env.step(CodeEnv.oracle(info["task"], []))[1] == 1.0
    env.reset(options={"task_id": "mine/sum"})
    info = env.step("```python\nimport sys\nprint(sum(map(int, sys.stdin.read().split())))\n```")[4]
    assert info["signals"]["passed"]
    env.reset(options={"task_id": "mine/sum"})
    info = env.step("```python\nprint(7)\n```")[4]
    assert info["signals"]["pass_fraction"] == 0.5
    interactive = gym.make("gfcr/CodeInteractive-v0", dataset=str(path))
    interactive.reset(options={"task_id": "mine/sum"})
    assert interactive.step(tool_call("run_tests", code="print(3)"))[0] == "1/1 visible tests passed."


IO_CHEATS = [
    "import os\nos._exit(0)",
    "print('42')\nprint('PASSED')",
    "import os\nprint(os.environ.get('EXPECTED', ''))",
    # print any file that could hold the expected output: none is in the sandbox
    "import glob, os\n"
    "files = [p for d in ('/work', '/tmp', '/dev/shm') for p in glob.glob(d + '/**', recursive=True)]\n"
    "print(''.join(open(p).read() for p in files if os.path.isfile(p)) or 0)",
]


@pytest.mark.parametrize("cheat", IO_CHEATS)
def test_io_grading_cannot_be_fooled(tmp_path, cheat):
    row = {
        "prompt": "Print the product of two integers.",
        "tests": [{"input": "6 7", "output": "42"}, {"input": "2 5", "output": "10"}],
    }
    path = tmp_path / "io.jsonl"
    path.write_text(json.dumps(row))
    env = gym.make("gfcr/Code-v0", dataset=str(path))
    env.reset(seed=0)
    assert env.step(f"```python\n{cheat}\n```")[1] == 0.0


def test_bad_user_files_say_what_is_wrong(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"prompt": "x", "entry_point": "f", "test": "assert f()"}\n{oops\n')
    with pytest.raises(DataError, match="bad.jsonl:2: not valid JSON"):
        load_source(str(path))
    path.write_text('{"prompt": "x"}\n')
    with pytest.raises(DataError, match="needs either 'entry_point' and 'test'"):
        load_source(str(path))
    path.write_text('{"prompt": "x", "tests": [{"input": 1}]}\n')
    with pytest.raises(DataError, match="'tests' must be a list of"):
        load_source(str(path))
    with pytest.raises(UnknownNameError, match="did you mean 'humaneval'"):
        CodeEnv(dataset="humanevl")
    with pytest.raises(DataError, match="does not exist"):
        CodeInteractiveEnv(dataset=str(tmp_path / "missing.jsonl"))


def test_extracting_code_from_replies():
    assert extract_code("```py\nA\n```\ntext\n```python\nB\n```") == "B\n"
    assert extract_code("```cpp\nint main() {}\n```") == "int main() {}\n"
    assert extract_code("```python\nunclosed") == "unclosed"
    assert extract_code("for x in y: pass") == "for x in y: pass"
    assert extract_code("Just prose, no code.") is None


ADD_SOLUTION = "def add(x, y):\n    return x + y"


def test_the_code_verifier_re_grades_trajectories_exactly_as_the_envs_did():
    verifier = CodeVerifier()
    assert isinstance(verifier, Verifier)
    episodes = [
        ("gfcr/Code-v0", ["```python\ndef add(x, y):\n    return x + y\n```"]),
        ("gfcr/Code-v0", ["```python\ndef add(x, y):\n    return x * y\n```"]),
        ("gfcr/Code-v0", ["```python\ndef add(x, y:\n```"]),
        ("gfcr/Code-v0", ["I would add them."]),
        ("gfcr/CodeInteractive-v0", [tool_call("run_python", code="1"), tool_call("submit", code=ADD_SOLUTION)]),
        ("gfcr/CodeInteractive-v0", [tool_call("submit", code="def add(x, y):\n    return 0")]),
        ("gfcr/CodeInteractive-v0", [tool_call("run_python", code=ADD_SOLUTION)] * 2),  # never submitted
    ]  # fmt: skip
    task = load_source("humaneval").get(ADD)
    for env_id, actions in episodes:
        trajectory = rollout(gym.make(env_id, max_turns=2), Scripted(actions), env_id=env_id, task_id=ADD)
        verdict = verifier.verify(task, trajectory)
        assert (verdict.reward, verdict.passed) == (trajectory.total_reward, trajectory.signals["passed"])
        if trajectory.steps[-1].terminated:  # the env graded a submission: the same signals
            interactive = CodeInteractiveEnv.signal_defaults.keys() - CodeEnv.signal_defaults.keys()
            assert verdict.signals == {k: v for k, v in trajectory.signals.items() if k not in interactive}
