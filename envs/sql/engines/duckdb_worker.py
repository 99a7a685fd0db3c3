"""The DuckDB worker: a process that owns one read-only DuckDB database and runs the queries sent to it.

DuckDB notices `interrupt()` only between vectors, so one scalar call that builds a huge string
(`repeat('x', 800000000)`, `lpad(…)`) runs on for seconds past any time limit. The host therefore
runs DuckDB queries in workers like this one (`duckdb_pool`) and kills a worker whose query
outlives its limit. The worker interrupts its own query at the limit first, so most slow queries
end cheaply and the worker lives on.

It runs as a script, `python duckdb_worker.py FD PATH CONFIG_JSON`, and imports only the standard
library and duckdb: importing gfcr would add over a second to every start. On the socket FD
(`multiprocessing.connection` framing, pickled tuples):

    worker -> host, once: ("ready",) | ("failed", traceback)
    host -> worker:       (sql, max_rows, timeout_s)
    worker -> host:       ("rows", columns, rows, truncated) | ("error", kind, message)

where `kind` is "time limit", "memory limit", "refused" (a read-only or permission guard) or "error".
`run_query` is also how the host runs a query in process, on a DuckDB engine it did not open.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import sys
import traceback
from collections.abc import Callable
from contextlib import AbstractContextManager
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

Reply = tuple[Any, ...]
Deadline = Callable[[float, Callable[[], object]], AbstractContextManager[None]]  # as Watchdog.deadline
_PARENT_CHECK_S = 1.0  # how often an idle worker checks that its host is still alive


def run_query(database: Any, sql: str, max_rows: int, timeout_s: float, deadline: Deadline) -> Reply:
    """Run `sql` on a fresh connection to `database`, interrupted at `timeout_s`; the reply to send."""
    import duckdb

    fired: list[bool] = []

    def interrupt() -> None:
        fired.append(True)
        session.interrupt()

    # A fresh connection to the same database per query: DuckDB allows TEMP tables and session
    # settings even read-only, and they must not outlive the query (nor shadow a real table).
    session = database.duplicate()
    try:
        with deadline(timeout_s, interrupt):
            session.execute(sql)
            rows = session.fetchmany(max_rows + 1)
            columns = tuple(d[0] for d in session.description or ())
    except duckdb.Error as e:
        message = str(e).splitlines()[0]
        if fired or isinstance(e, duckdb.InterruptException):
            return ("error", "time limit", message)
        if isinstance(e, duckdb.OutOfMemoryException):  # memory_limit, with nowhere to spill
            return ("error", "memory limit", message)
        if isinstance(e, duckdb.PermissionException) or "read-only" in message or "locked" in message:
            return ("error", "refused", message)
        return ("error", "error", message)
    finally:
        session.close()
    return ("rows", columns, rows[:max_rows], len(rows) > max_rows)


def main(argv: list[str]) -> None:
    """Open the database, say "ready", then answer queries until the host closes the channel."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the host's to handle: it ends workers
    channel = Connection(int(argv[1]))
    try:
        import duckdb

        database = duckdb.connect(argv[2], read_only=True, config=json.loads(argv[3]))
        deadline = _watchdog().deadline
    except Exception:
        channel.send(("failed", traceback.format_exc()))
        return
    channel.send(("ready",))
    host = os.getppid()
    while True:
        while not channel.poll(_PARENT_CHECK_S):
            if os.getppid() != host:  # the host died and a copy of its end keeps the channel open
                return
        try:
            sql, max_rows, timeout_s = channel.recv()
        except EOFError:  # the host closed the channel: its engine was disposed, or it exited
            return
        reply = run_query(database, sql, max_rows, timeout_s, deadline)
        try:
            channel.send(reply)
        except OSError:  # the host is gone
            return
        except Exception as e:  # a value pickle cannot carry; nothing was sent yet
            channel.send(("error", "error", f"the result cannot be sent to gfcr: {e}"))


def _watchdog() -> Any:
    """gfcr's `watchdog.WATCHDOG`, loaded from its file (importing gfcr's package would be slow)."""
    path = Path(__file__).with_name("watchdog.py")
    spec = importlib.util.spec_from_file_location("gfcr_sql_watchdog", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load watchdog.py beside {__file__}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.WATCHDOG


if __name__ == "__main__":
    main(sys.argv)
