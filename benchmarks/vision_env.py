"""Episode cost of `gfcr/Vision-v0` per kind, and JSONL size per episode with images by hash vs inline.

Run from the repository root:

    .venv/bin/python benchmarks/vision_env.py [--tasks 60] [--group-size 8] [--json docs/bench_vision.json]

Per kind, over `--tasks` tasks spread over its levels, single process, `time.perf_counter`: each
task's fastest of `--repeats` runs (the runs interleaved across tasks, so the env's one-picture
cache never serves a reset), then the median over tasks; the minimum keeps other jobs on shared
cores out of the figures:
- build: generating the task (question, answer, scene) from its id;
- render: drawing the prompt's picture (256 x 256) and encoding it as PNG;
- check: `VisionVerifier.check` of the gold reply;
- episode: `reset(options={"task_id": ...})` + `step(gold reply)` on the env as made, i.e. what
  a rollout of `scripted:oracle` costs the env (render + prompt + check + observations);
- zoom step: one `zoom` call on the picture's centre quarter (re-rendered 2x, PNG, observation).
JSONL size: `--group-size` episodes of each task (as a GRPO group samples one prompt), each
zooming once then answering (two images an episode), written by `write_jsonl` (each image stored
once in images/, lines refer by hash) against the same lines with every image inline as a base64
data URL (`Message.to_dict(inline_images=True)`, what crosses a wire).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import gymnasium as gym

import gfcr  # noqa: F401  (registers the envs)
from gfcr.agents.runner.rollout import rollout
from gfcr.core import Completion, Request, Trajectory, write_jsonl
from gfcr.envs.vision import KINDS, VisionEnv, VisionVerifier, generated_task
from gfcr.envs.vision.tasks import prompt_image

ZOOM_CALL = '<tool_call>{"name": "zoom", "arguments": {"x": 64, "y": 64, "w": 128, "h": 128}}</tool_call>'
FIRST_SEED = 100_000  # seeds no test or doc uses, so nothing is cached from an earlier call


class ZoomThenAnswer:
    """Zooms on the centre quarter once, then answers with the gold: two images an episode."""

    name, version = "zoom-then-answer", "1"

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        return [
            Completion(ZOOM_CALL if len(r.messages) <= 2 else VisionEnv.oracle(r.task, r.messages))  # type: ignore[arg-type]
            for r in requests
        ]


def typical_ms(run: Callable[[Any], Any], items: Sequence[Any], repeats: int) -> float:
    """The median over `items` of each one's fastest run of `run(item)`, in milliseconds."""
    best = [float("inf")] * len(items)
    for _ in range(repeats):
        for i, item in enumerate(items):
            started = time.perf_counter()
            run(item)
            best[i] = min(best[i], time.perf_counter() - started)
    return 1000 * statistics.median(best)


def kind_costs(kind: str, tasks: int, repeats: int) -> dict[str, float]:
    levels = KINDS[kind].levels
    ids = [(level, FIRST_SEED + n) for n in range(tasks) for level in [1 + n % levels]]
    built = [generated_task(kind, level, seed) for level, seed in ids]
    verifier = VisionVerifier()
    env = gym.make("gfcr/Vision-v0", kinds=kind, first_seed=FIRST_SEED, num_seeds=tasks)

    def episode(task: Any) -> None:
        env.reset(options={"task_id": task.id})
        env.step(VisionEnv.oracle(task, []))

    def zoom(task: Any) -> None:
        env.reset(options={"task_id": task.id})
        started = time.perf_counter()
        env.step(ZOOM_CALL)
        zoom_s.append(time.perf_counter() - started)

    zoom_s: list[float] = []
    for _ in range(repeats):
        for task in built:
            zoom(task)
    zoom_ms = 1000 * statistics.median(min(zoom_s[i :: len(built)]) for i in range(len(built)))
    costs = {
        "build_ms": typical_ms(
            lambda t: generated_task(*t), [(kind, level, seed) for level, seed in ids], repeats
        ),
        "render_ms": typical_ms(lambda task: prompt_image(task, 256), built, repeats),
        "check_ms": typical_ms(lambda task: verifier.check(task, VisionEnv.oracle(task, [])), built, repeats),
        "episode_ms": typical_ms(episode, built, repeats),
        "zoom_step_ms": zoom_ms,
        "png_kb": statistics.mean(len(prompt_image(task, 256).data) for task in built) / 1024,
    }
    env.close()
    return costs


def inline_line(trajectory: Trajectory) -> str:
    data = trajectory.to_dict()
    data["messages"] = [m.to_dict(inline_images=True) for m in trajectory.messages]
    return json.dumps(data, ensure_ascii=False)


def jsonl_sizes(tasks: int, group_size: int) -> dict[str, float]:
    env = gym.make("gfcr/Vision-v0", num_seeds=1000)
    source = env.unwrapped.tasks  # type: ignore[attr-defined]
    ids = [source[int(i * len(source) / tasks)].id for i in range(tasks)]
    trajectories = [
        rollout(env, ZoomThenAnswer(), env_id="gfcr/Vision-v0", task_id=task_id, seed=k)
        for task_id in ids
        for k in range(group_size)
    ]
    assert all(t.total_reward == 1.0 for t in trajectories)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "run.jsonl"
        write_jsonl(trajectories, path)
        lines = path.stat().st_size
        images = sum(f.stat().st_size for f in (Path(folder) / "images").iterdir())
    inline = sum(len(inline_line(t).encode()) + 1 for t in trajectories)
    n = len(trajectories)
    return {
        "episodes": n,
        "images_per_episode": sum(len(t.images) for t in trajectories) / n,
        "by_hash_line_kb": lines / n / 1024,
        "by_hash_with_images_kb": (lines + images) / n / 1024,
        "inline_kb": inline / n / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=60, help="tasks per kind (spread over its levels)")
    parser.add_argument("--repeats", type=int, default=5, help="runs of each measurement; the fastest counts")
    parser.add_argument("--group-size", type=int, default=8, help="episodes per task in the JSONL size run")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args()
    costs = {kind: kind_costs(kind, args.tasks, args.repeats) for kind in KINDS}
    sizes = jsonl_sizes(len(KINDS) * 4, args.group_size)
    print("| kind | build ms | render ms | check ms | episode ms | zoom step ms | PNG KB |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for kind, c in costs.items():
        print(
            f"| {kind} | {c['build_ms']:.3f} | {c['render_ms']:.2f} | {c['check_ms']:.3f} | "
            f"{c['episode_ms']:.2f} | {c['zoom_step_ms']:.2f} | {c['png_kb']:.1f} |"
        )
    print(f"\nJSONL, {sizes['episodes']} episodes ({sizes['images_per_episode']:.0f} images each):")
    print("| storage | KB per episode |\n|---|---:|")
    print(f"| by hash: the line | {sizes['by_hash_line_kb']:.2f} |")
    print(f"| by hash: the line + images/ (each image once) | {sizes['by_hash_with_images_kb']:.2f} |")
    print(f"| inline base64 | {sizes['inline_kb']:.2f} |")
    if args.json:
        meta = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "python": platform.python_version()}
        args.json.write_text(json.dumps({"meta": meta, "args": vars(args) | {"json": str(args.json)},
                                         "kinds": costs, "jsonl": sizes}, indent=2) + "\n")  # fmt: skip


if __name__ == "__main__":
    main()
