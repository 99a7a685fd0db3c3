"""Does the vision demo's model look? Its held-out accuracy with the pictures, and with each picture
replaced by a blank one of the same size.

Run from the repository root after `gfcr train examples/vision_tiny_cpu.toml` (one or more runs):

    .venv/bin/python benchmarks/vision_demo.py runs/vision-tiny-cpu [more run dirs] [--tasks 256]

For each run, the model of its last checkpoint answers `--tasks` held-out questions (tasks after the
training pool in the run's seeded order, as its evaluation takes them), greedily: once with the
pictures, once with every picture replaced by a white one. Six colours: a model that does not look
scores about 1/6 at best (it can only guess), one that looks scores well above.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

import gymnasium as gym
from PIL import Image as PILImage

import gfcr  # noqa: F401  (registers the envs)
from gfcr.agents import episodes_for_env
from gfcr.agents.policies.hf import HFPolicy
from gfcr.core import Image, Message, Request, SamplingParams
from gfcr.envs.vision import VisionVerifier


def blank(message: Message) -> Message:
    """`message` with each picture replaced by a white one of its size."""
    if not message.images:
        return message
    parts = [
        p if isinstance(p, str) else Image.from_pil(PILImage.new("RGB", p.size, "white"))
        for p in message.content
    ]
    return replace(message, content=tuple(parts))


def accuracy(run: Path, tasks: int) -> tuple[float, float, int]:
    config = json.loads((run / "config.json").read_text(encoding="utf-8"))  # what the trainer wrote
    env_kwargs, seed, pool = config["env"]["kwargs"], config["seed"], config["env"]["num_tasks"]
    checkpoint = sorted((run / "checkpoints").iterdir())[-1]
    policy = HFPolicy(checkpoint / "model")
    env = gym.make("gfcr/Vision-v0", **env_kwargs)
    verifier = VisionVerifier()
    questions, tasks_seen = [], []
    for spec in episodes_for_env("gfcr/Vision-v0", tasks, kwargs=env_kwargs, seed=seed, skip=pool):
        _, info = env.reset(options={"task_id": spec.task_id})
        questions.append(tuple(info["messages"]))
        tasks_seen.append(info["task"])
    greedy = SamplingParams(temperature=0.0, max_tokens=8)
    scores = []
    for view in (lambda m: m, blank):
        requests = [Request(tuple(view(m) for m in messages), sampling=greedy) for messages in questions]
        answers = policy.generate(requests)
        right = [
            verifier.check(task, answer.text).reward for task, answer in zip(tasks_seen, answers, strict=True)
        ]
        scores.append(sum(right) / len(right))
    return scores[0], scores[1], int(checkpoint.name.split("-")[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--tasks", type=int, default=256)
    args = parser.parse_args()
    print(f"{'run':32} {'step':>5} {'with pictures':>14} {'blank pictures':>15}")
    for run in args.runs:
        seeing, blind, step = accuracy(run, args.tasks)
        print(f"{str(run):32} {step:5d} {seeing:14.3f} {blind:15.3f}")


if __name__ == "__main__":
    main()
