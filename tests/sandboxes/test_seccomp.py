"""gfcr's seccomp filter, on both backends: what Docker's default profile denies fails with EPERM
in a run, nothing of it reaches the host, and ordinary programs (subprocesses, threads,
multiprocessing, numpy) still work. Every check runs real code in real bubblewrap workers and in
real Docker containers (which get the same deny list as a Docker profile)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gfcr.sandboxes import Limits

JOB_UIDS_FROM = 1_000_000  # the local sandbox runs each job as a fresh uid at or above this
DOCKER_UID = 65534  # the Docker backend's containers run as nobody
# x86_64 numbers; the code below asks the C library for them by name where it can.
SYSCALLS = r"""
import ctypes, errno, json, os, platform
if platform.machine() != "x86_64":
    print(json.dumps({"skip": platform.machine()})); raise SystemExit
NR = {"add_key": 248, "keyctl": 250, "request_key": 249, "unshare": 272, "setns": 308, "mount": 165,
      "umount2": 166, "pivot_root": 155, "ptrace": 101, "bpf": 321, "perf_event_open": 298,
      "kexec_load": 246, "init_module": 175, "finit_module": 313, "delete_module": 176, "swapon": 167,
      "reboot": 169, "acct": 163, "userfaultfd": 323, "open_by_handle_at": 304,
      "name_to_handle_at": 303, "iopl": 172, "ioperm": 173, "syslog": 103, "settimeofday": 164,
      "clock_settime": 227, "adjtimex": 159, "io_uring_setup": 425, "clone": 56, "clone3": 435,
      "personality": 135, "fsopen": 430, "quotactl": 179}
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(name, *args):
    ctypes.set_errno(0)
    result = libc.syscall(NR[name], *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
    return errno.errorcode.get(ctypes.get_errno(), "ok") if result < 0 else "ok"
"""


def run_json(sandbox, code: str) -> dict:
    result = sandbox.run(SYSCALLS + code, limits=Limits(wall_s=20))
    assert result.ok, result
    answer = json.loads(result.stdout.splitlines()[-1])
    if "skip" in answer:
        pytest.skip(f"system call numbers are written for x86_64, not {answer['skip']}")
    return answer


def key_users() -> set[int]:
    """The uids of sandbox jobs that hold kernel keys (/proc/key-users: one line per uid with keys)."""
    uids = {int(line.split(":")[0]) for line in Path("/proc/key-users").read_text().splitlines()}
    return {uid for uid in uids if uid >= JOB_UIDS_FROM or uid == DOCKER_UID}


def test_kernel_keyrings_are_denied_and_no_key_is_left_on_the_host(sandbox):
    before = key_users()
    answer = run_json(
        sandbox,
        """
KEY_SPEC_USER_KEYRING, KEY_SPEC_SESSION_KEYRING = -4, -3
print(json.dumps({
    "add_key": call("add_key", b"user", b"gfcr-probe", b"secret", 6, KEY_SPEC_USER_KEYRING),
    "keyctl": call("keyctl", 0, KEY_SPEC_SESSION_KEYRING, 1),  # KEYCTL_GET_KEYRING_ID, create
    "request_key": call("request_key", b"user", b"gfcr-probe", None, 0),
}))
""",
    )
    assert answer == {"add_key": "EPERM", "keyctl": "EPERM", "request_key": "EPERM"}
    assert key_users() == before, "a run left kernel keys (and their memory) on the host"


def test_namespaces_mounts_tracing_and_kernel_interfaces_are_denied(sandbox):
    answer = run_json(
        sandbox,
        """
CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWNET, SIGCHLD = 0x10000000, 0x00020000, 0x40000000, 17
print(json.dumps({
    "unshare(CLONE_NEWUSER)": call("unshare", CLONE_NEWUSER),
    "unshare(CLONE_NEWNS)": call("unshare", CLONE_NEWNS),
    "clone(CLONE_NEWUSER)": call("clone", CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0),
    "clone(CLONE_NEWNET)": call("clone", CLONE_NEWNET | SIGCHLD, 0, 0, 0, 0),
    "setns": call("setns", os.open("/proc/self/ns/uts", os.O_RDONLY), 0),
    "mount": call("mount", b"none", b"/tmp", b"tmpfs", 0, None),
    "umount2": call("umount2", b"/tmp", 0),
    "pivot_root": call("pivot_root", b"/tmp", b"/tmp"),
    "fsopen": call("fsopen", b"tmpfs", 0),
    "ptrace(PTRACE_TRACEME)": call("ptrace", 0, 0, 0, 0),
    "ptrace(PTRACE_ATTACH, parent)": call("ptrace", 16, os.getppid(), 0, 0),
    "bpf": call("bpf", 0, None, 0),
    "perf_event_open": call("perf_event_open", None, 0, -1, -1, 0),
    "io_uring_setup": call("io_uring_setup", 1, None),
    "userfaultfd": call("userfaultfd", 0),
    "kexec_load": call("kexec_load", 0, 0, None, 0),
    "init_module": call("init_module", None, 0, b""),
    "finit_module": call("finit_module", 0, b"", 0),
    "delete_module": call("delete_module", b"ext4", 0),
    "swapon": call("swapon", b"/tmp/swap", 0),
    "reboot": call("reboot", 0, 0, 0, None),
    "acct": call("acct", None),
    "quotactl": call("quotactl", 0, None, 0, None),
    "open_by_handle_at": call("open_by_handle_at", 0, None, 0),
    "name_to_handle_at": call("name_to_handle_at", -100, b"/", None, None, 0),
    "iopl": call("iopl", 3),
    "ioperm": call("ioperm", 0, 1, 1),
    "syslog": call("syslog", 3, None, 0),
    "settimeofday": call("settimeofday", None, None),
    "clock_settime": call("clock_settime", 0, None),
    "adjtimex": call("adjtimex", None),
    "personality(ADDR_NO_RANDOMIZE)": call("personality", 0x0040000),
    "personality(READ_IMPLIES_EXEC)": call("personality", 0x0400000),
}))
""",
    )
    assert {name: errno for name, errno in answer.items() if errno != "EPERM"} == {}


def test_clone3_says_enosys_so_that_libc_falls_back_to_clone(sandbox):
    answer = run_json(
        sandbox,
        """
import threading
worker = threading.Thread(target=lambda: None); worker.start(); worker.join()  # glibc: clone3, then clone
print(json.dumps({"clone3": call("clone3", None, 0), "default personality": call("personality", 0)}))
""",
    )
    assert answer == {"clone3": "ENOSYS", "default personality": "ok"}


def test_ordinary_programs_still_work_under_the_filter(sandbox):
    code = """
import concurrent.futures, multiprocessing, subprocess, sys
print(subprocess.run(["sh", "-c", "echo sub | tr a-z A-Z"], capture_output=True, text=True).stdout.strip())
with concurrent.futures.ThreadPoolExecutor(4) as pool:
    print(sum(pool.map(abs, range(-10, 0))))
with multiprocessing.Pool(2) as pool:
    print(pool.map(abs, [-1, -2]))
fresh = "import threading; t = threading.Thread(target=print, args=(3,)); t.start(); t.join()"
print(subprocess.run([sys.executable, "-c", fresh], capture_output=True, text=True).stdout.strip())
"""
    result = sandbox.run(code, limits=Limits(wall_s=30))
    assert result.ok and result.stdout == "SUB\n55\n[1, 2]\n3\n", result
    bash = sandbox.run(
        "x=$(echo hi | cat); ( echo $x ) & wait; cat /proc/self/status | grep '^Seccomp:'", language="bash"
    )
    assert bash.ok and bash.stdout == "hi\nSeccomp:\t2\n", bash  # 2: a filter applies (mode "filter")


def test_numpy_works_under_the_filter_where_the_interpreter_has_it(sandbox):
    probe = sandbox.run("import numpy")
    if not probe.ok:
        pytest.skip("the sandbox's interpreter has no numpy (Debian: apt-get install python3-numpy)")
    result = sandbox.run("import numpy as np\nm = np.random.default_rng(0).random((200, 200))\n"
                         "print(round(float(np.linalg.inv(m) @ m @ np.ones(200) @ np.ones(200))))")  # fmt: skip
    assert result.ok and result.stdout == "200\n", result


def test_the_filters_are_built_once_per_process():
    from gfcr.sandboxes import seccomp

    assert seccomp.program_filter() is seccomp.program_filter()
    assert seccomp.worker_filter() is seccomp.worker_filter()
