"""Memory and process limits per sandbox worker through cgroups, where they are writable.

rlimits bound one process; a cgroup bounds everything a run starts, together. Each worker
gets its own group (under the group this process is in), in cgroup v2 or in v1's `memory`
and `pids` hierarchies. Where neither can be written (no root, a locked-down container),
`Cgroup.create` returns None and the local backend falls back to an address-space rlimit.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)
ROOT = Path("/sys/fs/cgroup")
_serial = itertools.count()


@dataclass
class Cgroup:
    """One worker's cgroup: a directory per hierarchy (one in v2; `memory` and `pids` in v1)."""

    memory: Path
    pids: Path
    version: int

    @classmethod
    def create(cls, name: str = "") -> Cgroup | None:
        """A fresh group for one worker, or None where cgroups cannot be written."""
        name = name or f"gfcr-{os.getpid()}-{next(_serial)}"
        try:
            if (ROOT / "cgroup.controllers").exists():
                return cls._create_v2(name)
            return cls._create_v1(name)
        except OSError as e:
            logger.debug("no cgroup for sandbox workers (%s); memory is bounded by rlimits only", e)
            return None

    @classmethod
    def _create_v1(cls, name: str) -> Cgroup:
        paths = []
        for controller in ("memory", "pids"):
            parent = ROOT / controller / _own_path(controller).lstrip("/")
            if not (parent / "cgroup.procs").exists():
                raise OSError(f"no cgroup v1 {controller} hierarchy at {parent}")
            _remove_stale(parent)
            path = parent / name
            path.mkdir()
            paths.append(path)
        return cls(paths[0], paths[1], 1)

    @classmethod
    def _create_v2(cls, name: str) -> Cgroup:
        parent = ROOT / _own_path("").lstrip("/")
        enabled = (parent / "cgroup.subtree_control").read_text().split()
        if not {"memory", "pids"} <= set(enabled):
            (parent / "cgroup.subtree_control").write_text("+memory +pids")  # fails if parent has processes
        _remove_stale(parent)
        path = parent / name
        path.mkdir()
        return cls(path, path, 2)

    def procs_files(self) -> list[Path]:
        """The files a process writes its pid to, to join this group."""
        return sorted({self.memory / "cgroup.procs", self.pids / "cgroup.procs"})

    def set_limits(self, memory_bytes: int, max_processes: int) -> None:
        """Bound the group's memory (swap included, where the kernel accounts it) and processes."""
        if self.version == 2:
            _write(self.memory / "memory.max", memory_bytes)
            _write(self.memory / "memory.swap.max", 0, optional=True)
        else:
            limit, with_swap = (
                self.memory / "memory.limit_in_bytes",
                self.memory / "memory.memsw.limit_in_bytes",
            )
            try:  # v1 requires memsw >= limit at every moment: order the writes by direction
                _write(with_swap, memory_bytes, optional=True)
                _write(limit, memory_bytes)
            except OSError:
                _write(limit, memory_bytes)
                _write(with_swap, memory_bytes, optional=True)
        _write(self.pids / "pids.max", max_processes)

    def memory_usage(self) -> int:
        name = "memory.current" if self.version == 2 else "memory.usage_in_bytes"
        return int((self.memory / name).read_text())

    def oom_kills(self) -> int:
        """How many processes the kernel has killed in this group for want of memory."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        with contextlib.suppress(OSError):
            for line in (self.memory / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        return 0

    def remove(self, timeout_s: float = 2.0) -> None:
        """Delete the group once its processes are gone (they are killed first)."""
        deadline = time.monotonic() + timeout_s
        for path in {self.memory, self.pids}:
            while path.exists():
                try:
                    path.rmdir()
                except OSError:
                    if time.monotonic() > deadline:
                        logger.debug("cgroup %s still busy; left behind", path)
                        break
                    _kill_members(path)
                    time.sleep(0.01)


def _own_path(controller: str) -> str:
    """This process's group in `controller`'s hierarchy ("" is v2's unified hierarchy)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controllers == controller or (not controller and controllers == ""):
            return path
    return "/"


def _remove_stale(parent: Path) -> None:
    """Remove empty groups left by gfcr processes that died without cleaning up."""
    for path in parent.glob("gfcr-*-*"):
        pid = path.name.split("-")[1]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            with contextlib.suppress(OSError):  # not empty, or already gone
                path.rmdir()


def _write(path: Path, value: int, optional: bool = False) -> None:
    if optional and not path.exists():
        return
    path.write_text(str(value))


def _kill_members(path: Path) -> None:
    with contextlib.suppress(OSError):
        for pid in (path / "cgroup.procs").read_text().split():
            with contextlib.suppress(OSError):
                os.kill(int(pid), 9)
