"""A `python` tool for agents, the text an agent sees for a run's result, and the limits of a run
that a tool call starts (`call_limits`: within the step's deadline).

>>> print(format_result(ExecResult("timeout", None, "partial\\n", "", 2.0, 2.0, 9.0)))
partial
[status: timeout — the run was stopped]
"""

from __future__ import annotations

from dataclasses import replace

from gfcr.core import ToolSpec
from gfcr.core.tools import time_left
from gfcr.errors import SandboxError, ToolError
from gfcr.sandboxes.base import ExecResult, Limits, Sandbox
from gfcr.sandboxes.factory import shared_sandbox

TOOL_LIMITS = Limits(wall_s=10.0, cpu_s=10.0, memory_mb=512, max_processes=32, max_output_bytes=20_000)
_STATUS_TEXT = {
    "error": "the program exited with status {code}",
    "timeout": "the run was stopped",
    "memory": "the run ran out of memory",
    "output_limit": "the output was too long; the run was stopped",
    "killed": "the run was killed (signal {signal})",
}


def format_result(result: ExecResult) -> str:
    """A run's output as an agent should see it: stdout, then stderr, then the status if not ok."""
    parts = [result.stdout.rstrip("\n")] if result.stdout else []
    if result.stderr:
        parts.append("[stderr]\n" + result.stderr.rstrip("\n"))
    if result.status != "ok":
        code = result.exit_code
        signal = -code if code is not None and code < 0 else "?"
        parts.append(
            f"[status: {result.status} — {_STATUS_TEXT[result.status].format(code=code, signal=signal)}]"
        )
    return "\n".join(parts) if parts else "(no output)"


def call_limits(limits: Limits) -> Limits:
    """`limits` for a run that a tool call starts: its wall and CPU time cut to what the call may
    still take (`gfcr.core.tools.time_left`), so a run cannot overrun its env's step budget.

    >>> call_limits(TOOL_LIMITS) == TOOL_LIMITS  # outside a step's tool call: unchanged
    True
    """
    seconds = time_left(limits.wall_s)
    if seconds >= limits.wall_s:
        return limits
    return replace(limits, wall_s=seconds, cpu_s=min(limits.cpu_s, seconds))


def python_tool(sandbox: Sandbox | None = None, limits: Limits = TOOL_LIMITS) -> ToolSpec:
    """The `python` tool: runs a program in a sandbox and returns what it printed.

    Each call is a fresh program (no state between calls). The sandbox defaults to the
    process's shared one, made on the first call.
    """

    def python(code: str) -> str:
        """Run a Python program in an isolated sandbox and return what it prints (use print()).

        Args:
            code: A complete Python program; each call starts fresh, without the previous calls' state.
        """
        try:
            result = (sandbox or shared_sandbox()).run(code, limits=call_limits(limits))
        except SandboxError as e:
            raise ToolError(f"python: the sandbox failed: {e}") from e
        return format_result(result)

    return ToolSpec.from_function(python)
