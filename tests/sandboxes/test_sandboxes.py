"""What sandboxes do for honest code: runs, statuses, sessions, concurrency, backends."""

from __future__ import annotations

import asyncio
import os
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from gfcr.errors import ConfigError, SandboxUnavailableError, UnknownNameError
from gfcr.sandboxes import (
    LANGUAGES,
    STATUSES,
    ExecResult,
    Language,
    Limits,
    Sandbox,
    Session,
    make_sandbox,
)


def test_a_run_gets_stdin_files_and_script_semantics(sandbox):
    code = "import sys, helper\nprint(helper.double(int(input())), sys.argv[0], __name__)\n"
    code += "print(open('data/x.txt').read())"
    result = sandbox.run(
        code, stdin="21\n", files={"helper.py": "def double(x):\n    return 2 * x\n", "data/x.txt": "hi"}
    )
    assert result == ExecResult(
        "ok", 0, "42 main.py __main__\nhi\n", "", result.wall_s, result.cpu_s, result.max_rss_mb
    )
    assert isinstance(sandbox, Sandbox) and 0 < result.wall_s < 5 and result.max_rss_mb > 1


def test_exit_codes_tracebacks_and_signals(sandbox):
    assert (
        sandbox.run("import sys; sys.exit(3)").status,
        sandbox.run("import sys; sys.exit(3)").exit_code,
    ) == ("error", 3)
    result = sandbox.run("def f():\n    return 1 / 0\nf()")
    assert result.status == "error" and result.exit_code == 1
    assert 'File "main.py", line 2, in f' in result.stderr and result.stderr.endswith(
        "ZeroDivisionError: division by zero\n"
    )
    assert sandbox.run("def f(:\n").stderr.rstrip().endswith("SyntaxError: invalid syntax")
    killed = sandbox.run("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)")
    assert (killed.status, killed.exit_code) == ("killed", -11)
    assert sandbox.run("import atexit; atexit.register(print, 'bye'); print('hi')").stdout == "hi\nbye\n"
    assert sandbox.run("import sys; sys.exit('failed')").stderr == "failed\n"


def test_bash_runs_with_its_own_exit_status(sandbox):
    result = sandbox.run(
        'read name; echo "hello $name"; ls; exit 4', language="bash", stdin="bob\n", files={"f": ""}
    )
    assert (result.status, result.exit_code, result.stdout) == ("error", 4, "hello bob\nf\n")
    with pytest.raises(UnknownNameError, match="unknown language 'rust'"):
        sandbox.run("fn main() {}", language="rust")


def test_a_new_language_is_one_entry(sandbox, monkeypatch):
    monkeypatch.setitem(LANGUAGES, "sh", Language("sh", "main.sh", ("sh", "{file}")))
    result = sandbox.run('read x; echo "sh got $x"; exit 5', language="sh", stdin="7\n")
    assert (result.status, result.exit_code, result.stdout) == ("error", 5, "sh got 7\n")


def test_large_stdin_and_output_pass_through(sandbox):
    data = "x" * 3_000_000
    result = sandbox.run(
        "import sys; print(len(sys.stdin.read()))", stdin=data, limits=Limits(max_output_bytes=4_000_000)
    )
    assert result.stdout == "3000000\n"
    assert (
        sandbox.run("print('a' * 2_000_000)", limits=Limits(max_output_bytes=4_000_000)).stdout
        == "a" * 2_000_000 + "\n"
    )
    unread = sandbox.run("print('ignores stdin')", stdin=data)  # a program need not read its stdin
    assert unread.ok and sandbox.run("print(1)").stdout == "1\n"


def test_limits_are_validated():
    with pytest.raises(ConfigError, match="Limits.wall_s must be a positive number, got -1"):
        Limits(wall_s=-1)
    assert set(STATUSES) == {"ok", "error", "timeout", "memory", "output_limit", "killed"}


