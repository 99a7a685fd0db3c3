"""Admission control (`gfcr.core.admission`): a call beyond the limit queues, its wait is recorded,
a wait past the queue deadline is the named failure of that resource (in the runner too, whatever
its env workers); LLM judges and simulated users queue at one gate per model; and the waits reach
a trajectory's cost and its JSON."""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections.abc import Callable

import gymnasium as gym
import pytest

from gfcr.agents import Runner, RunnerConfig, episodes_for_env, make_policy
from gfcr.core import Action, Completion, Cost, Step, Task, Trajectory
from gfcr.core.admission import Admission, AdmissionConfig, collect_waits
from gfcr.core.config import from_dict
from gfcr.envs.base import Outcome, TextEnv
from gfcr.envs.dialogue.env import DialogueEnv
from gfcr.envs.tasks import TaskSource
from gfcr.errors import ConfigError, EpisodeError, QueueTimeoutError
from gfcr.filter import LLMJudge

HOLD_S = 0.3  # how long a test keeps the second caller queued once it is seen waiting
OVERLOADED = "gfcr-test/Overloaded-v0"


class OverloadedEnv(TextEnv):
    """Every step's grading finds the sandbox's queue full past its deadline (a tool call, or not)."""

    def __init__(self, render_mode: str | None = None) -> None:
        tasks = TaskSource.from_tasks("overloaded", [Task("overloaded/0", "Grade me.")])
        super().__init__(tasks, render_mode=render_mode)

    def respond(self, action: Action) -> Outcome:
        raise QueueTimeoutError("sandbox", 60.0, 4)


if OVERLOADED not in gym.registry:  # by name, so that a spawned env worker can import it too
    gym.register(OVERLOADED, entry_point="test_admission:OverloadedEnv")


def wait_until(condition: Callable[[], bool], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.005)


class HeldPolicy:
    """A real policy whose calls wait until the test releases them: a busy model, on purpose."""

    def __init__(self, reply: str) -> None:
        self.name, self.version = f"held-{uuid.uuid4().hex[:8]}", "1"  # its own gate in each test
        self.reply = reply
        self.entered, self.release = threading.Event(), threading.Event()

    def generate(self, requests):
        self.entered.set()
        assert self.release.wait(30), "the test never released the policy"
        return [Completion(self.reply) for _ in requests]


def in_thread(call: Callable[[], object]) -> tuple[threading.Thread, dict[str, object]]:
    """Start `call` in a thread; the dict gets its "result" or its "error"."""
    out: dict[str, object] = {}

    def run() -> None:
        try:
            out["result"] = call()
        except Exception as e:
            out["error"] = e

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def test_the_second_caller_queues_until_the_first_leaves_and_its_wait_is_recorded():
    gate = Admission("sandbox", max_concurrency=1, queue_timeout_s=30.0)
    inside, leave = threading.Event(), threading.Event()

    def first() -> None:
        with gate.admit():
            inside.set()
            leave.wait(30)

    def second() -> tuple[float, dict[str, float]]:
        with collect_waits() as waits, gate.admit() as waited:
            return waited, dict(waits)

    holder, _ = in_thread(first)
    assert inside.wait(30)
    queued, out = in_thread(second)
    wait_until(lambda: gate.waiting == 1)
    assert gate.describe() == {
        "resource": "sandbox", "max_concurrency": 1, "queue_timeout_s": 30.0, "running": 1, "waiting": 1,
    }  # fmt: skip
    time.sleep(HOLD_S)
    leave.set()
    holder.join(30), queued.join(30)
    waited, ledger = out["result"]  # type: ignore[misc]
    assert waited >= HOLD_S and ledger == {"sandbox": waited}
    assert (gate.running, gate.waiting) == (0, 0)


def test_a_wait_past_the_queue_deadline_is_the_named_failure_of_that_resource():
    gate = Admission("env_server", max_concurrency=1, queue_timeout_s=0.2)
    with gate.admit(), collect_waits() as waits:
        with pytest.raises(QueueTimeoutError) as caught, gate.admit():
            pass
    error = caught.value
    assert isinstance(error, EpisodeError) and error.retryable  # infrastructure, not the agent
    assert error.reason == "env_server queue timeout" and error.resource == "env_server"
    assert str(error).startswith("env_server queue timeout: waited 0.2 s for a slot (1 at once)")
    assert waits["env_server"] >= 0.2  # the time it queued before failing is recorded too
    with gate.admit():  # the slot was given back: the gate works on
        pass


