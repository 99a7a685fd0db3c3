"""What asynchronous training buys: wall time to a fixed number of trained samples, synchronous
(`[async] max_staleness = 0`) beside rollouts running 1 and 2 steps ahead of the updates.

Run from the repository root:

    .venv/bin/python benchmarks/async_training.py --json docs/bench_async_overlap.json
    .venv/bin/python benchmarks/async_training.py --served --env tooluse --steps 10 --prompts 4 \
        --group-size 8 --max-tokens 64 --json docs/bench_async_served.json

`--served` generates on a `gfcr serve --allow-weight-updates` of the same model in a process of
its own (`[rollout] backend = "served"`, the weights pushed after every update): a policy whose
latency is another process's, as a served engine's is. With `--env tooluse` the envs are light,
so a step is the server's generation, then the trainer's update.

The workload is env-heavy: `gfcr/SWE-v0` on one project (`--dataset`, default parse) with
`max_turns = 2`, so every episode ends in a verdict, the project's own test suite run in a fresh
sandbox (about a second of pytest), after two policy turns over a prompt of about 2,400 tokens.
The policy is a tiny model (`gfcr tiny-model`, written fresh; `--hidden-size 128`, `--layers 4`:
0.7 M parameters), big enough that an update over the step's samples, about 20,000 tokens,
takes about as long as the step's rollouts, in which the envs are busy about a third of the time.
Its text is random, so no episode is solved: Kimi k1.5's group length term, on completions cut at
different lengths by a stop string (`--stop`), gives every group a reward spread, so every update
runs forward, backward and AdamW's step, and the new weights are pushed to the rollout copy. The
modes run one after another in this process, same seed, same settings.

Per mode, over the steps (each trains `--prompts` × `--group-size` samples):

- wall seconds from the first step's start to the last step's end (the batch the generator was
  making ahead when the run ended is not waited for, nor counted as trained);
- the policy's and the envs' idle fractions: 1 − Σ `generate/policy_busy_s` / wall and
  1 − Σ `generate/env_busy_s` / wall (busy: at least one policy batch, or env call, in flight for
  a batch that was trained on);
- the trainer's wait for its batches (Σ `async/wait_s`; synchronous: the whole rollout, Σ
  `perf/rollout_s`), the updates' time (Σ `perf/step_s` − that wait) and the rollouts' (Σ
  `perf/rollout_s`, their generation's wall time);
- the cores the machine used on average (from /proc/stat, everything on the machine included).

An asynchronous update does more than a synchronous one: every sample it trains on is stale, so
it first recomputes their old logprobs under the current weights (decoupled PPO's proximal policy)
and weighs them against the behaviour policy's (`[async] correction = "tis"`): one more forward
pass. The row "synchronous, recompute" (`optim.recompute_old_logprobs = true`, `--sync-recompute`)
does that forward pass too, without overlap: the update's work of the asynchronous rows, timed
alone. The floor: the rollouts timed alone (the synchronous run's Σ rollout) and those updates
timed alone; perfect overlap would take the larger, no overlap their sum.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from rich import box
from rich.console import Console
from rich.table import Table

from gfcr.agents.policies.tiny_model import write_tiny_model
from gfcr.trainers import TrainConfig, Trainer

PER_STEP = ("perf/", "async/", "generate/", "credit/samples", "update/skipped")  # kept in the JSON


def cpu_jiffies() -> tuple[int, int] | None:
    """(busy, total) CPU time of the whole machine so far, in jiffies; None without /proc/stat."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except OSError:
        return None
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


@dataclass(frozen=True)
class Mode:
    """One row: how far rollouts run ahead, and whether the update recomputes the old logprobs
    (as it does for every stale sample; synchronous, only when asked)."""

    max_staleness: int
    recompute: bool = False

    @property
    def name(self) -> str:
        if self.max_staleness:
            return f"max_staleness {self.max_staleness}"
        return "synchronous, recompute" if self.recompute else "synchronous"


ENVS = {  # --env: the env-heavy workload, and a light one for a latency-bound (served) policy
    "swe": lambda args: {
        "id": "gfcr/SWE-v0",
        "kwargs": {"dataset": args.dataset, "max_turns": args.max_turns},
    },
    "tooluse": lambda args: {"id": "gfcr/ToolUse-v0", "kwargs": {"max_turns": args.max_turns}},
}


