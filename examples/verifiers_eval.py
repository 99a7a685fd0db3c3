"""Evaluate a gfcr env with `verifiers` 0.4 against any OpenAI-compatible server.

Run from the verifiers venv (`bash scripts/setup_verifiers.sh` makes it), e.g. against
`gfcr serve runs/tiny-model --name tiny --port 8000` started from the main venv:

    .venv-verifiers/bin/python examples/verifiers_eval.py gfcr/ToolUse-v0 \\
        --base-url http://127.0.0.1:8000/v1 --model tiny -n 4 --max-tokens 32

`-e KEY=VALUE` are the env's keywords, as in `gfcr run` (VALUE read as JSON where it can be).
The same evaluation through verifiers' own command line (the `gfcr-verifiers` plugin):

    .venv-verifiers/bin/vf-eval gfcr-verifiers --env.taskset.env-id gfcr/ToolUse-v0 \\
        --client.base-url http://127.0.0.1:8000/v1 -m tiny -n 4 --sampling.max-tokens 32 --no-push

Prints one JSON object: per rollout the gfcr task id, verifiers' reward (gfcr's, through the
task's rubric), its metrics (the episode's signals), the turns, and any errors; then the mean.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from typing import Any

import verifiers.v1 as vf

from gfcr.apps.options import parse_env_args
from gfcr.integrations.verifiers import load_environment


async def evaluate(args: argparse.Namespace) -> dict[str, Any]:
    """`args.num_tasks` episodes of the env's first tasks, `args.concurrency` at a time."""
    env = load_environment(args.env_id, **parse_env_args(args.env_arg))
    os.environ.setdefault("GFCR_VF_API_KEY", "EMPTY")  # local servers take any key
    client = vf.EvalClientConfig(base_url=args.base_url, api_key_var="GFCR_VF_API_KEY")
    sampling = vf.SamplingConfig(temperature=args.temperature, max_tokens=args.max_tokens)
    ctx = vf.ModelContext(model=args.model, client=client, sampling=sampling)
    tasks = list(env.taskset.take(args.num_tasks))
    gate = asyncio.Semaphore(args.concurrency)
    async with env.serving():
        slots = [env.slots(task)[0] for task in tasks]
        episodes = await asyncio.gather(*(env.run_slot(slot, ctx, gate) for slot in slots))
    rollouts = [_summary(episode) for episode in episodes]
    mean = sum(r["reward"] for r in rollouts) / len(rollouts)
    return {"env_id": args.env_id, "model": args.model, "mean_reward": mean, "rollouts": rollouts}


def _summary(episode: vf.Episode) -> dict[str, Any]:
    trace = episode.traces[0] if episode.traces else None
    gfcr = trace.info.get("gfcr", {}) if trace else {}
    return {
        "task_id": episode.task.data.task_id,
        "ok": episode.ok,
        "reward": trace.reward if trace else 0.0,
        "metrics": dict(trace.metrics) if trace else {},
        "turns": len(gfcr.get("actions", ())),
        "actions": gfcr.get("actions", []),
        "model_calls": len(trace.calls) if trace else 0,
        "tools": [tool.name for tool in trace.tools] if trace else [],
        "errors": [e.message for e in episode.errors] + [e.message for e in (trace.errors if trace else [])],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("env_id", help="a gfcr env id, e.g. gfcr/ToolUse-v0 (see `gfcr list`)")
    parser.add_argument("--base-url", required=True, help="the server's OpenAI base URL, ending in /v1")
    parser.add_argument("--model", required=True, help="the model name the server serves")
    parser.add_argument("-e", "--env-arg", action="append", default=[], help="env keyword KEY=VALUE")
    parser.add_argument("-n", "--num-tasks", type=int, default=4, help="episodes: the env's first N tasks")
    parser.add_argument("--concurrency", type=int, default=4, help="episodes in flight at once")
    parser.add_argument("--max-tokens", type=int, default=256, help="tokens per model turn")
    parser.add_argument("--temperature", type=float, default=1.0, help="sampling temperature")
    print(json.dumps(asyncio.run(evaluate(parser.parse_args())), indent=2))


if __name__ == "__main__":
    main()
