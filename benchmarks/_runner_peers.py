"""Peer side of `benchmarks/runner.py`: GEM's vector env stepping its MathEnv, in the peer venv.

Run by `runner.py` as `benchmarks/.venv-peers/bin/python benchmarks/_runner_peers.py` with a JSON job on
stdin (`problems`: [{"question", "gold"}], `num_envs`, `steps_per_env`, `configs`) and one JSON object on
stdout: steps/s per configuration. Each env is `gem.envs.math_env.MathEnv(dataset=Dataset.from_list(...))`
(problems in memory, no download), vectorized by GEM's own `SyncVectorEnv` / `AsyncVectorEnv` (a thread
per env) with its default same-step autoreset; every action is the problem's gold answer in `\\boxed{}`,
as the oracle's are on the gfcr side.
"""

from __future__ import annotations

import json
import sys
import time
from functools import partial


def measure(problems: list[dict], num_envs: int, steps_per_env: int, vector: str, use_mp: bool) -> dict:
    from datasets import Dataset
    from gem.envs.math_env import MathEnv
    from gem.vector.async_vector_env import AsyncVectorEnv
    from gem.vector.sync_vector_env import SyncVectorEnv

    dataset = Dataset.from_list([{"problem": p["question"], "answer": p["gold"]} for p in problems])
    gold = {p["question"]: p["gold"] for p in problems}
    cls = SyncVectorEnv if vector == "sync" else AsyncVectorEnv
    fns = [partial(MathEnv, dataset=dataset, seed=i, use_mp=use_mp) for i in range(num_envs)]
    envs = cls(env_ids=["math"] * num_envs, env_fns=fns)
    observations, _ = envs.reset()
    correct = 0
    started = time.perf_counter()
    for _ in range(steps_per_env):
        actions = [f"The answer is \\boxed{{{gold[o]}}}." for o in observations]
        observations, rewards, *_ = envs.step(actions)
        correct += int(sum(rewards))
    seconds = time.perf_counter() - started
    steps = num_envs * steps_per_env
    return {
        "steps": steps,
        "seconds": seconds,
        "steps_per_s": steps / seconds,
        "reward_mean": correct / steps,
    }


def main() -> None:
    job = json.load(sys.stdin)
    results = {}
    for config in job["configs"]:
        name = f"GEM {config['vector']} vector env (use_mp={config['use_mp']})"
        results[name] = measure(job["problems"], job["num_envs"], job["steps_per_env"], **config)
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
