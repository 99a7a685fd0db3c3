"""Progress of long runs: a plain line every `--progress-interval-s` seconds when stderr is no terminal."""

from __future__ import annotations

import io
import re
import subprocess
import sys
import time

from rich.console import Console

from gfcr.agents.runner.progress import RunProgress
from gfcr.core import Trajectory

LINE = re.compile(
    r"gfcr progress · (?P<what>.+?): (?P<done>\d+)/(?P<total>\d+) episodes \(\d+%\), [\d.,]+ ep/s, [\d,]+ tok/s, "
    r"elapsed \S+, ETA \S+, success (?P<success>[\d.]+%|–)"
)


def gfcr(*args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "gfcr", *args]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)  # pipes: no terminal
    assert result.returncode == 0, result.stderr
    return result


def test_gfcr_run_writes_a_progress_line_periodically_and_at_the_end():
    result = gfcr("run", "gfcr/Math-v0", "-a", "scripted:oracle", "-n", "400", "-e", "split=AIME2024",
                  "--concurrency", "1", "--progress-interval-s", "0.05")  # fmt: skip
    lines = [m for m in map(LINE.match, result.stderr.splitlines()) if m]
    assert len(lines) >= 2, result.stderr  # at least one periodic line before the last
    assert all(m["what"] == "gfcr/Math-v0 · scripted:oracle" and m["total"] == "400" for m in lines)
    done = [int(m["done"]) for m in lines]
    assert done == sorted(done) and done[-1] == 400 and lines[-1]["success"] == "100.0%"


def test_gfcr_bench_writes_one_last_line_per_agent_when_the_interval_is_zero(tmp_path):
    result = gfcr("bench", "gfcr/Math-v0", "-a", "scripted:oracle", "-a", "scripted:random", "--num-tasks", "5",
                  "-e", "split=AIME2024", "--progress-interval-s", "0", "--report", str(tmp_path))  # fmt: skip
    lines = [m for m in map(LINE.match, result.stderr.splitlines()) if m]
    assert [(m["what"], m["done"], m["success"]) for m in lines] == [
        ("gfcr/Math-v0 · scripted:oracle (agent 1 of 2)", "5", "100.0%"),
        ("gfcr/Math-v0 · scripted:random (agent 2 of 2)", "5", "0.0%"),
    ], result.stderr


def test_in_a_terminal_the_live_bar_shows_done_of_total_and_eta_and_no_plain_lines():
    out = io.StringIO()
    terminal = Console(file=out, force_terminal=True, width=200)
    with RunProgress("demo", 3, terminal, interval_s=0.01) as progress:
        progress.advance(Trajectory("e", "t", ""), resumed=True)  # found in an earlier run's output
        time.sleep(0.2)  # rich redraws 10 times a second
        progress.advance(Trajectory("e", "t", ""))
        time.sleep(0.2)
    shown = out.getvalue()
    assert "2/3" in shown and "ETA" in shown and "success 0.0%" in shown and "gfcr progress" not in shown