def test_python_session_keeps_state_and_limits_each_call(sandbox):
    with sandbox.session() as session:
        assert isinstance(session, Session)
        assert session.run("import math\nx = 6 * 7").ok
        assert session.run("print(math.sqrt(x * x))").stdout == "42.0\n"
        assert session.run("print(input()[::-1])", stdin="abc").stdout == "cba\n"
        assert (session.run("import sys; sys.exit(2)").exit_code, session.alive) == (2, True)
        assert session.run("1/0").stderr.rstrip().endswith("ZeroDivisionError: division by zero")
        assert session.run("print(x)").stdout == "42\n"  # errors do not lose the state
        assert session.run("import time; time.sleep(30)", limits=Limits(wall_s=1)).status == "timeout"
        assert session.alive is False
        assert "NameError" in session.run("print(x)").stderr and session.restarts == 1


def test_bash_session_keeps_variables_and_directory(sandbox):
    with sandbox.session("bash") as session:
        assert session.run('X=5; mkdir -p d; cd d; f() { echo "f$1"; }').ok
        assert session.run("echo $X $PWD; f 1; cat", stdin="in\n").stdout == "5 /work/d\nf1\nin\n"
        assert session.run("false").exit_code == 1
        assert session.run("exit 3").exit_code == 3 and not session.alive
        assert session.run("echo ${X:-gone}").stdout == "gone\n"


def test_text_that_is_not_utf8_is_an_error_result_and_the_worker_is_kept(sandbox):
    from gfcr.sandboxes.local import LocalSandbox

    with LocalSandbox(pool_size=1) as local:
        assert local.run("print(1)").ok
        (worker,) = local._pool._idle  # the one warm worker
        pair = "x = 1  # \udbff\udfff: in a str, a UTF-16 pair is two lone surrogates"
        for code, stdin in (("print('\ud800')", ""), (pair, ""), ("print(1)", "\ud800")):
            result = local.run(code, stdin=stdin)
            assert (result.status, result.exit_code) == ("error", 1), result
            assert "is not valid text, nothing was run" in result.stderr
            assert "surrogates not allowed" in result.stderr
        bash = local.run("echo '\ud800'", language="bash")
        assert bash.status == "error" and "the code is not valid text" in bash.stderr
        assert local._pool._idle == [worker] and worker.process.poll() is None  # not discarded
        assert local.run("print(2)").stdout == "2\n"
    # U+DC80..U+DCFF stand for raw bytes (surrogateescape) and still go through as those bytes
    assert sandbox.run("od -An -tx1", language="bash", stdin="\udc80").stdout.split() == ["80"]
    assert "UnicodeEncodeError" in sandbox.run("print('\udc80')").stderr  # as compile() says


def test_a_session_answers_lone_surrogates_with_an_error_and_keeps_its_state(sandbox):
    with sandbox.session() as session:
        assert session.run("x = 6 * 7").ok
        for code in ("print('\udc80')", "print('\ud800')"):
            result = session.run(code)
            assert (result.status, result.exit_code) == ("error", 1), result
            assert "surrogates not allowed" in result.stderr
        assert session.run("print(x)", stdin="\ud800").status == "error"
        echo = session.run("import sys; print(repr(sys.stdin.read()))", stdin="a\udc80")
        assert echo.stdout == repr("a\udc80") + "\n"
        assert session.run("print(x)").stdout == "42\n" and session.alive and session.restarts == 0
    with sandbox.session("bash") as shell:
        assert shell.run("X=5").ok and shell.run("echo '\ud800'").status == "error"
        assert shell.run("printf '\udc80' | od -An -tx1").stdout.split() == ["80"]
        assert shell.run("echo $X").stdout == "5\n" and shell.restarts == 0


def test_sessions_release_their_worker_when_closed(sandbox, job_processes):
    before = set(job_processes())
    session = sandbox.session()
    session.run("import subprocess; subprocess.Popen(['sleep', '300'])")
    assert set(job_processes()) - before
    session.close()
    assert set(job_processes()) <= before
    session.close()  # closing twice is harmless