def test_no_limit_admits_everyone_at_once_and_records_nothing():
    gate = AdmissionConfig().gate("judge")
    with collect_waits() as waits, gate.admit(), gate.admit(), gate.admit() as waited:
        assert gate.running == 3
    assert waited == 0.0 and waits == {}


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"max_concurrency": 0}, "max_concurrency must be >= 1 (or None: no limit), got 0"),
        ({"queue_timeout_s": 0}, "queue_timeout_s must be > 0 seconds, got 0"),
        ({"max_concurency": 2}, "unknown key 'max_concurency'; did you mean 'max_concurrency'?"),
    ],
)
def test_bad_admission_settings_are_refused_with_the_fix(table, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        from_dict(AdmissionConfig, table)


def test_wait_seconds_round_trip_in_jsonl_and_old_lines_still_load():
    t = Trajectory("gfcr/Code-v0", "humaneval/0", "write f", [Step("f", "ok", 1.0, True, False)])
    t.cost.wait_s = {"sandbox": 0.25, "env_server": 1.5}
    assert Trajectory.from_json(t.to_json()) == t
    old = t.to_dict()
    del old["cost"]["wait_s"]  # a line written before waits were recorded
    assert Trajectory.from_dict(old).cost == Cost()  # nothing queued, as far as anyone knows


class HeldJudge(HeldPolicy):
    """A held policy that answers as a judge: full marks, on the verdict line the prompt asks for."""

    def generate(self, requests):
        super().generate(requests)
        tags = [re.search(r"one line `(VERDICT \w+):", r.messages[-1].content)[1] for r in requests]
        return [Completion(f"Fine.\n{tag}: 1") for tag in tags]


def test_judges_of_one_model_share_its_gate_and_a_verdict_queued_too_long_is_the_judges_failure():
    model = HeldJudge("")
    admission = AdmissionConfig(max_concurrency=1, queue_timeout_s=0.2)
    first, second = LLMJudge(model, admission=admission), LLMJudge(model, admission=admission)
    task = Task("t", "2+2?", gold="4")
    answered = Trajectory("e", "t", "2+2?", [Step("4", "", 0.0, True, False)])
    other = Trajectory("e", "t", "2+2?", [Step("5", "", 0.0, True, False)])  # not in the cache
    busy, out = in_thread(lambda: first.verify(task, answered))
    assert model.entered.wait(30)
    [(queued, why)] = second.judge(task, [other])  # the other judge, same model: the same queue
    assert queued is None and "judge queue timeout" in why
    assert second.verify(task, other).signals == {"judge_failure": True}
    model.release.set()
    busy.join(30)
    assert out["result"].passed  # type: ignore[union-attr]
    with collect_waits() as waits:
        assert second.verify(task, other).reward == 1.0
    assert set(waits) == {"judge"}


def test_llm_users_queue_at_one_gate_the_queued_reset_reports_its_wait():
    user = HeldPolicy("Hi, I want to return an order.")
    admission = {"max_concurrency": 1, "queue_timeout_s": 30.0}
    first, second = (DialogueEnv(domain="retail", user=user, user_admission=admission) for _ in range(2))
    gate = second.user.chat.gate  # type: ignore[attr-defined]
    assert first.user.chat.gate is gate  # type: ignore[attr-defined]
    opened, first_out = in_thread(lambda: first.reset(options={"task_id": "retail/108"}))
    assert user.entered.wait(30)
    queued, second_out = in_thread(lambda: second.reset(options={"task_id": "retail/108"}))
    wait_until(lambda: gate.waiting == 1)
    time.sleep(HOLD_S)
    user.release.set()
    opened.join(30), queued.join(30)
    first_info, second_info = first_out["result"][1], second_out["result"][1]  # type: ignore[index]
    assert second_info["wait_s"]["user"] >= HOLD_S > first_info["wait_s"]["user"]


def test_a_user_queued_past_its_deadline_fails_the_episode_not_the_agent():
    user = HeldPolicy("Hi.")
    admission = {"max_concurrency": 1, "queue_timeout_s": 0.2}
    first, second = (DialogueEnv(domain="retail", user=user, user_admission=admission) for _ in range(2))
    opened, _ = in_thread(lambda: first.reset(options={"task_id": "retail/108"}))
    assert user.entered.wait(30)
    with pytest.raises(QueueTimeoutError, match="user queue timeout"):  # not a "user_error" turn
        second.reset(options={"task_id": "retail/108"})
    user.release.set()
    opened.join(30)


@pytest.mark.parametrize("env_workers", ["thread", "process"])
def test_the_runner_fails_a_queued_out_episode_with_the_resources_name(env_workers):
    config = RunnerConfig(env_workers=env_workers, num_env_workers=1, retries=0)
    result = Runner(make_policy("scripted:random"), config).run(episodes_for_env(OVERLOADED, 1))
    (failed,) = result.trajectories
    assert failed.status == "failed"
    assert failed.failure.startswith("sandbox queue timeout: waited 60.0 s")  # type: ignore[union-attr]
