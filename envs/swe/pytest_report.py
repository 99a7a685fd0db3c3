"""A pytest plugin that reports each test as it goes, one JSON line per event (runs in the sandbox).

The kit loads it by path (`gfcr.envs.swe.kit`, with every other plugin's autoload off) and reads
the file named by $GFCR_PYTEST_REPORT while pytest runs: `{"start": id}` when a test begins,
`{"finish": id}` when it is torn down, `{"collecting": path}` and `{"collected": path}` around
the import of each test file, and `{"id": id, "outcome": …, "message": …}` for each outcome. An
outcome is "passed", "failed", "skipped" or "error" (a failure outside the test's
call: set-up, tear-down, or a test file that cannot be collected, recorded under the file's
path); a later line for the same test replaces an earlier one. The message holds a failure's `E`
lines. The time each test may take is kept from outside this process, by the kit, which sees
the `start` and `collecting` lines: nothing a test does to its own process (blocking SIGALRM, say)
can stretch it.
Standard library and pytest only.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

MAX_MESSAGE = 600


def _message(report: Any) -> str:
    """The `E ` lines of a failure (what went wrong, without the traceback's source lines)."""
    text = getattr(report, "longreprtext", "") or ""
    lines = [line[1:].strip() for line in text.splitlines() if line.startswith("E ")]
    message = "\n".join(lines) or (text.strip().splitlines() or [""])[-1]
    return message[:MAX_MESSAGE]


def _write(event: dict[str, str]) -> None:
    path = os.environ.get("GFCR_PYTEST_REPORT")
    if path:
        with open(path, "a", encoding="utf-8") as file:  # flushed at once: the kit reads it live
            file.write(json.dumps(event) + "\n")


def _outcome(nodeid: str, outcome: str, report: Any) -> None:
    _write({"id": nodeid, "outcome": outcome, "message": _message(report) if report.failed else ""})


def pytest_runtest_logstart(nodeid: str, location: Any) -> None:
    _write({"start": nodeid})


def pytest_runtest_logfinish(nodeid: str, location: Any) -> None:
    _write({"finish": nodeid})


def pytest_runtest_logreport(report: Any) -> None:
    if report.when == "call":
        _outcome(report.nodeid, report.outcome, report)
    elif report.outcome == "skipped":
        _outcome(report.nodeid, "skipped", report)
    elif report.failed:
        _outcome(report.nodeid, "error", report)


def pytest_collectstart(collector: Any) -> None:
    if isinstance(collector, pytest.File):
        _write({"collecting": collector.nodeid})


def pytest_collectreport(report: Any) -> None:
    if report.failed:
        _outcome(report.nodeid, "error", report)
    _write({"collected": report.nodeid})
