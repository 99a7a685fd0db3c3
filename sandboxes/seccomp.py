"""The seccomp filters of the local sandbox: system calls a job may not make, compiled once per process.

Two deny lists, built with libseccomp (through `pyseccomp`) and handed to each worker as BPF:

- `worker_filter()`: bubblewrap applies it (`--seccomp FD`) to the whole worker, supervisor
  included: kernel keyrings, tracing, BPF, perf, modules, kexec, swap, reboot, clocks, raw I/O,
  io_uring, file handles, new mount API, `umount2`/`pivot_root`, `clone` with `CLONE_NEW*`.
- `program_filter()`: the same plus `unshare`, `setns` and `mount`, which the supervisor itself
  needs to build each job's namespaces; the supervisor installs it in each program process just
  before the job's code runs (stacked on the worker's filter, after `no_new_privs`).

Everything the list names fails with EPERM, as under Docker's default profile, of which it
denies at least as much; `clone3` fails with ENOSYS instead (its flags sit in memory a filter
cannot read), so that libc falls back to `clone`, whose flags it can. Other architectures'
system calls (32-bit `int 0x80`, x32) kill the process. Building a filter takes about a
millisecond; each is built once per process, and installing one costs a job a single `prctl`.

>>> len(program_filter()) % 8, len(program_filter()) > len(worker_filter())  # struct sock_filter: 8 bytes
(0, True)
"""

from __future__ import annotations

import errno
import functools
import json
import tempfile

from gfcr.errors import SandboxUnavailableError

PROGRAM_FILTER_PATH = "/run/gfcr/seccomp-program.bpf"  # where the supervisor finds its BPF
# Docker's default profile denies these (moby profiles/seccomp/default.json: not allowed, or
# only with a capability a job never has); names missing on this architecture are skipped.
DENIED = (
    "add_key keyctl request_key "  # kernel keyrings: shared between runs, and never freed
    "ptrace process_vm_readv process_vm_writev kcmp pidfd_getfd "  # other processes' memory
    "bpf perf_event_open userfaultfd lookup_dcookie "
    "io_uring_setup io_uring_enter io_uring_register "
    "init_module finit_module delete_module create_module get_kernel_syms query_module "
    "kexec_load kexec_file_load reboot swapon swapoff acct quotactl quotactl_fd nfsservctl "
    "syslog vhangup uselib ustat sysfs _sysctl sethostname setdomainname "
    "settimeofday clock_settime clock_adjtime adjtimex stime "
    "iopl ioperm vm86 vm86old "
    "open_by_handle_at name_to_handle_at fanotify_init "
    "mbind set_mempolicy get_mempolicy move_pages migrate_pages set_mempolicy_home_node "
    "umount umount2 pivot_root fsopen fsconfig fsmount fspick move_mount open_tree mount_setattr"
).split()
DENIED_TO_PROGRAMS = ("unshare", "setns", "mount")  # the supervisor builds each job's namespaces with them
CLONE_NEW = {  # clone() with any of these flags makes a namespace
    "CLONE_NEWNS": 0x00020000,
    "CLONE_NEWCGROUP": 0x02000000,
    "CLONE_NEWUTS": 0x04000000,
    "CLONE_NEWIPC": 0x08000000,
    "CLONE_NEWUSER": 0x10000000,
    "CLONE_NEWPID": 0x20000000,
    "CLONE_NEWNET": 0x40000000,
}
# personality(2): Docker allows only PER_LINUX (0), PER_LINUX32 (8), UNAME26 (0x20000) and both;
# every other value sets a bit outside 0x20008 (the flags that turn off ASLR or make reads
# executable are all above it). A filter rule cannot test one argument twice, so the query
# 0xffffffff, which Docker allows, is denied too.
PERSONALITY_ALLOWED_MAX = 0x20008
PERSONALITY_DENIED_LOW_BITS = tuple(1 << bit for bit in range(17) if bit != 3)


@functools.cache
def worker_filter() -> bytes:
    """The BPF of the filter bubblewrap applies to a whole worker (supervisor included)."""
    return _compile(DENIED)


@functools.cache
def program_filter() -> bytes:
    """The BPF of the filter each job's program runs under (the worker's, and namespaces, mounts)."""
    return _compile((*DENIED, *DENIED_TO_PROGRAMS))


@functools.cache
def docker_profile() -> str:
    """The same deny list as a Docker seccomp profile (JSON), for the Docker backend's containers.

    It replaces the engine's default profile, which allows `ptrace` of a run's own processes and
    `personality` queries; with it both backends deny the same calls (`unshare`, `setns` and
    `mount` too: a container needs none of them).
    """

    def rule(names: list[str], errno_ret: int = errno.EPERM, args: list[dict] | None = None) -> dict:
        return {"names": names, "action": "SCMP_ACT_ERRNO", "errnoRet": errno_ret, "args": args or []}

    def masked(flag: int, index: int = 0) -> dict:
        return {"index": index, "value": flag, "valueTwo": flag, "op": "SCMP_CMP_MASKED_EQ"}

    rules = [rule([*DENIED, *DENIED_TO_PROGRAMS]), rule(["clone3"], errno.ENOSYS)]
    rules += [rule(["clone"], args=[masked(flag)]) for flag in CLONE_NEW.values()]
    rules.append(
        rule(["personality"], args=[{"index": 0, "value": PERSONALITY_ALLOWED_MAX, "op": "SCMP_CMP_GT"}])
    )
    rules += [rule(["personality"], args=[masked(bit)]) for bit in PERSONALITY_DENIED_LOW_BITS]
    return json.dumps({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": rules})


def _compile(denied: tuple[str, ...] | list[str]) -> bytes:
    try:
        import pyseccomp as seccomp  # type: ignore[import-untyped]  # ctypes over libseccomp.so.2
    except (ImportError, RuntimeError) as e:  # RuntimeError: pyseccomp found no libseccomp
        raise SandboxUnavailableError(
            f"the local sandbox's seccomp filter needs libseccomp and pyseccomp ({e}); install them "
            "(Debian/Ubuntu: apt-get install libseccomp2; pip install pyseccomp) or run `make setup`"
        ) from e
    deny = seccomp.ERRNO(errno.EPERM)
    syscalls = seccomp.SyscallFilter(seccomp.ALLOW)
    syscalls.set_attr(seccomp.Attr.ACT_BADARCH, seccomp.KILL_PROCESS)
    syscalls.set_attr(seccomp.Attr.CTL_OPTIMIZE, 2)  # a binary tree of syscall numbers, not a list
    for name in denied:
        if seccomp.resolve_syscall(seccomp.Arch.NATIVE, name) >= 0:  # negative: not on this architecture
            syscalls.add_rule(deny, name)
    for flag in CLONE_NEW.values():  # x86_64, arm64 …: clone's flags are its first argument
        syscalls.add_rule(deny, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    syscalls.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    syscalls.add_rule(deny, "personality", seccomp.Arg(0, seccomp.GT, PERSONALITY_ALLOWED_MAX))
    for bit in PERSONALITY_DENIED_LOW_BITS:
        syscalls.add_rule(deny, "personality", seccomp.Arg(0, seccomp.MASKED_EQ, bit, bit))
    with tempfile.TemporaryFile() as file:
        syscalls.export_bpf(file)
        file.seek(0)
        return file.read()
