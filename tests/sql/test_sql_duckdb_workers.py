"""DuckDB queries run in worker processes (so that a stuck one can be killed): none may outlive its owner.

Linux only (processes are read from /proc). Stopping a query by killing its worker is tested in
tests/adversarial/test_sql_attacks.py.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from gfcr.envs.sql.data.build import ensure_file_database
from gfcr.envs.sql.engines.database import Database

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc")


def _processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, state) of every process."""
    table = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state, parent = stat.read_text().rsplit(")", 1)[1].split()[:2]
        except OSError:
            continue
        table[int(stat.parent.name)] = (int(parent), state)
    return table


def _children(pid: int | None = None) -> set[int]:
    """The processes whose parent is `pid` (default: this one), zombies included."""
    pid = os.getpid() if pid is None else pid
    return {child for child, (parent, _) in _processes().items() if parent == pid}


def _alive(pids: set[int], within_s: float = 0.0) -> set[int]:
    """Those of `pids` still running (a zombie has ended) after waiting up to `within_s` for them."""
    deadline = time.monotonic() + within_s
    while True:
        table = _processes()
        running = {pid for pid in pids if pid in table and table[pid][1] != "Z"}
        if not running or time.monotonic() >= deadline:
            return running
        time.sleep(0.05)


@pytest.fixture
def chinook_url():
    return f"duckdb:///{ensure_file_database('chinook', 'duckdb')}"


def test_closing_a_duckdb_database_ends_its_workers(chinook_url):
    before = _children()
    database = Database.from_url(chinook_url)
    counts: list[object] = []
    threads = [
        threading.Thread(target=lambda: counts.append(database.execute("SELECT COUNT(*) FROM Track").rows))
        for _ in range(3)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert counts == [[(3503,)]] * 3
    workers = _children() - before
    assert workers, "DuckDB queries are expected to run in worker processes"
    database.close()
    assert not _children() & workers, "a worker is still a process (running or unreaped) after close()"
    assert database.execute("SELECT COUNT(*) FROM Genre").rows == [(25,)]  # usable again, as after dispose()
    database.close()
    assert _children() <= before


@pytest.mark.parametrize("ending", ["exit", "killed"])
def test_duckdb_workers_end_with_their_host_process(chinook_url, ending):
    script = f"""
        import time
        from gfcr.envs.sql.engines.database import Database
        database = Database.from_url({chinook_url!r})
        database.execute("SELECT COUNT(*) FROM Genre")
        print("queried", flush=True)
        {"time.sleep(60)" if ending == "killed" else "pass"}  # then exit without closing the database
    """
    host = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert host.stdout is not None
        host.stdout.readline()  # the query has run: its worker exists
        workers = _children(host.pid)
        assert workers, "DuckDB queries are expected to run in worker processes"
        if ending == "killed":
            host.send_signal(signal.SIGKILL)
        assert host.wait(30) in (0, -signal.SIGKILL)
        assert not _alive(workers, within_s=5.0), f"workers of a host that ended ({ending}) still run"
    finally:
        host.kill()
        host.wait(30)


def _count_genres(database: Database, results: multiprocessing.SimpleQueue) -> None:
    results.put(database.execute("SELECT COUNT(*) FROM Genre").rows)


def test_a_forked_child_runs_its_own_duckdb_workers(chinook_url):
    database = Database.from_url(chinook_url)
    try:
        assert database.execute("SELECT COUNT(*) FROM Genre").rows == [(25,)]
        workers = _children()
        context = multiprocessing.get_context("fork")
        results = context.SimpleQueue()
        child = context.Process(target=_count_genres, args=(database, results))
        child.start()
        child.join(60)
        assert child.exitcode == 0 and results.get() == [(25,)]
        assert _alive(workers) == workers, "the child ended its parent's workers"
        assert database.execute("SELECT COUNT(*) FROM Album").rows == [(347,)]
        assert _alive(workers) == workers
    finally:
        database.close()
