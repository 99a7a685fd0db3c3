"""A pytest plugin that records each test's outcome and failure message as JSON (runs in the sandbox).

Loaded with `-p gfcr_pytest_report`. It stops any test running past $GFCR_TEST_TIMEOUT_S seconds
(a failure saying so: a patch that makes a test hang costs seconds, not the verdict), and when the
session ends writes {"outcomes": {node id: outcome}, "messages": {node id: the failure's `E`
lines}} to the file named by $GFCR_PYTEST_REPORT. An outcome is "passed", "failed", "skipped" or
"error" (a failure outside the test's call: set-up, tear-down, or a test file that cannot be
collected, recorded under the file's path). Standard library and pytest only.
"""

from __future__ import annotations

import json
import os
import signal
import threading
from collections.abc import Iterator
from typing import Any

import pytest

_outcomes: dict[str, str] = {}
_messages: dict[str, str] = {}
MAX_MESSAGE = 600


def _message(report: Any) -> str:
    """The `E ` lines of a failure (what went wrong, without the traceback's source lines)."""
    text = getattr(report, "longreprtext", "") or ""
    lines = [line[1:].strip() for line in text.splitlines() if line.startswith("E ")]
    message = "\n".join(lines) or (text.strip().splitlines() or [""])[-1]
    return message[:MAX_MESSAGE]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: Any) -> Iterator[None]:
    limit = float(os.environ.get("GFCR_TEST_TIMEOUT_S") or 0)
    if limit <= 0 or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise TimeoutError(f"the test ran past {limit:g} s and was stopped")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def pytest_runtest_logreport(report: Any) -> None:
    if report.when == "call":
        _outcomes[report.nodeid] = report.outcome
    elif report.outcome == "skipped":
        _outcomes[report.nodeid] = "skipped"
    elif report.failed:
        _outcomes[report.nodeid] = "error"
    else:
        return
    if report.failed:
        _messages[report.nodeid] = _message(report)


def pytest_collectreport(report: Any) -> None:
    if report.failed:
        _outcomes[report.nodeid] = "error"
        _messages[report.nodeid] = _message(report)


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    path = os.environ.get("GFCR_PYTEST_REPORT")
    if path:
        with open(path, "w", encoding="utf-8") as file:
            json.dump({"outcomes": _outcomes, "messages": _messages}, file)
