"""gfcr envs over the OpenEnv protocol: added step latency, against openenv's own server, and scaling.

In one run, on loopback:
1. a `gfcr/Math-v0` step in-process vs through `gfcr serve-env` (`gfcr/Remote-v0` and openenv's
   `GenericEnvClient`): median added latency (goal <= 1 ms);
2. the same trivial echo env served by gfcr (`gfcr serve-env`) and by openenv's reference server
   (`openenv.core.env_server.create_fastapi_app` with an env written on openenv's classes),
   driven by the same openenv client;
3. episodes/s of the Runner (`scripted:oracle` on `gfcr/ToolUse-v0`) through 1, 2 and 4
   `gfcr serve-env` processes (`RunnerConfig(env_urls=...)`), and in-process for reference.

    .venv/bin/python benchmarks/remote.py [--steps 2000] [--episodes 400] [--json docs/bench_remote.json]
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from functools import partial

import gymnasium as gym
import httpx
from openenv.core.generic_client import GenericEnvClient

import gfcr  # noqa: F401  (registers the envs)
from gfcr.agents import Runner, RunnerConfig, episodes_for_env, make_policy
from gfcr.envs.remote.session import Session

ECHO_SERVERS = {
    # the same trivial env twice: on openenv's classes, and as a gfcr env served by gfcr serve-env
    "openenv": "benchmarks._remote_echo:openenv_app",
    "gfcr": "benchmarks._remote_echo:gfcr_app",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def process_server(command: list[str]) -> Iterator[str]:
    """Run a server command with `{port}` filled in; yield its url once /health answers."""
    port = free_port()
    process = subprocess.Popen([c.format(port=port) for c in command], stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        while True:
            if process.poll() is not None:
                raise RuntimeError(process.stderr.read() if process.stderr else "server exited")
            try:
                if httpx.get(f"{url}/health").status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(10)


def serve_env(env_id: str) -> list[str]:
    """A trainer-side server: `--send-gold`, since the Runner's episodes are played by the oracle."""
    return [sys.executable, "-m", "gfcr", "serve-env", env_id, "--port", "{port}", "--max-sessions", "256",
            "--send-gold"]  # fmt: skip


def serve_app(app: str) -> list[str]:
    return [sys.executable, "-m", "uvicorn", app, "--factory", "--port", "{port}", "--log-level", "warning"]


def median_ms(step: Callable[[], object], reset: Callable[[], object], n: int) -> float:
    """Median wall time of `step` in ms, each after a `reset` (not timed)."""
    times = []
    for _ in range(n):
        reset()
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def math_latency(n: int) -> dict[str, float]:
    action = "The answer is \\boxed{7}."
    local = gym.make("gfcr/Math-v0")
    result = {"in-process": median_ms(lambda: local.step(action), lambda: local.reset(seed=0), n)}
    with process_server(serve_env("gfcr/Math-v0")) as url:
        remote = gym.make("gfcr/Remote-v0", url=url)
        remote.reset(seed=0)
        result["gfcr/Remote-v0"] = median_ms(lambda: remote.step(action), lambda: remote.reset(seed=0), n)
        remote.close()
        with GenericEnvClient(base_url=url).sync() as client:
            result["openenv GenericEnvClient"] = median_ms(
                lambda: client.step({"text": action}), lambda: client.reset(seed=0), n
            )
    return result


def echo_latency(n: int) -> dict[str, float]:
    """The echo env's step through each server, driven by openenv's client and by gfcr's `Session`."""
    result = {}
    for name, app in ECHO_SERVERS.items():
        payload = {"message": "hello"} if name == "openenv" else {"text": "hello"}
        with process_server(serve_app(app)) as url:
            with GenericEnvClient(base_url=url).sync() as client:
                client.reset()
                step = partial(client.step, payload)
                result[f"{name} server, openenv client"] = median_ms(step, lambda: None, n)
            session = Session(url)
            session.reset()
            result[f"{name} server, gfcr Session"] = median_ms(
                partial(session.step, payload), lambda: None, n
            )
            session.close()
    return result


def scaling(episodes: int) -> dict[str, float]:
    specs = episodes_for_env("gfcr/ToolUse-v0", episodes)
    oracle = make_policy("scripted:oracle")

    def rate(config: RunnerConfig) -> float:
        start = time.perf_counter()
        result = Runner(oracle, config).run(specs)
        assert all(t.total_reward == 1.0 for t in result.trajectories)
        return episodes / (time.perf_counter() - start)

    result = {"in-process": rate(RunnerConfig(concurrency=32))}
    for servers in (1, 2, 4):
        with ExitStack() as stack:
            urls = [stack.enter_context(process_server(serve_env("gfcr/ToolUse-v0"))) for _ in range(servers)]
            result[f"{servers} server(s)"] = rate(RunnerConfig(concurrency=32, env_urls=tuple(urls)))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--episodes", type=int, default=400)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    math = math_latency(args.steps)
    echo = echo_latency(args.steps)
    scale = scaling(args.episodes)
    print(f"Math-v0 step, median ms over {args.steps}:")
    for name, ms in math.items():
        print(f"  {name:36s} {ms:7.3f}  (+{ms - math['in-process']:.3f} ms over in-process)")
    print(f"trivial echo env step (one env on openenv's server and on gfcr's), median ms over {args.steps}:")
    for name, ms in echo.items():
        same_client = echo[name.replace("gfcr server", "openenv server")]
        print(f"  {name:36s} {ms:7.3f}  (x{ms / same_client:.2f} of openenv's server, same client)")
    print(f"Runner episodes/s, scripted:oracle on gfcr/ToolUse-v0, {args.episodes} episodes:")
    for name, rate in scale.items():
        print(f"  {name:28s} {rate:8.1f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"math_step_ms": math, "echo_step_ms": echo, "episodes_per_s": scale}, f, indent=2)


if __name__ == "__main__":
    main()
