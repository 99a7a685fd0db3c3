"""What a screenshot observation costs in `gfcr/Browser-v0`, against the text observation.

Run from the repository root:

    .venv/bin/python benchmarks/browser_screenshot.py --json docs/bench_browser_screenshot.json

One run plays `--episodes` seeds of each MiniWoB page whose task is drawn (the "vision" dataset)
in every observation mode, the modes taking turns (`--rounds`) so that other load on the machine
weighs on all alike. Every mode takes the same actions: the screenshot solver's plan, made on a
replica of the page before the episode (untimed) and split to one call per step — pointer actions
at the screenshot's pixels and keys, which act alike whatever the agent is shown. It times each
`reset()` and `step()` (median and p90) and measures each step's observation: the UTF-8 bytes of its
text, the PNG bytes of its screenshot (what a policy is sent and a JSONL's images/ keeps, once
per distinct picture) and the bytes of the gym observation's pixel array. It also times turning
one screenshot's PNG into those pixels, which every step in the image modes does.

Modes: `observation="text"` (the accessibility text; the baseline), `"screenshot"`, `"screenshot"`
with `set_of_marks=True` (a second snapshot, of the boxes, and the marks drawn), and `"both"`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

MODES: dict[str, dict[str, Any]] = {
    "text": {"observation": "text"},
    "screenshot": {"observation": "screenshot"},
    "screenshot, set_of_marks": {"observation": "screenshot", "set_of_marks": True},
    "both": {"observation": "both"},
}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def plans(pages: tuple[str, ...], seeds: list[int]) -> dict[str, list[str]]:
    """Task id -> the screenshot solver's calls, made on replicas before any timing."""
    from gfcr.envs.browser.miniwob import miniwob_source, on_replica
    from gfcr.envs.browser.miniwob_oracle import plan_calls, plan_script

    tasks = miniwob_source(list(pages), max(seeds) + 1)
    calls = {}
    for page in pages:
        for seed in seeds:
            task = tasks.get(f"miniwob/{page}/{seed}")
            calls[task.id] = plan_calls(on_replica(task, plan_script(page)))
    return calls


def run_mode(kwargs: dict[str, Any], calls: dict[str, list[str]], pages: tuple[str, ...]) -> dict[str, list]:
    """Every episode of `calls` in one env made with `kwargs`, one call a step, timed and measured."""
    import gymnasium as gym

    import gfcr  # noqa: F401  (registers the envs)

    env = gym.make("gfcr/Browser-v0", dataset=list(pages), num_seeds=100, **kwargs)
    out: dict[str, list] = {"resets": [], "steps": [], "rewards": [], "text": [], "png": [], "pixels": []}

    def measure(obs: Any, info: dict[str, Any]) -> None:
        text = obs if isinstance(obs, str) else obs["text"]
        out["text"].append(len(text.encode()))
        images = [image for message in info["messages"] for image in message.images]
        out["png"].append(sum(len(image.data) for image in images))
        out["pixels"].append(0 if isinstance(obs, str) else obs["image"].nbytes)

    for task_id, actions in calls.items():
        started = time.perf_counter()
        env.reset(options={"task_id": task_id})
        out["resets"].append(time.perf_counter() - started)
        reward = 0.0
        for action in actions:
            started = time.perf_counter()
            obs, reward, terminated, truncated, info = env.step(action)
            out["steps"].append(time.perf_counter() - started)
            measure(obs, info)
            if terminated or truncated:
                break
        out["rewards"].append(float(reward))
    env.close()
    return out


def decode_ms(repeats: int = 50) -> float:
    """Median ms to turn one screenshot's PNG into the observation's pixel array."""
    import gymnasium as gym

    import gfcr  # noqa: F401
    from gfcr.envs.browser.view import SCREENSHOT_SHAPE
    from gfcr.envs.spaces import observation_for, text_and_image

    env = gym.make("gfcr/Browser-v0", dataset="click-color", num_seeds=1, observation="screenshot")
    _, info = env.reset(seed=0)
    env.close()
    (image,) = info["messages"][-1].images
    space = text_and_image(100, SCREENSHOT_SHAPE)
    times = []
    for _ in range(repeats):  # an Image keeps its bytes, not its pixels: each call decodes
        started = time.perf_counter()
        observation_for(space, "", [image])
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def summary(name: str, out: dict[str, list]) -> dict[str, Any]:
    return {
        "mode": name,
        "episodes": len(out["rewards"]),
        "solved": sum(r >= 1.0 for r in out["rewards"]),
        "reset_median_ms": statistics.median(out["resets"]) * 1000,
        "steps": len(out["steps"]),
        "step_median_ms": statistics.median(out["steps"]) * 1000,
        "step_p90_ms": percentile(out["steps"], 0.9) * 1000,
        "text_bytes_median": statistics.median(out["text"]),
        "png_bytes_median": statistics.median(out["png"]),
        "pixel_bytes": max(out["pixels"]),
    }


def print_table(rows: list[dict[str, Any]]) -> None:
    base = rows[0]["step_median_ms"]
    print(
        "| observation | solved | reset median | step median | step p90 | step vs text "
        "| text bytes | PNG bytes | pixel array bytes |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['mode']} | {row['solved']}/{row['episodes']} | {row['reset_median_ms']:.0f} ms "
            f"| {row['step_median_ms']:.0f} ms | {row['step_p90_ms']:.0f} ms "
            f"| {row['step_median_ms'] / base:.2f}x | {row['text_bytes_median']:,.0f} "
            f"| {row['png_bytes_median']:,.0f} | {row['pixel_bytes']:,} |"
        )


def main() -> None:
    from gfcr.envs.browser.miniwob_oracle import SCREENSHOT_PAGES

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=3, help="seeds per page, for every mode")
    parser.add_argument("--rounds", type=int, default=3, help="turns the modes take, sharing the seeds out")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    outs: dict[str, dict[str, list]] = {name: {} for name in MODES}
    for turn in range(args.rounds):
        seeds = list(range(args.episodes))[turn :: args.rounds]
        if not seeds:
            continue
        calls = plans(SCREENSHOT_PAGES, seeds)
        for name, kwargs in MODES.items():
            print(f"[screenshot bench] round {turn + 1}/{args.rounds}: {name} …", file=sys.stderr, flush=True)
            for key, values in run_mode(kwargs, calls, SCREENSHOT_PAGES).items():
                outs[name].setdefault(key, []).extend(values)
    rows = [summary(name, out) for name, out in outs.items()]
    decode = decode_ms()
    print_table(rows)
    print(f"\nPNG -> pixel array per observation: {decode:.1f} ms (median)")
    if args.json:
        record = {
            "when": datetime.now(UTC).isoformat(timespec="seconds"),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
            "load_average_1min_before_after": [round(load_before, 2), round(os.getloadavg()[0], 2)],
            "pages": list(SCREENSHOT_PAGES),
            "episodes_per_page": args.episodes,
            "decode_ms_median": round(decode, 2),
            "rows": rows,
        }
        args.json.write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main()
