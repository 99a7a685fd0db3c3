"""Images through the runner: the tiny vision-language model on `gfcr/Vision-v0`, against the same
model's bare `generate` (the floor) and a text model of the same size on the same questions.

Run from the repository root:

    .venv/bin/python benchmarks/vision_runner.py [--episodes 256] [--json docs/bench_vision_runner.json]

Workload: `--episodes` single-turn episodes of "What colour is the object?" (kind `attribute`,
level 1, `tools=()`), 64 concurrent, 8 tokens a turn at temperature 1, one torch thread, CPU.
- runner, vision model: `gfcr tiny-model --vision` (LLaVA, 16 image tokens a picture) through
  `Runner` (env resets, rendering, PNG encoding, prompt encoding by the processor, pixel tensors,
  generation, checking); images/s = episodes/s (one picture each).
- bare generate, vision model: the same requests (messages with their images, rendered once
  beforehand) in batches of 64 straight to `HFPolicy.generate`: the policy alone, no env.
- runner, text model: `gfcr tiny-model` of the same size through the runner on the same env: it is
  shown the question's text only, so the difference is what seeing the picture costs.
Each figure is the best of `--repeats` runs (other jobs on shared cores only slow a run down).
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import gymnasium as gym
import torch

import gfcr  # noqa: F401  (registers the envs)
from gfcr.agents import Runner, RunnerConfig, episodes_for_env
from gfcr.agents.policies.hf import HFPolicy
from gfcr.agents.policies.tiny_model import write_tiny_model, write_tiny_vision_model
from gfcr.agents.policies.vision import VisionChat
from gfcr.core import Request, SamplingParams

ENV_ID = "gfcr/Vision-v0"
KWARGS: dict[str, Any] = {"kinds": "attribute", "levels": [1], "tools": []}
SAMPLING = SamplingParams(temperature=1.0, max_tokens=8, seed=0)
CONCURRENCY = 64


def best_of(repeats: int, run: Any) -> float:
    """The shortest wall time of `repeats` calls of `run()`, each starting with no image cached (a
    training run meets new pictures every step; only a group's samples and an episode's turns repeat)."""
    times = []
    for _ in range(repeats):
        VisionChat._pixels.cache_clear()
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times)


def through_runner(policy: HFPolicy, episodes: int) -> tuple[float, Any]:
    specs = episodes_for_env(ENV_ID, episodes, kwargs=KWARGS)
    config = RunnerConfig(concurrency=CONCURRENCY, sampling=SAMPLING)
    result = Runner(policy, config).run(specs)
    return result.episodes, result


def bare_requests(episodes: int) -> list[Request]:
    env = gym.make(ENV_ID, **KWARGS)
    requests = []
    for spec in episodes_for_env(ENV_ID, episodes, kwargs=KWARGS):
        _, info = env.reset(seed=spec.seed, options={"task_id": spec.task_id})
        requests.append(Request(tuple(info["messages"]), sampling=SAMPLING))
    env.close()
    return requests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    folder = Path(tempfile.mkdtemp())
    vision = HFPolicy(write_tiny_vision_model(folder / "vlm"))
    text = HFPolicy(write_tiny_model(folder / "text"))
    params = {
        name: sum(p.numel() for p in policy.model.parameters())
        for name, policy in (("vision", vision), ("text", text))
    }

    requests = bare_requests(args.episodes)
    through_runner(vision, CONCURRENCY)  # warm-up: first calls allocate
    runner_vision = best_of(args.repeats, lambda: through_runner(vision, args.episodes))
    bare = best_of(
        args.repeats,
        lambda: [
            vision.generate(requests[i : i + CONCURRENCY]) for i in range(0, len(requests), CONCURRENCY)
        ],
    )
    through_runner(text, CONCURRENCY)
    runner_text = best_of(args.repeats, lambda: through_runner(text, args.episodes))
    _, result = through_runner(vision, CONCURRENCY)
    assert result.failed == 0, result.failures
    prompt_tokens = {
        name: len(policy.encode_prompt(requests[0].messages, ()))
        for name, policy in (("vision", vision), ("text", text))
    }

    rows = [
        ("runner, vision model", runner_vision),
        ("bare generate, vision model", bare),
        ("runner, text model (no picture)", runner_text),
    ]
    print(
        f"{args.episodes} episodes, {CONCURRENCY} concurrent, {SAMPLING.max_tokens} tokens a turn, one thread"
    )
    print(f"parameters: vision {params['vision']:,}, text {params['text']:,}; prompt tokens {prompt_tokens}")
    print(f"{'':34} {'wall s':>8} {'episodes/s':>11} {'images/s':>9} {'vs bare':>8}")
    for name, seconds in rows:
        images = args.episodes / seconds if "vision" in name else 0.0
        print(f"{name:34} {seconds:8.2f} {args.episodes / seconds:11.1f} {images:9.1f} {seconds / bare:8.2f}")
    if args.json:
        record = {
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "machine": platform.platform(),
            "episodes": args.episodes,
            "parameters": params,
            "prompt_tokens": prompt_tokens,
            "seconds": {name: seconds for name, seconds in rows},
        }
        args.json.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
