"""How a program runs once its process is isolated: Python with script semantics, REPL sessions, framing.

This module is standard-library only and is executed *inside* sandboxes (copied in as
`gfcr_program.py`), so it must not import gfcr. It provides:

- `run_python(code)`: run Python source in the current, already warm interpreter exactly as
  `python3 main.py` would — fresh `__main__`, fresh standard streams, `SystemExit` and uncaught
  exceptions turned into the exit status, `atexit` handlers run — then exit the process.
- `python_session(...)` and `bash_cell(...)`: the notebook-like sessions of every backend.
- `write_frame` / `read_frame`: length-prefixed frames, the wire format between gfcr and a sandbox.

>>> import os
>>> read_end, write_end = os.pipe()
>>> write_frame(write_end, b"hello")
>>> read_frame(read_end)
b'hello'
"""

from __future__ import annotations

import json
import os
import struct
import sys
from typing import Any, NoReturn

_LENGTH = struct.Struct(">I")
MAX_FRAME = 1 << 30
ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/work",
    "TMPDIR": "/tmp",
    "LANG": "C.UTF-8",
    "USER": "sandbox",
    "LOGNAME": "sandbox",
    "PYTHONDONTWRITEBYTECODE": "1",
}


# -- frames ------------------------------------------------------------------------------------


def write_frame(fd: int, payload: bytes) -> None:
    """Write one frame (4-byte big-endian length, then the bytes) to a file descriptor."""
    data = memoryview(_LENGTH.pack(len(payload)) + payload)
    while data:
        data = data[os.write(fd, data) :]


def read_exact(fd: int, size: int) -> bytes:
    """Read exactly `size` bytes; EOFError if the stream ends first."""
    chunks, left = [], size
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            raise EOFError(f"stream ended {left} bytes short of a {size}-byte read")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int, limit: int = MAX_FRAME) -> bytes:
    """Read one frame written by `write_frame`; ValueError if it is longer than `limit`."""
    (size,) = _LENGTH.unpack(read_exact(fd, _LENGTH.size))
    if size > limit:
        raise ValueError(f"frame of {size} bytes is over the limit of {limit}")
    return read_exact(fd, size)


def json_bytes(value: Any) -> bytes:
    return json.dumps(value).encode()


def write_json(fd: int, value: Any) -> None:
    write_frame(fd, json_bytes(value))


def read_json(fd: int, limit: int = 1 << 20) -> Any:
    return json.loads(read_frame(fd, limit))


# -- Python with script semantics ----------------------------------------------------------------


def run_python(code: str, filename: str = "main.py", argv: list[str] | None = None) -> NoReturn:
    """Run `code` as the main script of this process, then exit with its status (never returns).

    Standard streams are rebuilt on file descriptors 0, 1 and 2; `/work` (the current
    directory) is first on `sys.path` so files passed with the program can be imported.
    """
    _fresh_streams()
    sys.argv = argv or [filename]
    sys.path[:0] = [os.getcwd()]
    namespace = _fresh_main(filename)
    status = _execute(code, filename, namespace)
    os._exit(_finish(status))


def _fresh_streams() -> None:
    """New `sys.stdin/stdout/stderr` on fds 0-2, buffered as CPython buffers them for pipes."""
    import io

    def stream(fd: int, mode: str, line_buffering: bool, errors: str) -> io.TextIOWrapper:
        raw = io.FileIO(fd, mode, closefd=False)
        buffered = io.BufferedReader(raw) if mode == "r" else io.BufferedWriter(raw)
        return io.TextIOWrapper(buffered, encoding="utf-8", errors=errors, line_buffering=line_buffering)

    sys.stdin = sys.__stdin__ = stream(0, "r", False, "surrogateescape")  # type: ignore[misc]
    sys.stdout = sys.__stdout__ = stream(1, "w", False, "surrogateescape")  # type: ignore[misc]
    sys.stderr = sys.__stderr__ = stream(2, "w", True, "backslashreplace")  # type: ignore[misc]


def _fresh_main(filename: str) -> dict[str, Any]:
    import builtins
    import types

    module = types.ModuleType("__main__")
    module.__dict__.update(__file__=filename, __builtins__=builtins, __cached__=None)
    sys.modules["__main__"] = module
    return module.__dict__


def _execute(code: str, filename: str, namespace: dict[str, Any]) -> int:
    """Execute `code` in `namespace`; the exit status, with tracebacks printed as Python prints them."""
    import linecache

    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    try:
        compiled = compile(code, filename, "exec", dont_inherit=True)
        exec(compiled, namespace)
    except SystemExit as e:
        return _exit_status(e)
    except BaseException as e:  # the program's own error: report it like the interpreter does
        _print_exception(e)
        return 1
    return 0


def _exit_status(exit: SystemExit) -> int:
    code = exit.code
    if code is None:
        return 0
    if isinstance(code, int) and not isinstance(code, bool):
        return code & 0xFF
    try:
        print(code, file=sys.stderr)
    except Exception:
        pass
    return 1


# This module's own frames' file name: its path, or "<string>" when run with `python3 -c` (Docker
# sessions), where `__file__` does not exist.
_OWN_FILE = sys._getframe().f_code.co_filename


def _print_exception(error: BaseException) -> None:
    """Print `error`'s traceback without this module's frames (the program's frames only)."""
    import traceback

    tb = error.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == _OWN_FILE:
        tb = tb.tb_next
    try:
        traceback.print_exception(type(error), error, tb, file=sys.stderr)
    except Exception:
        pass


