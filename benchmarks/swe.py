"""gfcr/SWE-v0's cost against the floor: the same project's tests run directly, on the host.

Per bundled project (its first task), medians over `--repeats`:
- floor: `python3 -c pass` (Debian's interpreter, as the sandbox uses) and the project's tests run
  directly on the host (`python3 -m pytest` over the task's test files, in an unpacked copy, no sandbox);
- gfcr: reset plus the first tool call (the session starts and unpacks the repository), a
  `run_tests` call (the task's test files, in the agent's session), the verdict (`submit`: a fresh
  sandbox, the diff applied, the tests run), and a whole oracle episode (reset, apply_patch, submit);
- task generation: tasks per minute and mutants tried per second, generating `--generate` tasks
  afresh (no cache).

    python benchmarks/swe.py --repeats 5 --generate 4 --json docs/bench_swe.json

No peer runs here: SWE-bench, SWE-Gym and R2E-Gym need network access and a Docker image per
repository, which this machine cannot fetch.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import gymnasium as gym

import gfcr  # noqa: F401  (registers the envs)
from gfcr.envs.swe import PROJECTS, SWEEnv, generate, project_tasks, snapshot_of
from gfcr.envs.swe.evaluation import test_file
from gfcr.sandboxes import make_sandbox

PYTHON = "/usr/bin/python3"


def call(name: str, **arguments: object) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def median_s(repeats: int, work: Callable[[], object]) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def direct_tests(name: str, files: list[str], repeats: int) -> float:
    """The project's tests run on the host, no sandbox: the floor of any test run."""
    task = project_tasks(name, num_tasks=1)[0]
    pythonpath = ":".join(PROJECTS[name].pythonpath) or "."
    with tempfile.TemporaryDirectory() as root:
        for path, data in snapshot_of(task).files().items():
            (Path(root) / path).parent.mkdir(parents=True, exist_ok=True)
            (Path(root) / path).write_bytes(data)
        command = [PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", *files]
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": pythonpath, "PYTHONDONTWRITEBYTECODE": "1"}
        run = lambda: subprocess.run(command, cwd=root, env=env, capture_output=True, check=False)  # noqa: E731
        return median_s(repeats, run)


def episode_costs(name: str, repeats: int) -> dict[str, float]:
    env = gym.make("gfcr/SWE-v0", dataset=name, tasks_per_project=1)
    task_id = f"swe/{name}-0"
    task = env.unwrapped.tasks.get(task_id)

    def first_call() -> None:
        env.reset(options={"task_id": task_id})
        env.step(call("list_files"))

    def test_run() -> None:
        env.step(call("run_tests"))

    def verdict() -> None:
        env.reset(options={"task_id": task_id})
        env.step(call("submit"))

    def oracle_episode() -> None:
        obs, info = env.reset(options={"task_id": task_id})
        env.step(SWEEnv.oracle(task, []))
        _, reward, *_ = env.step(call("submit"))
        assert reward == 1.0

    costs = {"reset_and_first_call_s": median_s(repeats, first_call)}
    costs["run_tests_s"] = median_s(repeats, test_run)  # in the session the last first_call left open
    costs["verdict_s"] = median_s(repeats, verdict)
    costs["oracle_episode_s"] = median_s(repeats, oracle_episode)
    env.close()
    return costs


def generation(name: str, num_tasks: int) -> dict[str, float]:
    tried: list[str] = []
    start = time.perf_counter()
    tasks = generate(PROJECTS[name], make_sandbox("local"), num_tasks, progress=tried.append)
    seconds = time.perf_counter() - start
    mutants = int(tried[-1].split("(")[1].split()[0]) if tried else 0
    return {
        "tasks": len(tasks),
        "mutants_tried": mutants,
        "seconds": seconds,
        "tasks_per_min": 60 * len(tasks) / seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--projects", nargs="*", default=list(PROJECTS), choices=list(PROJECTS))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--generate", type=int, default=4, help="tasks generated afresh per project")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    interpreter = median_s(args.repeats, lambda: subprocess.run([PYTHON, "-c", "pass"], check=True))
    results = {"python3 -c pass (s)": interpreter, "projects": {}}
    print(f"bare interpreter start: {interpreter * 1000:.0f} ms")
    columns = ["project", "tests (direct, s)", "reset + first call (s)", "run_tests (s)", "verdict (s)"]
    columns += ["oracle episode (s)", "verdict / direct", "generation (tasks/min)", "mutants tried / s"]
    print("| " + " | ".join(columns) + " |\n" + "|---" * len(columns) + "|")
    for name in args.projects:
        task = project_tasks(name, num_tasks=1)[0]
        files = sorted(
            {test_file(t) for t in [*task.metadata["fail_to_pass"], *task.metadata["pass_to_pass"]]}
        )
        direct = direct_tests(name, files, args.repeats)
        costs = episode_costs(name, args.repeats)
        made = generation(name, args.generate)
        results["projects"][name] = {"tests_direct_s": direct, **costs, "generation": made}
        cells = [PROJECTS[name].ref, f"{direct:.2f}"]
        cells += [
            f"{costs[key]:.2f}"
            for key in ("reset_and_first_call_s", "run_tests_s", "verdict_s", "oracle_episode_s")
        ]
        cells += [f"{costs['verdict_s'] / direct:.1f}", f"{made['tasks_per_min']:.1f}"]
        cells += [f"{made['mutants_tried'] / made['seconds']:.2f}"]
        print("| " + " | ".join(cells) + " |")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
