"""What a hostile or broken policy or env does to a run: every trajectory is still written, exactly
once, as strict JSON, and a resumed run treats infrastructure failures as not yet run."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from typing import ClassVar
from unittest.mock import patch

import pytest

from gfcr.agents import Completion, Request, Runner, RunnerConfig, episodes_for_env
from gfcr.core import Action, Task, read_jsonl
from gfcr.envs.base import Outcome, TextEnv
from gfcr.envs.tasks import TaskSource
from gfcr.envs.tooluse.env import LOOKUP_CALL
from gfcr.registry import register_env


class Says:
    """A policy that answers every request with `text`."""

    version = "0"

    def __init__(self, text: str) -> None:
        self.text, self.name = text, f"says:{text!r}"

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        return [Completion(self.text) for _ in requests]


class NaNEnv(TextEnv):
    """One turn; the reward is NaN on odd tasks (a broken verifier), 1.0 on even ones."""

    signal_defaults: ClassVar[dict[str, float | bool]] = {"format_ok": False}

    def __init__(self, render_mode: str | None = None) -> None:
        tasks = [Task(f"nan/{i}", f"task {i}", i) for i in range(6)]
        super().__init__(TaskSource.from_tasks("nan", tasks), render_mode=render_mode)

    def respond(self, action: Action) -> Outcome:
        assert self.task is not None
        reward = math.nan if self.task.gold % 2 else 1.0
        return Outcome("ok", reward=reward, terminated=True, signals={"format_ok": True, "score": reward})


def slow_reset(env: NaNEnv, **kwargs):
    """NaNEnv's reset, 50 ms late."""
    time.sleep(0.05)
    return TextEnv.reset(env, **kwargs)


@pytest.fixture(scope="module")
def nan_env() -> str:
    register_env("test/NaN-v0", NaNEnv)
    return "test/NaN-v0"


def strict_lines(path) -> list[dict]:
    """The file's lines as strict JSON (NaN, Infinity and invalid UTF-8 are errors)."""

    def refuse(constant: str) -> None:
        raise ValueError(f"not strict JSON: {constant}")

    text = path.read_bytes().decode("utf-8")  # strict: a lone surrogate cannot be in valid UTF-8
    return [json.loads(line, parse_constant=refuse) for line in text.splitlines()]


@pytest.mark.parametrize("reply", ["\ud800", "a\udc80b", "\x00\u2028\U0001f600"])
def test_any_reply_text_is_written_exactly_once_as_strict_json(tmp_path, reply, nan_env):
    out = tmp_path / "run.jsonl"
    specs = episodes_for_env(nan_env, 6)
    result = Runner(Says(reply), RunnerConfig(flush_every=2)).run(specs, out)
    lines = strict_lines(out)
    assert len(lines) == len(result.trajectories) == 6
    assert len({line["id"] for line in lines}) == 6
    assert all(line["steps"][0]["action"] == reply for line in lines)
    again = {t.id: t for t in read_jsonl(out)}
    assert {t.id: t.steps[0].action for t in result.trajectories} == {
        i: t.steps[0].action for i, t in again.items()
    }


def test_nan_rewards_are_null_on_disk_and_nan_when_read(tmp_path, nan_env):
    out = tmp_path / "run.jsonl"
    Runner(Says("x"), RunnerConfig()).run(episodes_for_env(nan_env, 6), out)
    rewards = {line["task_id"]: line["steps"][0]["reward"] for line in strict_lines(out)}
    assert rewards == {f"nan/{i}": (None if i % 2 else 1.0) for i in range(6)}
    read = {t.task_id: t.total_reward for t in read_jsonl(out)}
    assert math.isnan(read["nan/1"]) and read["nan/0"] == 1.0


def test_resume_runs_infrastructure_failures_again(tmp_path, nan_env):
    out = tmp_path / "run.jsonl"
    specs = episodes_for_env(nan_env, 4)
    # Every env call outlives a 1 ms limit (a slow env), so every episode fails for the infrastructure.
    # A limit of 1e-9 s raced: an env call that finished before the loop ran its timer was not cut.
    slow = RunnerConfig(env_timeout_s=1e-3, retries=0)
    with patch.object(NaNEnv, "reset", slow_reset):
        broken = Runner(Says("x"), slow).run(specs, out)
    assert all(t.status == "failed" for t in broken.trajectories)
    fixed = Runner(Says("x"), RunnerConfig()).run(specs, out, resume=True)
    assert fixed.resumed == 0 and all(t.status == "ok" for t in fixed.trajectories)
    lines = strict_lines(out)
    assert len(lines) == 4 and all(line["status"] == "ok" for line in lines)


def test_keywords_given_at_registration_reach_process_workers():
    register_env("test/LoudLookup-v0", "gfcr.envs.tooluse.env:ToolUseEnv", kwargs={"repeat": 3})
    specs = episodes_for_env("test/LoudLookup-v0", 3)
    config = RunnerConfig(env_workers="process", num_env_workers=1, max_turns=1)
    result = Runner(Says(LOOKUP_CALL), config).run(specs)
    assert all(t.status == "ok" for t in result.trajectories), [t.failure for t in result.trajectories]
    assert all(len(t.steps[0].observation.split()) == 3 for t in result.trajectories)  # "d d d", not "d"