def _finish(status: int) -> int:
    """What the interpreter does at exit: join threads, run atexit handlers, flush streams."""
    import atexit
    import threading

    try:
        threading._shutdown()  # type: ignore[attr-defined]  # waits for non-daemon threads
    except BaseException:
        pass
    try:
        atexit._run_exitfuncs()
    except BaseException:
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            status = status or 120  # CPython exits 120 when flushing stdout fails
    return status


# -- sessions ------------------------------------------------------------------------------------


def python_session(requests_fd: int, replies_fd: int, capture: bool = False) -> NoReturn:
    """Serve notebook cells: each request frame `{"code", "stdin", "cpu_s", "nonce"}` runs in one namespace.

    The reply frame is `{"exit_code", "cpu_s", "max_rss_kb", "nonce"}` (the request's nonce, by
    which the host tells this reply from one a cell writes); with `capture`, also `"stdout"` and
    `"stderr"` (the cell's output, for transports without separate output pipes); otherwise the
    output goes to fds 1 and 2.
    A cell's `sys.exit(n)` ends the cell with status n; the session goes on.
    """
    import io
    import resource

    _fresh_streams()
    sys.argv = ["<session>"]
    sys.path[:0] = [os.getcwd()]
    namespace = _fresh_main("<session>")
    number = 0
    while True:
        try:
            request = json.loads(read_frame(requests_fd))
        except EOFError:
            os._exit(_finish(0))
        number += 1
        used = _cpu_seconds()
        _raise_cpu_limit(int(used + request.get("cpu_s", 3600)) + 1)
        stdin = request.get("stdin", "").encode("utf-8", "surrogateescape")  # bytes as `run` passes them
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8", errors="surrogateescape")
        cell, name = request["code"], f"<cell {number}>"
        if capture:
            status, output = _captured(lambda: _execute(cell, name, namespace))  # noqa: B023
        else:
            status, output = _execute(cell, name, namespace), {}
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
        usage = {
            "cpu_s": _cpu_seconds() - used,
            "max_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        }
        write_json(replies_fd, {"exit_code": status, **usage, **output, "nonce": request.get("nonce")})


def _cpu_seconds() -> float:
    import resource

    self, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return self.ru_utime + self.ru_stime + children.ru_utime + children.ru_stime


def _raise_cpu_limit(seconds: int) -> None:
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard != resource.RLIM_INFINITY:
        seconds = min(seconds, hard)
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (seconds, hard))
    except (ValueError, OSError):
        pass


def _captured(run: Any, limit: int = 1 << 20) -> tuple[int, dict[str, str]]:
    """Run `run()` with fds 1 and 2 sent to temporary files; its status and the captured text."""
    import tempfile

    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    files = [tempfile.TemporaryFile(), tempfile.TemporaryFile()]
    try:
        for fd, file in zip((1, 2), files, strict=True):
            os.dup2(file.fileno(), fd)
        status = run()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        for fd, copy in zip((1, 2), saved, strict=True):
            os.dup2(copy, fd)
            os.close(copy)
    texts = []
    for file in files:
        file.seek(0)
        texts.append(file.read(limit).decode("utf-8", "replace"))
        file.close()
    return status, {"stdout": texts[0], "stderr": texts[1]}


def bash_cell(code: str, stdin: str, marker_fd: int, nonce: str) -> bytes:
    """The text to write to a persistent bash's stdin to run one cell of a bash session.

    The cell is sourced (so variables, functions and the directory persist), reads `stdin`,
    and then bash writes `<nonce> <exit status>` on `marker_fd`. Heredoc delimiters carry the
    nonce, so the cell's text cannot end them early.

    >>> bash_cell("echo hi", "", 4, "N")[:42]
    b"source /dev/fd/5 5<<'GFCR_CODE_N' <<'GFCR_"
    """
    stdin = stdin if stdin.endswith("\n") or not stdin else stdin + "\n"
    code = code if code.endswith("\n") else code + "\n"
    return (
        f"source /dev/fd/5 5<<'GFCR_CODE_{nonce}' <<'GFCR_STDIN_{nonce}'\n"
        f"{code}GFCR_CODE_{nonce}\n{stdin}GFCR_STDIN_{nonce}\n"
        f"printf '%s %d\\n' {nonce} \"$?\" >&{marker_fd}\n"
    ).encode("utf-8", "surrogateescape")


def main() -> None:
    """`python3 gfcr_program.py session [--fds IN,OUT | --capture]` or `... run FILE`.

    A session reads cells from fd IN and replies on fd OUT (default 3 and 4), or with
    `--capture` reads cells on stdin and replies on stdout, the cells' output captured.
    """
    args = sys.argv[1:]
    if args[:1] == ["session"] and "--capture" in args:
        requests, replies = os.dup(0), os.dup(1)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(2, 1)
        python_session(requests, replies, capture=True)
    if args[:1] == ["session"]:
        fds = args[args.index("--fds") + 1].split(",") if "--fds" in args else ["3", "4"]
        python_session(int(fds[0]), int(fds[1]))
    if (
        args[:1] == ["run"] and len(args) > 1
    ):  # as the local backend runs it: argv[0] and tracebacks say main.py
        with open(args[1], "rb") as file:
            code = file.read().decode("utf-8", "surrogateescape")
        name = os.path.basename(args[1])
        run_python(code, name, [name, *args[2:]])
    sys.exit(f"usage: {sys.argv[0]} session [--fds IN,OUT | --capture] | run FILE")


if __name__ == "__main__":
    main()