@contextlib.contextmanager
def served(model: Path, threads: int) -> Iterator[str]:
    """`gfcr serve MODEL --allow-weight-updates` in a process of its own (`threads` torch
    threads), once it answers: its URL."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    command = [
        sys.executable,
        "-m",
        "gfcr",
        "serve",
        str(model),
        "--allow-weight-updates",
        "--port",
        str(port),
    ]
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            if process.poll() is not None:
                raise RuntimeError(f"gfcr serve exited with {process.returncode}")
            time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        process.wait(30)


def train_config(
    model: Path, args: argparse.Namespace, mode: Mode, out: Path, server: str | None = None
) -> TrainConfig:
    samples = args.prompts * args.group_size
    backend = {"backend": "served", "server_url": server} if server else {}
    return TrainConfig.from_dict(
        {
            "model": {"path": str(model)},
            "env": {**ENVS[args.env](args), "num_tasks": args.num_tasks},
            "rollout": {
                "prompts_per_step": args.prompts,
                "group_size": args.group_size,
                "max_tokens": args.max_tokens,
                "stop": [args.stop],
                "concurrency": samples,
                "num_env_workers": samples,
                **backend,
            },
            # Kimi k1.5's group length term, on completions of lengths that vary (`--stop`): random
            # text is never solved, and without a reward spread every advantage is 0, no update runs
            "judge": {"length": {"kind": "kimi", "weight": 0.1}},
            "optim": {"micro_batch_size": args.micro_batch_size, "recompute_old_logprobs": mode.recompute},
            "async": {"max_staleness": mode.max_staleness},
            "log": {"tensorboard": False, "progress": False},
            "steps": args.steps,
            "seed": args.seed,
            "threads": args.threads,
            "out_dir": str(out / mode.name.replace(" ", "_").replace(",", "")),
            "checkpoint_every": 0,
        }
    )


def run_mode(
    model: Path, args: argparse.Namespace, mode: Mode, out: Path, server: str | None = None
) -> dict[str, Any]:
    """Train `args.steps` steps in `mode` (generating on `server`, a gfcr serve, where given); the
    wall time and sums of the step metrics."""
    load = os.getloadavg()
    trainer = Trainer(train_config(model, args, mode, out, server), resume=False)
    trainer.begin()
    parameters = sum(p.numel() for p in trainer.model.parameters())
    cpu_before, started = cpu_jiffies(), time.perf_counter()
    history = [trainer.rl_step() for _ in range(args.steps)]
    wall = time.perf_counter() - started
    cpu_after = cpu_jiffies()
    trained_episodes = trainer.samples_total
    trainer.close()  # the batch being made ahead runs to its end: not timed, not trained
    generated = trainer.pipeline.samples_total

    def total(key: str) -> float:
        return sum(float(m.get(key, 0.0)) for m in history)

    rollout = total("perf/rollout_s")
    # synchronous: the update waits for the whole rollout
    waited = total("async/wait_s") if mode.max_staleness else rollout
    cores = None
    if cpu_before is not None and cpu_after is not None:
        busy, all_ = (after - before for after, before in zip(cpu_after, cpu_before, strict=True))
        cores = (os.cpu_count() or 1) * busy / max(all_, 1)
    return {
        "mode": mode.name,
        "max_staleness": mode.max_staleness,
        "recompute_old_logprobs": mode.recompute,
        "parameters": parameters,
        "steps": args.steps,
        "wall_s": wall,
        "s_per_step": wall / args.steps,
        "trained_samples": int(total("credit/samples")),
        "trained_episodes": trained_episodes,
        "episodes_made_ahead_unused": generated - trained_episodes,
        "policy_busy_s": total("generate/policy_busy_s"),
        "env_busy_s": total("generate/env_busy_s"),
        "policy_idle": 1 - total("generate/policy_busy_s") / wall,
        "env_idle": 1 - total("generate/env_busy_s") / wall,
        "rollout_s": rollout,
        "wait_s": waited,
        "update_s": total("perf/step_s") - waited,
        "generator_idle_s": float(history[-1].get("async/generator_idle_s", 0.0)),
        "updates_skipped": int(total("update/skipped")),  # steps with no reward spread at all
        "cores_used": cores,
        "load_average_before": load,  # 1, 5, 15 minutes: what else ran on the machine
        "per_step": [{k: m[k] for k in sorted(m) if k.startswith(PER_STEP)} for m in history],
    }


def table(results: list[dict[str, Any]]) -> Table:
    sync = results[0]
    grid = Table(title="Asynchronous training: wall time to the same trained samples", box=box.MARKDOWN)
    columns = [
        "mode", "wall (s)", "s/step", "trained samples", "policy idle", "env idle",
        "trainer waited (s)", "updates (s)", "rollouts (s)", "cores used", "wall / sync",
    ]  # fmt: skip
    for column in columns:
        grid.add_column(column, justify="right" if column != "mode" else "left")
    for r in results:
        cores = f"{r['cores_used']:.2f}" if r["cores_used"] is not None else "-"
        grid.add_row(
            r["mode"],
            f"{r['wall_s']:.1f}",
            f"{r['s_per_step']:.2f}",
            str(r["trained_samples"]),
            f"{r['policy_idle']:.0%}",
            f"{r['env_idle']:.0%}",
            f"{r['wait_s']:.1f}",
            f"{r['update_s']:.1f}",
            f"{r['rollout_s']:.1f}",
            cores,
            f"{r['wall_s'] / sync['wall_s']:.2f}",
        )
    return grid


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--staleness", type=int, nargs="+", default=[0, 1, 2], help="Modes; 0 first.")
    parser.add_argument(
        "--sync-recompute",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="Also a synchronous run whose update recomputes the old logprobs, as asynchronous ones do.",
    )
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--prompts", type=int, default=2, help="Prompts per step.")
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=32, help="Completion tokens per turn.")
    parser.add_argument(
        "--stop", default=")", help="A stop string: random completions end at different lengths."
    )
    parser.add_argument("--max-turns", type=int, default=2, help="Turns per episode; the last is judged.")
    parser.add_argument("--env", choices=sorted(ENVS), default="swe", help="The workload's env.")
    parser.add_argument(
        "--served",
        action="store_true",
        help="Generate on a gfcr serve in another process (weights pushed after each update).",
    )
    parser.add_argument("--dataset", default="parse", help="The SWE-v0 project.")
    parser.add_argument("--num-tasks", type=int, default=10)
    parser.add_argument("--hidden-size", type=int, default=128, help="The tiny model's width.")
    parser.add_argument("--layers", type=int, default=4, help="The tiny model's layers.")
    parser.add_argument("--micro-batch-size", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (the process's).")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="Write the results here.")
    args = parser.parse_args()
    if args.staleness[0] != 0:
        parser.error("the first mode must be 0 (synchronous): the others are compared with it")
    console = Console(width=200)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        model = write_tiny_model(
            out / "model", hidden_size=args.hidden_size, num_layers=args.layers, num_heads=4
        )
        modes = [Mode(0), *([Mode(0, recompute=True)] if args.sync_recompute else [])]
        modes += [Mode(staleness) for staleness in args.staleness[1:]]
        results = []
        with served(model, args.threads) if args.served else contextlib.nullcontext() as server:
            for mode in modes:  # each run's begin() pushes its initial weights to the server
                results.append(run_mode(model, args, mode, out, server))
                console.log(f"{mode.name}: {results[-1]['wall_s']:.1f} s")
    sync = results[0]
    # the asynchronous update's work alone: the synchronous one that recomputes, where it ran
    updates = results[1]["update_s"] if args.sync_recompute else sync["update_s"]
    floor = {
        "rollouts_alone_s": sync["rollout_s"],
        "updates_alone_s": updates,
        "perfect_overlap_s": max(sync["rollout_s"], updates),
        "no_overlap_s": sync["rollout_s"] + updates,
    }
    console.print(table(results))
    console.print(
        f"floor (the parts timed alone, synchronous): rollouts {floor['rollouts_alone_s']:.1f} s, "
        f"updates {floor['updates_alone_s']:.1f} s; perfect overlap {floor['perfect_overlap_s']:.1f} s, "
        f"none {floor['no_overlap_s']:.1f} s"
    )
    if args.json:
        report = {
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores",
            "load_average_after": os.getloadavg(),
            "settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
            "parameters": results[0]["parameters"],
            "floor": floor,
            "results": results,
        }
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        console.print(f"written: {args.json}")


if __name__ == "__main__":
    main()
