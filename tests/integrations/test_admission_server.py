"""`gfcr serve-env --max-concurrency`: a real server (uvicorn, on loopback) admits that many env
calls at once; a client beyond them queues, its answer says how long (`wait_s.env_server`), the
runner puts that in the episode's cost, `gfcr bench` shows it; past `--queue-timeout-s` the
episode fails as "env_server queue timeout", an infrastructure failure, not the agent's."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import ClassVar

import gymnasium as gym
import httpx
import pytest

pytest.importorskip("openenv", reason="the remote extra is not installed: pip install -e '.[remote]'")

from test_openenv import serving  # noqa: E402  (its folder is on sys.path under pytest)
from typer.testing import CliRunner  # noqa: E402

from gfcr.agents import Runner, RunnerConfig, episodes_for_env, make_policy  # noqa: E402
from gfcr.apps.cli import app  # noqa: E402
from gfcr.core import Action, Message, Task, read_jsonl  # noqa: E402
from gfcr.core.admission import AdmissionConfig  # noqa: E402
from gfcr.envs.base import Outcome, TextEnv  # noqa: E402
from gfcr.envs.tasks import TaskSource  # noqa: E402
from gfcr.remote import create_app  # noqa: E402

ENV_ID = "gfcr-test/Hold-v0"
HOLD_S = 0.3  # how long the test keeps the second client queued once the server shows it waiting


class HoldEnv(TextEnv):
    """One turn, reward 1.0 for any answer; the step takes `hold_s` seconds, or (None) waits for
    the test to `release` it: a slow env, on purpose."""

    signal_defaults: ClassVar[dict[str, float | bool]] = {"format_ok": False}
    entered, release = threading.Event(), threading.Event()

    def __init__(self, hold_s: float | None = None, render_mode: str | None = None) -> None:
        tasks = [Task(f"hold/{n}", "Say done.", "done") for n in range(4)]
        super().__init__(TaskSource.from_tasks("hold", tasks), render_mode=render_mode)
        self.hold_s = hold_s

    def respond(self, action: Action) -> Outcome:
        if self.hold_s is not None:
            time.sleep(self.hold_s)
        else:
            HoldEnv.entered.set()
            assert HoldEnv.release.wait(30), "the test never released the step"
        return Outcome("ok", reward=1.0, terminated=True, signals={"format_ok": True})

    @classmethod
    def oracle(cls, task: Task, messages: Sequence[Message]) -> str:
        return "done"  # the tests use the oracle: every answer reaches `respond` (some of random's end first)


if ENV_ID not in gym.registry:
    gym.register(ENV_ID, entry_point=HoldEnv)


def in_thread(call: Callable[[], object]) -> tuple[threading.Thread, dict[str, object]]:
    out: dict[str, object] = {}
    thread = threading.Thread(target=lambda: out.update(result=call()), daemon=True)
    thread.start()
    return thread, out


def test_with_concurrency_one_the_second_client_queues_and_its_answer_says_how_long():
    HoldEnv.entered.clear(), HoldEnv.release.clear()
    app = create_app(ENV_ID, admission=AdmissionConfig(max_concurrency=1, queue_timeout_s=30.0))
    with serving(app) as url:
        first, second = gym.make("gfcr/Remote-v0", url=url), gym.make("gfcr/Remote-v0", url=url)
        first.reset(options={"task_id": "hold/0"}), second.reset(options={"task_id": "hold/1"})
        busy, first_out = in_thread(lambda: first.step("done"))
        assert HoldEnv.entered.wait(30)
        queued, second_out = in_thread(lambda: second.step("done"))
        deadline = time.monotonic() + 30
        while (admission := httpx.get(f"{url}/gfcr").json()["admission"])["waiting"] < 1:  # visible
            assert time.monotonic() < deadline, "the second step never queued"
            time.sleep(0.01)
        assert admission["running"] == 1 and admission["max_concurrency"] == 1
        time.sleep(HOLD_S)
        HoldEnv.release.set()
        busy.join(30), queued.join(30)
        first.close(), second.close()
    first_info, second_info = first_out["result"][4], second_out["result"][4]  # type: ignore[index]
    assert second_out["result"][1] == 1.0  # type: ignore[index]  # queued, then served in full
    assert second_info["wait_s"]["env_server"] >= HOLD_S > first_info["wait_s"]["env_server"]


def test_a_step_queued_past_the_deadline_fails_its_episode_as_the_servers_failure():
    HoldEnv.entered.clear(), HoldEnv.release.clear()
    admission = AdmissionConfig(max_concurrency=1, queue_timeout_s=0.2)
    with serving(create_app(ENV_ID, admission=admission, send_gold=True)) as url:

        def release_once_the_other_gave_up() -> None:  # the first step holds the one slot till then
            assert HoldEnv.entered.wait(60)
            seen_waiting, deadline = False, time.monotonic() + 60
            while time.monotonic() < deadline:
                waiting = httpx.get(f"{url}/gfcr").json()["admission"]["waiting"]
                if seen_waiting and waiting == 0:
                    break
                seen_waiting = seen_waiting or waiting > 0
                time.sleep(0.01)
            HoldEnv.release.set()

        releaser = threading.Thread(target=release_once_the_other_gave_up, daemon=True)
        releaser.start()
        config = RunnerConfig(concurrency=2, env_urls=(url,), retries=0)
        result = Runner(make_policy("scripted:oracle"), config).run(episodes_for_env(ENV_ID, 2))
        releaser.join(60)
    by_status = sorted(result.trajectories, key=lambda t: t.status)
    assert [t.status for t in by_status] == ["failed", "ok"]  # one held the slot, the other gave up
    failed, served = by_status
    assert failed.failure.startswith("env_server queue timeout: waited")  # type: ignore[union-attr]
    assert served.total_reward == 1.0


def test_bench_shows_how_long_each_agent_waited_for_the_env_server(tmp_path):
    admission = AdmissionConfig(max_concurrency=1, queue_timeout_s=30.0)
    with serving(create_app(ENV_ID, {"hold_s": 0.5}, admission=admission, send_gold=True)) as url:
        command = ["bench", ENV_ID, "--agent", "scripted:oracle", "--num-tasks", "2", "-e", "hold_s=0.5",
                   "--env-urls", url, "--concurrency", "2", "--report", str(tmp_path)]  # fmt: skip
        shown = CliRunner().invoke(app, command)
    assert shown.exit_code == 0, shown.output
    assert "wait s/ep" in shown.output and "scripted:oracle waited for: env_server" in shown.output
    trajectories = read_jsonl(tmp_path / "trajectories" / "scripted_oracle.jsonl")
    waits = [t.cost.wait_s["env_server"] for t in trajectories]
    assert max(waits) >= 0.25  # one of the two steps queued behind the other's 0.5 s
    page = (tmp_path / "index.html").read_text()
    assert "Waiting for shared resources" in page and "env_server s / ep" in page
