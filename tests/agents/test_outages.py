"""Fail fast on a dead fleet: an env server wedged mid-run (SIGSTOP on a real `gfcr serve-env`) is
taken out of service after `max_consecutive_failures` failures in a row; its episodes run on the
other server, or, with no other, the run stops early and `resume=True` finishes it."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest
from runner_envs import ScriptPolicy

from gfcr.agents import Runner, RunnerConfig, episodes_for_env
from gfcr.core import read_jsonl
from gfcr.errors import RunStoppedError

pytest.importorskip("openenv", reason="the remote extra is not installed: pip install -e '.[remote]'")

ANSWER = ScriptPolicy(text="\\boxed{0}")  # one turn per Math episode, whatever the task
MATH = {"split": "AIME2024"}
TIMEOUT_S = 5.0  # a healthy server's reset, under load, stays well within it; a wedged one's never ends


@pytest.fixture(scope="module")
def math_servers() -> Iterator[list[tuple[str, subprocess.Popen]]]:
    """Two `gfcr serve-env gfcr/Math-v0` processes on loopback, started together: (url, process)."""
    servers = []
    for _ in range(2):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        command = [sys.executable, "-m", "gfcr", "serve-env", "gfcr/Math-v0", "-e", "split=AIME2024"]
        process = subprocess.Popen([*command, "--port", str(port)], stdout=subprocess.DEVNULL)
        servers.append((f"http://127.0.0.1:{port}", process))
    deadline = time.monotonic() + 240  # its imports take 7 s of CPU: minutes on a machine loaded 10 times over
    try:
        for url, process in servers:
            while not _healthy(url):
                assert process.poll() is None, f"gfcr serve-env exited with {process.returncode}"
                assert time.monotonic() < deadline, "gfcr serve-env did not come up in 240 s"
                time.sleep(0.2)
        yield servers
    finally:  # also when they failed to come up: no server outlives the tests
        for _, process in servers:
            process.send_signal(signal.SIGCONT)
            process.terminate()
            process.wait(10)


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


@contextmanager
def wedged_after(process: subprocess.Popen, episodes: int) -> Iterator:
    """An `on_episode` callback that stops `process` (SIGSTOP) once `episodes` have finished; it
    runs again (SIGCONT) when the block ends."""
    finished = []

    def on_episode(trajectory) -> None:
        finished.append(trajectory)
        if len(finished) == episodes:
            process.send_signal(signal.SIGSTOP)

    try:
        yield on_episode
    finally:
        process.send_signal(signal.SIGCONT)


@pytest.mark.timeout(400)
def test_a_wedged_env_server_stops_the_run_early_and_resume_finishes_it(math_servers, tmp_path):
    (url, process), _ = math_servers
    out = tmp_path / "run.jsonl"
    specs = episodes_for_env("gfcr/Math-v0", 30, kwargs=MATH)
    config = RunnerConfig(
        env_urls=(url,), concurrency=3, env_timeout_s=TIMEOUT_S, max_consecutive_failures=3, flush_every=1
    )
    with wedged_after(process, 3) as on_episode, pytest.raises(RunStoppedError) as stopped:
        Runner(ANSWER, config).run(specs, out, on_episode=on_episode)
    message = str(stopped.value)
    assert f"env server {url} had 3 failures in a row (last: env timeout: " in message
    assert "no other server serves gfcr/Math-v0" in message and "--resume" in message
    written = list(read_jsonl(out))
    assert 3 <= len(written) < 30 and all(t.status == "ok" for t in written)  # what finished, kept
    assert f"{len(written)} of 30 episodes are done, in {out}" in message

    again = Runner(ANSWER, config).run(specs, out, resume=True)
    final = list(read_jsonl(out))
    assert again.resumed == len(written) and again.failed == 0 and not again.lost
    assert sorted(t.id for t in final) == sorted(s.id for s in specs)  # each episode once
    assert [t.id for t in final[: len(written)]] == [t.id for t in written]  # what was written stays


@pytest.mark.timeout(400)
def test_with_two_env_servers_one_wedged_the_run_completes_on_the_other(math_servers, tmp_path):
    (wedged, process), (healthy, _) = math_servers
    out = tmp_path / "run.jsonl"
    specs = episodes_for_env("gfcr/Math-v0", 16, kwargs=MATH)
    config = RunnerConfig(
        env_urls=(wedged, healthy), concurrency=6, env_timeout_s=TIMEOUT_S, max_consecutive_failures=3
    )
    with wedged_after(process, 4) as on_episode:
        result = Runner(ANSWER, config).run(specs, out, on_episode=on_episode)
    assert result.episodes == 16 and result.failed == 0
    assert list(result.lost) == [wedged]
    assert result.lost[wedged].startswith("out of service after 3 failures in a row (last: env timeout: ")
    written = list(read_jsonl(out))
    assert sorted(t.id for t in written) == sorted(s.id for s in specs) and {t.status for t in written} == {"ok"}
