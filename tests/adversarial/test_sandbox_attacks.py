"""Attacks on the sandbox, on both backends, through the kernel's shared state and through its own input: a run
may not leave anything a later run (another uid, another sandbox) can read, may not gain
privileges in a namespace of its own, and no input may cost the pool its warm workers.

Real code in real bubblewrap workers and real Docker containers (`sandbox` runs each test against
both); where an attack would leave a trace on the host (a key, a process), the test looks for it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gfcr.errors import SandboxUnavailableError
from gfcr.sandboxes import Limits

pytestmark = pytest.mark.usefixtures("no_job_survives")
JOB_UIDS_FROM = 1_000_000  # the local sandbox runs each job as a fresh uid at or above this
DOCKER_UID = 65534  # the Docker backend's containers run as nobody (no user namespace remapping)
LIBC = """
import ctypes, errno, os, platform, sys
if platform.machine() != "x86_64":
    print("SKIP", platform.machine()); raise SystemExit
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def syscall(number, *args):
    ctypes.set_errno(0)
    result = libc.syscall(number, *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
    return result if result >= 0 else -ctypes.get_errno()
"""
ADD_KEY, KEYCTL, KEYCTL_SETPERM, KEYCTL_READ, KEY_SPEC_USER_KEYRING = 248, 250, 5, 11, -4


@pytest.fixture(scope="module", params=["local", "docker"])
def sandbox(request):
    if request.param == "docker":
        request.getfixturevalue("docker_engine")  # skips (fails in CI) where no engine can run
        from gfcr.sandboxes.docker_backend import DockerSandbox

        with DockerSandbox(pool_size=2) as sandbox:
            yield sandbox
        return
    from gfcr.sandboxes.bwrap import check_local_backend
    from gfcr.sandboxes.local import LocalSandbox

    try:
        check_local_backend()
    except SandboxUnavailableError as e:
        pytest.skip(f"local sandbox unavailable: {e}")
    with LocalSandbox(pool_size=2) as sandbox:
        yield sandbox


def run(sandbox, code: str, stdin: str = "") -> str:
    result = sandbox.run(LIBC + code, stdin=stdin, limits=Limits(wall_s=20))
    assert result.ok, result
    if result.stdout.startswith("SKIP"):
        pytest.skip(f"system call numbers are written for x86_64, not {result.stdout.split()[1]}")
    return result.stdout


def key_users() -> set[int]:
    uids = {int(line.split(":")[0]) for line in Path("/proc/key-users").read_text().splitlines()}
    return {uid for uid in uids if uid >= JOB_UIDS_FROM or uid == DOCKER_UID}


def test_a_key_left_by_one_run_cannot_be_read_by_the_next(sandbox):
    before = key_users()
    plant = f"""
serial = syscall({ADD_KEY}, b"user", b"gfcr-drop", b"s3cret-payload", 14, {KEY_SPEC_USER_KEYRING})
if serial > 0:
    syscall({KEYCTL}, {KEYCTL_SETPERM}, serial, 0x3F3F3F3F)  # everything, for everyone
print(serial)
"""
    read = f"""
buffer = ctypes.create_string_buffer(64)
size = syscall({KEYCTL}, {KEYCTL_READ}, int(sys.stdin.read()), buffer, 64)
print(buffer.raw[: max(size, 0)].decode(), size)
"""
    serial = int(run(sandbox, plant))
    assert serial == -1  # EPERM: the keyring calls are filtered
    for guess in (serial, *range(1, 4)):  # the planted serial, or low serials of the host's keys
        assert "s3cret" not in run(sandbox, read, stdin=str(guess))
    assert key_users() == before, "a run left kernel keys (and their memory) on the host"


def test_many_runs_cannot_pile_up_kernel_keys(sandbox):
    before = key_users()
    code = f"print(syscall({ADD_KEY}, b'keyring', b'gfcr-pile', None, 0, {KEY_SPEC_USER_KEYRING}))"
    assert {run(sandbox, code) for _ in range(20)} == {"-1\n"}
    assert key_users() == before


def test_no_run_gets_privileges_in_a_user_namespace_of_its_own(sandbox):
    escape = """
CLONE_NEWUSER, CLONE_NEWNS, SIGCHLD = 0x10000000, 0x00020000, 17
print(syscall(272, CLONE_NEWUSER | CLONE_NEWNS), syscall(56, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0))
print(syscall(165, b"none", b"/work", b"tmpfs", 0, None), syscall(308, os.open("/proc/self/ns/mnt", 0), 0))
"""
    assert run(sandbox, escape).split() == ["-1"] * 4  # unshare, clone, mount, setns: EPERM
    shell = sandbox.run(
        "unshare -Urm sh -c 'id -u; mount -t tmpfs none /tmp' || echo refused", language="bash"
    )
    assert shell.stdout == "refused\n" and "Operation not permitted" in shell.stderr, shell


def test_a_run_cannot_trace_or_read_another_process(sandbox):
    code = """
import subprocess
child = subprocess.Popen([sys.executable, "-c", "import time; secret = 'x' * 64; time.sleep(30)"])
PTRACE_ATTACH, PTRACE_SEIZE = 16, 0x4206
local, remote = ctypes.create_string_buffer(16), ctypes.c_void_p(0x400000)
iov = (ctypes.c_void_p * 2)(ctypes.addressof(local), 16)
remote_iov = (ctypes.c_void_p * 2)(remote, 16)
print(syscall(101, PTRACE_ATTACH, child.pid, 0, 0), syscall(101, PTRACE_SEIZE, child.pid, 0, 0),
      syscall(310, child.pid, iov, 1, remote_iov, 1, 0))  # process_vm_readv
child.kill()
"""
    assert run(sandbox, code).split() == ["-1", "-1", "-1"]


def test_text_that_is_not_utf8_never_costs_the_pool_a_worker():
    # Local backend only: it checks the warm worker itself (docker has no workers to lose; its
    # surrogate handling is tested on both backends in tests/sandboxes/test_sandboxes.py).
    from gfcr.sandboxes.bwrap import check_local_backend
    from gfcr.sandboxes.local import LocalSandbox

    try:
        check_local_backend()
    except SandboxUnavailableError as e:
        pytest.skip(f"local sandbox unavailable: {e}")
    with LocalSandbox(pool_size=1) as local:
        assert local.run("print(1)").ok
        (worker,) = local._pool._idle
        hostile = ["\ud800", "print('\udfff')", "\udbff\udfff", "#" + "\ud800" * 10_000, "\x00\ud800"]
        results = [local.run(code) for code in hostile] + [local.run("print(1)", stdin=s) for s in hostile]
        results += [local.run(code, language="bash") for code in hostile]
        with local.session() as session:
            assert session.run("state = 1").ok
            results += [session.run(code) for code in hostile + ["print('\udc80')"]]
            assert session.run("print(state)").stdout == "1\n" and session.restarts == 0
        assert {(r.status, r.exit_code) for r in results} == {("error", 1)}
        assert local._pool._idle == [worker] and worker.process.poll() is None
