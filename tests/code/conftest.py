"""Fixtures for the code env tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

JOB_UIDS_FROM = 1_000_000  # the local sandbox runs each job as a fresh uid at or above this


@pytest.fixture
def job_processes():
    """A function listing the pids of this test process's sandbox jobs (processes of a job uid)."""

    def pids() -> list[int]:
        table = {}
        for entry in Path("/proc").iterdir():
            try:
                status = (entry / "status").read_text() if entry.name.isdigit() else None
            except OSError:
                continue
            if status is None:
                continue
            fields = {k: v.split() for k, _, v in (line.partition(":") for line in status.splitlines())}
            table[int(entry.name)] = (int(fields.get("PPid", ["0"])[0]), int(fields.get("Uid", ["0"])[0]))
        return [pid for pid, (_, uid) in table.items() if uid >= JOB_UIDS_FROM and _descends(pid, table)]

    return pids


def _descends(pid: int, table: dict[int, tuple[int, int]]) -> bool:
    """Whether `pid` descends from this process (other test runs may have sandboxes too)."""
    while pid > 1 and pid in table:
        pid = table[pid][0]
        if pid == os.getpid():
            return True
    return False