def test_runs_from_threads_and_asyncio_all_complete(sandbox):
    codes = [f"import time; time.sleep(0.2); print({i})" for i in range(8)]
    with ThreadPoolExecutor(8) as pool:
        outputs = list(pool.map(lambda code: sandbox.run(code).stdout, codes))
    assert outputs == [f"{i}\n" for i in range(8)]

    async def main() -> list[ExecResult]:
        return await asyncio.gather(*(sandbox.arun(code) for code in codes))

    assert [r.stdout for r in asyncio.run(main())] == [f"{i}\n" for i in range(8)]


@pytest.mark.local_only("warm=False is the local backend's (docker starts a container per run anyway)")
def test_cold_mode_starts_a_fresh_worker_per_run(sandbox):  # `sandbox`: skips where bwrap cannot run
    from gfcr.sandboxes.local import LocalSandbox

    with LocalSandbox(warm=False) as cold:
        started = time.monotonic()
        assert cold.run("print('cold')").stdout == "cold\n"
        assert time.monotonic() - started < 30


@pytest.mark.local_only("'auto' picks local where it can run")
def test_make_sandbox_picks_and_names_backends(sandbox):
    assert make_sandbox().backend == "local"
    with pytest.raises(UnknownNameError, match="did you mean 'local'"):
        make_sandbox("locl")


def test_auto_refuses_with_what_to_install_where_no_backend_works(monkeypatch):
    from gfcr.sandboxes import local
    from gfcr.sandboxes.docker_backend import connect

    try:
        connect()
        pytest.skip("a Docker engine answers here, so 'auto' would use it")
    except SandboxUnavailableError:
        pass

    def no_bubblewrap() -> None:
        raise SandboxUnavailableError("bubblewrap is not installed; install it (apt-get install bubblewrap)")

    monkeypatch.setattr(local, "check_local_backend", no_bubblewrap)
    with pytest.raises(SandboxUnavailableError) as refused:
        make_sandbox()
    message = str(refused.value)
    assert "local: bubblewrap is not installed; install it" in message
    assert "docker: " in message and "make_sandbox('unsafe-process')" in message


def test_unsafe_process_backend_warns_and_runs():
    with pytest.warns(RuntimeWarning, match="WITHOUT isolation"):
        unsafe = make_sandbox("unsafe-process")
    assert unsafe.run("print(input())", stdin="x").stdout == "x\n"
    assert unsafe.run("cat f", language="bash", files={"f": "file"}).stdout == "file"
    assert unsafe.run("import time; time.sleep(10)", limits=Limits(wall_s=0.5)).status == "timeout"
    assert unsafe.run("x = bytearray(8 << 30)", limits=Limits(memory_mb=64)).status == "memory"
    with unsafe.session() as session:
        session.run("y = 3")
        assert session.run("print(y * 2)").stdout == "6\n"
    with unsafe.session("bash") as session:
        session.run("Y=4")
        assert session.run("echo $Y").stdout == "4\n"


def test_docker_backend_runs_and_leaves_no_container(docker_engine):
    label = {"label": f"gfcr.pid={os.getpid()}"}
    before = {c.id for c in docker_engine.containers.list(all=True, sparse=True, filters=label)}
    sandbox = make_sandbox("docker", pool_size=1)
    try:
        assert sandbox.run("print(input())", stdin="hi").stdout == "hi\n"
        assert (
            sandbox.run("import socket; socket.create_connection(('1.1.1.1', 80), timeout=2)").status
            == "error"
        )
        assert sandbox.run("import time; time.sleep(10)", limits=Limits(wall_s=1)).status == "timeout"
        with sandbox.session() as session:
            session.run("z = 5")
            assert session.run("print(z)").stdout == "5\n"
    finally:
        sandbox.close()
    deadline = time.monotonic() + 20  # containers are killed at once, removed in the background
    while {c.id for c in docker_engine.containers.list(all=True, sparse=True, filters=label)} - before:
        assert time.monotonic() < deadline, "the closed sandbox left containers behind"
        time.sleep(0.2)
