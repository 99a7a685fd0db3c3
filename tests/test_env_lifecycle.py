"""One episode lifecycle in `TextEnv`: every bundled env is `respond` plus hooks, and the hooks run
when the base says (`begin_episode` before the prompt, `end_episode` once per episode however it
ends, a failed `reset` leaving the env usable)."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

import gfcr
from gfcr.core import Action, Task
from gfcr.envs.base import Outcome, TextEnv
from gfcr.envs.code.interactive import CodeInteractiveEnv
from gfcr.envs.sql.env import SQLEnv
from gfcr.envs.tasks import TaskSource
from gfcr.errors import GfcrError, SandboxUnavailableError
from gfcr.registry import env_class
from gfcr.sandboxes.bwrap import check_local_backend

# The bundled env classes that still override a method of the Gymnasium API, each saying in its
# docstring why no hook serves: the browser's tab lives as long as the env (each episode recycles it).
EXPECTED_OVERRIDES = {"BrowserEnv.close"}


def bundled_text_envs() -> dict[str, type[TextEnv]]:
    classes = {}
    for env_id in gfcr.list_envs():
        cls = env_class(env_id)
        if isinstance(cls, type) and issubclass(cls, TextEnv) and cls.__module__.startswith("gfcr.envs."):
            classes[env_id] = cls
    return classes


def test_every_bundled_text_env_is_respond_plus_hooks():
    classes = bundled_text_envs()
    assert {"gfcr/Math-v0", "gfcr/CodeInteractive-v0", "gfcr/Dialogue-v0", "gfcr/Browser-v0"} <= set(classes)
    overrides = {}
    for cls in classes.values():
        for owner in cls.__mro__[: cls.__mro__.index(TextEnv)]:
            for name in ("reset", "step", "close"):
                if name in vars(owner):
                    overrides[f"{owner.__name__}.{name}"] = vars(owner)[name]
    assert set(overrides) == EXPECTED_OVERRIDES
    for name, method in overrides.items():
        assert "no hook serves" in (inspect.getdoc(method) or "").lower(), (
            f"{name}'s docstring must say why no hook serves"
        )


class ResourceEnv(TextEnv):
    """Two turns; each episode opens two resources, the second of which a task may fail to open."""

    signal_defaults = {"format_ok": False, "held": 0}

    def __init__(self) -> None:
        tasks = [
            Task("r/ok", "Say done.", "done"),
            Task("r/fails", "Never starts.", "", metadata={"fail": True}),
        ]
        super().__init__(TaskSource.from_tasks("r", tasks), system_prompt="Be brief.", max_turns=2)
        self.held: list[str] = []  # the resources open now
        self.ends = 0

    def begin_episode(self, task: Task) -> None:
        self.held.append(f"{task.id}/a")
        if task.metadata.get("fail"):
            raise GfcrError(f"cannot open {task.id}/b")
        self.held.append(f"{task.id}/b")

    def end_episode(self) -> None:
        self.ends += 1
        self.held.clear()

    def system_prompt_for(self, task: Task) -> str | None:
        return f"{self.system_prompt} Task {task.id}."

    def episode_signals(self) -> dict[str, float | bool]:
        return {"held": len(self.held)}

    def extra_info(self) -> dict[str, Any]:
        return {"held": list(self.held), "task": "not the contract's"}

    def respond(self, action: Action) -> Outcome:
        done = action.text == "done"
        return Outcome("ok", float(done), terminated=done, signals={"format_ok": True})


def test_end_episode_runs_once_when_a_step_ends_the_episode_and_not_again_on_reset_or_close():
    env = ResourceEnv()
    env.reset(options={"task_id": "r/ok"})
    assert env.held == ["r/ok/a", "r/ok/b"] and env.ends == 0
    *_, info = env.step("done")
    assert env.ends == 1 and env.held == []
    assert info["held"] == ["r/ok/a", "r/ok/b"]  # the final step's info is built before the end
    env.step("done")  # a step after the end
    env.reset(options={"task_id": "r/ok"})
    assert env.ends == 1
    env.close()
    assert env.ends == 2 and env.held == []
    env.close()
    assert env.ends == 2


def test_a_reset_or_close_mid_episode_and_the_turn_limit_each_end_the_episode_once():
    env = ResourceEnv()
    env.reset(options={"task_id": "r/ok"})
    env.step("not yet")
    env.reset(options={"task_id": "r/ok"})  # mid-episode: the first episode ends here
    assert env.ends == 1 and env.held == ["r/ok/a", "r/ok/b"]
    env.step("not yet")
    *_, truncated, _ = env.step("still not")  # the turn limit (2) ends it
    assert truncated and env.ends == 2 and env.held == []
    env.reset(options={"task_id": "r/ok"})
    env.close()  # mid-episode
    assert env.ends == 3 and env.held == []


def test_a_begin_episode_that_fails_halfway_is_ended_and_leaves_the_env_usable():
    env = ResourceEnv()
    with pytest.raises(GfcrError, match="cannot open r/fails/b"):
        env.reset(options={"task_id": "r/fails"})
    assert env.ends == 1 and env.held == []  # what was opened is released
    with pytest.raises(GfcrError, match=r"before reset\(\)"):
        env.step("done")
    env.close()
    assert env.ends == 1  # that episode is over: not ended twice
    obs, info = env.reset(options={"task_id": "r/ok"})
    assert obs == "Say done." and env.step("done")[1:3] == (1.0, True)


def test_the_system_prompt_signals_and_extra_info_hooks_fill_info_and_the_contract_keys_win():
    env = ResourceEnv()
    _, info = env.reset(options={"task_id": "r/ok"})
    assert [(m.role, m.content) for m in info["messages"]] == [
        ("system", "Be brief. Task r/ok."),
        ("user", "Say done."),
    ]
    assert info["task"].id == "r/ok" and info["held"] == ["r/ok/a", "r/ok/b"]
    *_, info = env.step(12)  # an unusable action: respond is not called, the episode's signals still are
    assert info["signals"] == {"format_ok": False, "held": 2} and info["held"] == ["r/ok/a", "r/ok/b"]


def test_sql_reports_the_turns_taken_on_an_unusable_action_too():
    env = SQLEnv(dataset="chinook")
    env.reset(options={"task_id": "chinook/001"})
    env.step('<tool_call>{"name": "execute_sql", "arguments": {"query": "SELECT 1"}}</tool_call>')
    *_, info = env.step("<tool_call>{not json</tool_call>")
    assert info["signals"]["format_ok"] is False and info["signals"]["turns"] == 2


@pytest.fixture
def code_env() -> CodeInteractiveEnv:
    try:
        check_local_backend()
    except SandboxUnavailableError as e:
        pytest.skip(f"no local sandbox: {e}")
    env = CodeInteractiveEnv()
    yield env
    env.close()


def run_python(code: str) -> str:
    return f'<tool_call>{{"name": "run_python", "arguments": {{"code": "{code}"}}}}</tool_call>'


def test_code_interactive_sessions_do_not_outlive_their_episode(code_env):
    code_env.reset(options={"task_id": "humaneval/53"})
    assert code_env.step(run_python("x = 41; print(x + 1)"))[0] == "42"
    session = code_env._session  # the sandbox session the episode opened
    assert session is not None and session.alive
    code_env.reset(options={"task_id": "humaneval/53"})  # mid-episode
    assert not session.alive
    assert "NameError" in code_env.step(run_python("print(x)"))[0]  # a fresh session: no state carried over
    session = code_env._session
    code_env.step(CodeInteractiveEnv.oracle(code_env.task, []))  # submit: the episode ends
    assert not session.alive and code_env._session is None
    code_env.reset(options={"task_id": "humaneval/53"})
    code_env.step(run_python("print(1)"))
    session = code_env._session
    code_env.close()
    assert not session.alive
