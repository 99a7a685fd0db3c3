"""A pytest plugin that records each test's outcome and failure message as JSON (runs in the sandbox).

Loaded with `-p gfcr_pytest_report`; writes {"outcomes": {node id: outcome}, "messages": {node id:
the failure's `E` lines}} to the file named by $GFCR_PYTEST_REPORT when the session ends. An
outcome is "passed", "failed", "skipped" or "error" (a failure outside the test's call: set-up,
tear-down, or a test file that cannot be collected, recorded under the file's path).
Standard library and pytest only.
"""

from __future__ import annotations

import json
import os
from typing import Any

_outcomes: dict[str, str] = {}
_messages: dict[str, str] = {}
MAX_MESSAGE = 600


def _message(report: Any) -> str:
    """The `E ` lines of a failure (what went wrong, without the traceback's source lines)."""
    text = getattr(report, "longreprtext", "") or ""
    lines = [line[1:].strip() for line in text.splitlines() if line.startswith("E ")]
    message = "\n".join(lines) or (text.strip().splitlines() or [""])[-1]
    return message[:MAX_MESSAGE]


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
