"""The env contract as executable checks: what gfcr's own tests run on every bundled env.

Each `check_*` function raises `ContractViolation` (an `AssertionError`, so pytest shows it as a
failure) with a message that says what the env did and what the contract asks. `check_contract`
runs them all on one env id and returns a `ContractReport`; `gfcr check ENV_ID` prints it.
Plugin test suites import the same functions (see docs/add-your-own-environment.md):

    from gfcr.testing import check_contract
    assert check_contract("acme/Reverse-v0").passed

The hostile actions are a fixed bank plus seeded random text, so a check needs no hypothesis;
gfcr's own tests add hypothesis-generated text through `check_action`.
"""

from __future__ import annotations

import itertools
import pickle
import random
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.utils.env_checker import check_env as gymnasium_check_env
from gymnasium.utils.env_checker import data_equivalence

from gfcr.agents import OraclePolicy, RandomPolicy
from gfcr.agents.runner.rollout import rollout
from gfcr.core import Action, Task, ToolCall
from gfcr.envs.spaces import observation_text
from gfcr.errors import GfcrError, UnknownNameError

HOSTILE_TEXT = (
    "",
    " ",
    "\x00",
    "<tool_call>",
    "<tool_call>{broken",
    '<tool_call>{"name": 1}</tool_call>',
    '<tool_call>{"name": "no_such_tool", "arguments": {}}</tool_call>',
    '<tool_call>{"name": "x", "arguments": "not an object"}</tool_call>',
    '{"name": 1}',
    "\\boxed{",
    "\\boxed{}",
    "∑ 中文 😀 \\boxed{1}",
    "SELECT 1; DROP TABLE users;",
    "```python\nimport os; os._exit(1)\n```",
    "x" * 100,
    "\n" * 500,
)
# Not text at all, or an Action no env can use: each must give reward 0.0 and format_ok False.
MALFORMED_ACTIONS: tuple[Any, ...] = (None, 42, b"bytes", ["list"], "x" * 40_000)
_ALPHABET = "abc xyz 0123456789{}[]()<>\"'\\$:,;=+-*/_\n\t∑中文😀é\x00\x7f"
VECTOR_ACTIONS = ("∑ 中文 😀 \\boxed{1}", "", "<tool_call>{broken", "x" * 100)


class ContractViolation(GfcrError, AssertionError):
    """An env breaks the gfcr env contract; the message says how and what the contract asks."""


@dataclass(frozen=True)
class CheckResult:
    """One check's outcome: `status` is "passed", "failed" or "skipped", with the reason."""

    name: str
    status: str
    detail: str = ""
    seconds: float = 0.0


@dataclass
class ContractReport:
    """Every check's result for one env (`passed`: none failed)."""

    env_id: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    results: list[CheckResult] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(r.status != "failed" for r in self.results)

    def summary(self) -> str:
        """One line per check that did not pass: what failed and why (for assertion messages)."""
        lines = [f"{r.name}: {r.status}: {r.detail}" for r in self.results if r.status != "passed"]
        verdict = "passes" if self.passed else "breaks"
        return f"{self.env_id} {verdict} the env contract" + "".join(f"\n  {line}" for line in lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "env_id": self.env_id,
            "kwargs": self.kwargs,
            "passed": self.passed,
            "checks": [
                {"name": r.name, "status": r.status, "detail": r.detail, "seconds": round(r.seconds, 3)}
                for r in self.results
            ],
        }


class Skip(Exception):
    """A check that does not apply to this env (e.g. no oracle); the message says why."""


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ContractViolation(message)


def check_observation(env: gym.Env, obs: Any, where: str = "") -> str:
    """`obs` fits the env's observation space; returns its text. A text env's observation is text;
    a `text_and_image` env's (a `Dict` space) is `{"text": str, "image": (H, W, 3) uint8 array}`."""
    space = env.observation_space
    if not isinstance(space, gym.spaces.Dict):
        _require(
            isinstance(obs, str) and space.contains(obs),
            f"observation must be text in observation_space{where}, got {_short(obs)}",
        )
        return obs
    _require(
        isinstance(obs, dict) and set(obs) == {"text", "image"},
        f"observation must be a dict of 'text' and 'image'{where}, got {_short(obs)}",
    )
    text, image, shape = obs["text"], obs["image"], space["image"].shape
    _require(
        isinstance(text, str) and space["text"].contains(text),
        f"observation['text'] must be text in observation_space{where}, got {_short(text)}",
    )
    _require(
        isinstance(image, np.ndarray) and image.shape == shape and image.dtype == np.uint8,
        f"observation['image'] must be a {shape} uint8 array{where}, got "
        f"{getattr(image, 'shape', type(image).__name__)} {getattr(image, 'dtype', '')}",
    )
    return text


# -- checks on one env instance ------------------------------------------------------------------


def check_step_result(env: gym.Env, result: Any, action: Any = None) -> None:
    """`result` is a valid `step` result: types, spaces, declared signals, consistent messages."""
    where = f" after action {_short(action)}"
    _require(isinstance(result, tuple) and len(result) == 5, f"step must return a 5-tuple{where}")
    obs, reward, terminated, truncated, info = result
    text = check_observation(env, obs, where)
    _require(isinstance(reward, float), f"reward must be a float{where}, got {type(reward).__name__}")
    _require(
        isinstance(terminated, bool) and isinstance(truncated, bool),
        f"terminated and truncated must be bools{where}",
    )
    signals = info.get("signals")
    _require(isinstance(signals, dict), f"info['signals'] must be a dict{where}")
    check_signals_declared(env, signals, action)
    for message in info.get("messages", []):
        _require(
            message.text == text or message.role == "tool",
            f"info['messages'] must repeat the observation (or be tool results){where}",
        )


def check_signals_declared(env: gym.Env, signals: Mapping[str, Any], action: Any = None) -> None:
    """Every signal key is declared in the env's `signal_defaults`, with a float, int or bool value."""
    declared = getattr(env.unwrapped, "signal_defaults", None)
    if not isinstance(declared, Mapping):
        raise ContractViolation(f"{type(env.unwrapped).__name__} declares no signal_defaults")
    if undeclared := sorted(set(signals) - set(declared)):
        raise ContractViolation(
            f"signal(s) {undeclared} returned after action {_short(action)} are not declared: "
            f"add them to {type(env.unwrapped).__name__}.signal_defaults (declared: {sorted(declared)})"
        )
    if missing := sorted(set(declared) - set(signals)):
        raise ContractViolation(f"declared signal(s) {missing} are missing from info['signals']")
    for key, value in signals.items():
        _require(
            isinstance(value, bool | int | float),
            f"signal {key!r} must be a float, int or bool, got {type(value).__name__}",
        )


def check_action(env: gym.Env, action: Any, *, seed: int = 0) -> tuple:
    """After `reset(seed)`, `step(action)` returns a valid result instead of raising."""
    env.reset(seed=seed)
    try:
        result = env.step(action)
    except Exception as e:
        raise ContractViolation(
            f"step({_short(action)}) raised {type(e).__name__}: {e}; any action, however malformed, "
            "must give a step result with a clear message in the observation"
        ) from e
    check_step_result(env, result, action)
    return result


def check_malformed_action(env: gym.Env, action: Any) -> None:
    """An action the env cannot use earns 0.0; a non-text one says "Invalid action" and fails the format."""
    obs, reward, *_, info = check_action(env, action)
    _require(reward == 0.0, f"malformed action {_short(action)} earned {reward}, expected 0.0")
    if not isinstance(action, Action):
        _require(info["signals"].get("format_ok") is False, f"format_ok must be False after {_short(action)}")
        _require(
            observation_text(obs).startswith("Invalid action"),
            f"observation after {_short(action)} must start with 'Invalid action', got {_short(obs)}",
        )


def hostile_actions(env: gym.Env, *, examples: int = 50, seed: int = 0) -> Iterator[str]:
    """The fixed bank, a bad call of each declared tool, then `examples` seeded random texts."""
    yield from HOSTILE_TEXT
    for name in getattr(env.unwrapped, "tools", {}):
        yield f'<tool_call>{{"name": "{name}", "arguments": {{"no_such_argument": [1, {{}}]}}}}</tool_call>'
        yield f'<tool_call>{{"name": "{name}", "arguments": {{}}}}</tool_call>'
    rng = random.Random(seed)
    for _ in range(examples):
        yield "".join(rng.choices(_ALPHABET, k=rng.randint(0, 300)))


def check_hostile_actions(env: gym.Env, *, examples: int = 50, seed: int = 0) -> None:
    """No hostile text action raises, and each gives a valid step; malformed ones earn nothing."""
    for action in hostile_actions(env, examples=examples, seed=seed):
        check_action(env, action)
    for malformed in (*MALFORMED_ACTIONS, Action("", (ToolCall("no_such_tool", {}),))):
        check_malformed_action(env, malformed)


def check_seeding(env: gym.Env) -> None:
    """`reset(seed)` is deterministic, `options={"task_id"}` picks the task, unknown ids say so."""
    first, info = env.reset(seed=123)
    second, again = env.reset(seed=123)
    _require(
        data_equivalence(first, second) and info.get("task") == again.get("task"),
        "reset(seed=123) twice gave different prompts or tasks",
    )
    _require(
        {"task", "messages", "tools"} <= set(info),
        f"reset's info must hold 'task', 'messages' and 'tools', got {sorted(info)}",
    )
    _require(isinstance(info["task"], Task), "info['task'] must be a gfcr.core.Task")
    _require(
        info["messages"][-1].text == check_observation(env, first),
        "info['messages'] must end with the prompt",
    )
    task_id = info["task"].id
    obs, picked = env.reset(options={"task_id": task_id})
    _require(
        picked["task"].id == task_id and data_equivalence(obs, first),
        f"reset(options={{'task_id': {task_id!r}}}) did not give that task's prompt",
    )
    try:
        env.reset(options={"task_id": task_id + "x"})
    except UnknownNameError:
        return
    except Exception as e:
        raise ContractViolation(f"an unknown task id raised {type(e).__name__}, not UnknownNameError") from e
    raise ContractViolation(
        "reset(options={'task_id': <unknown>}) must raise gfcr.UnknownNameError: pick the task with "
        "self.tasks.get(task_id) (a TaskSource whose index_of returns None for an unknown id), or raise "
        "UnknownNameError('task id', task_id, known_ids)"
    )


def check_step_after_end(env: gym.Env, *, max_steps: int = 1_000) -> None:
    """A step after the episode ended says so (mentions reset()), earns 0.0 and is terminated."""
    env.reset(seed=0)
    for _ in range(max_steps):
        *_, terminated, truncated, _ = env.step("no answer")
        if terminated or truncated:
            break
    else:
        raise ContractViolation(f"the episode did not end within {max_steps} steps of 'no answer'")
    obs, reward, terminated, *_ = env.step("again")
    _require(
        "reset()" in observation_text(obs) and reward == 0.0 and terminated,
        f"a step after the end must say to call reset(), earn 0.0, terminate; got {_short(obs)}",
    )


# -- checks that make their own envs -------------------------------------------------------------


def check_gymnasium(env_id: str, kwargs: Mapping[str, Any] | None = None) -> None:
    """Gymnasium's own `check_env` passes, with no warning (render mode "ansi")."""
    env = gym.make(env_id, render_mode="ansi", **(kwargs or {}))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            gymnasium_check_env(env.unwrapped, skip_render_check=False)
    except Exception as e:
        raise ContractViolation(f"gymnasium's check_env: {type(e).__name__}: {e}") from e
    finally:
        env.close()


def check_vector_modes(env_id: str, kwargs: Mapping[str, Any] | None = None, *, num_envs: int = 4) -> None:
    """`make_vec` in "sync" and "async" mode give equal results (text and images survive shared memory)."""
    results, images = {}, {}
    for mode in ("sync", "async"):
        envs = gym.make_vec(env_id, num_envs=num_envs, vectorization_mode=mode, **(kwargs or {}))
        try:
            observations, infos = envs.reset(seed=42)
            _require(
                all(isinstance(t, Task) for t in infos["task"]), f"{mode} mode: info['task'] lost its Tasks"
            )
            step = envs.step(VECTOR_ACTIONS[:num_envs])
            (texts, shown), (step_texts, step_shown) = _vector_parts(observations), _vector_parts(step[0])
            results[mode] = (texts, step_texts, step[1].tolist(), step[2].tolist(), step[3].tolist())
            images[mode] = (shown, step_shown)
            task_ids = [task.id for task in infos["task"]]
        finally:
            envs.close()
    if results["sync"] != results["async"]:
        where = _first_difference(results["sync"], results["async"], task_ids)
        raise ContractViolation(f"sync and async vector envs disagree on the same actions: {where}")
    _require(
        data_equivalence(images["sync"], images["async"]),
        "sync and async vector envs show different images on the same actions",
    )
    observations = results["sync"][0]
    _require(all(isinstance(o, str) and o for o in observations), "a vector env gave an empty observation")
    single = gym.make(env_id, **(kwargs or {}))
    try:
        first = single.reset(seed=42)[0]
        shown = images["sync"][0]
        _require(
            observations[0] == observation_text(first)
            and (shown is None or data_equivalence(shown[0], first["image"])),
            "a vector env's first observation differs from a single env's reset(seed=42)",
        )
    finally:
        single.close()


def check_pickling(env_id: str, kwargs: Mapping[str, Any] | None = None) -> None:
    """A made env pickles and its copy resets to the same prompt (process workers, Ray, deepcopy)."""
    env = gym.make(env_id, **(kwargs or {}))
    try:
        try:
            copy = pickle.loads(pickle.dumps(env.unwrapped))
        except Exception as e:
            raise ContractViolation(
                f"the env does not pickle: {type(e).__name__}: {e}. A closure or lambda (often a "
                "task source's build function) cannot be pickled: build tasks with a module-level "
                "function or functools.partial (see docs/add-your-own-environment.md)"
            ) from e
        _require(
            data_equivalence(copy.reset(seed=7)[0], env.unwrapped.reset(seed=7)[0]),
            "a pickled copy resets differently",
        )
        copy.close()
    finally:
        env.close()


def check_scripted_agents(
    env_id: str,
    kwargs: Mapping[str, Any] | None = None,
    *,
    episodes: int = 5,
    oracle_at_least: float = 0.95,
    random_at_most: float = 0.2,
) -> str:
    """Where the env has an oracle: it scores >= `oracle_at_least`, random junk <= `random_at_most`,
    over `episodes` distinct tasks (of a seeded order)."""
    env = gym.make(env_id, **(kwargs or {}))
    try:
        task = env.reset(seed=0)[1]["task"]
        try:
            type(env.unwrapped).oracle(task, env.unwrapped.messages)  # type: ignore[attr-defined]
        except GfcrError as e:
            if "has no oracle" in str(e):
                raise Skip(str(e)) from e
            raise
        tasks = env.unwrapped.tasks  # type: ignore[attr-defined]  # a TextEnv's TaskSource
        task_ids = list(itertools.islice(tasks.epochs(seed=0), episodes))  # distinct tasks where it can
        means = {}
        for policy in (OraclePolicy(), RandomPolicy(seed=0)):
            trajectories = [
                rollout(env, policy, env_id=env_id, task_id=task_id, seed=i)
                for i, task_id in enumerate(task_ids)
            ]
            if failed := [t.failure for t in trajectories if t.status == "failed"]:
                raise ContractViolation(f"{policy.name} episodes failed: {failed[0]}")
            for t in trajectories:
                for step in t.steps:
                    check_signals_declared(env, step.signals, step.action)
            means[policy.name] = sum(t.total_reward for t in trajectories) / episodes
    finally:
        env.close()
    oracle, junk = means["scripted:oracle"], means["scripted:random"]
    _require(
        oracle >= oracle_at_least,
        f"scripted:oracle scored {oracle:.2f} over {episodes} episodes, expected >= {oracle_at_least}: "
        "the verifier rejects gold answers or the oracle is wrong",
    )
    _require(
        junk <= random_at_most,
        f"scripted:random scored {junk:.2f}, expected <= {random_at_most}: the verifier accepts junk",
    )
    return f"oracle {oracle:.2f}, random {junk:.2f} over {episodes} episodes"


# -- all of them --------------------------------------------------------------------------------


def check_contract(
    env_id: str,
    kwargs: Mapping[str, Any] | None = None,
    *,
    examples: int = 50,
    seed: int = 0,
    episodes: int = 5,
) -> ContractReport:
    """Run every contract check on `env_id` (made with `kwargs`); a failure never stops the others.

    >>> report = check_contract("gfcr/Math-v0", {"dataset": "champ"}, examples=5, episodes=2)
    >>> report.passed, [r.name for r in report.results][:3]
    (True, ['make', 'gymnasium check_env', 'seeding and task ids'])
    """
    kwargs = dict(kwargs or {})
    report = ContractReport(env_id, kwargs)
    try:
        env = _timed(report, "make", lambda: gym.make(env_id, **kwargs))
    except Exception:
        return report  # nothing else can run; the "make" row says why
    try:
        checks: Sequence[tuple[str, Callable[[], Any]]] = (
            ("gymnasium check_env", lambda: check_gymnasium(env_id, kwargs)),
            ("seeding and task ids", lambda: check_seeding(env)),
            ("hostile actions", lambda: check_hostile_actions(env, examples=examples, seed=seed)),
            ("step after the end", lambda: check_step_after_end(env)),
            ("sync and async vector envs", lambda: check_vector_modes(env_id, kwargs)),
            ("pickling", lambda: check_pickling(env_id, kwargs)),
            ("oracle and random agents", lambda: check_scripted_agents(env_id, kwargs, episodes=episodes)),
        )
        for name, check in checks:
            try:
                _timed(report, name, check)
            except Exception:
                continue  # recorded; the next check runs
    finally:
        env.close()
    return report


def _timed(report: ContractReport, name: str, check: Callable[[], Any]) -> Any:
    """Run one check, append its result to `report`, and re-raise a failure after recording it."""
    started = time.perf_counter()
    try:
        value = check()
    except Skip as e:
        report.results.append(CheckResult(name, "skipped", str(e), time.perf_counter() - started))
        return None
    except Exception as e:
        detail = str(e) if isinstance(e, ContractViolation) else f"{type(e).__name__}: {e}"
        report.results.append(CheckResult(name, "failed", detail, time.perf_counter() - started))
        raise
    report.results.append(
        CheckResult(name, "passed", value if isinstance(value, str) else "", time.perf_counter() - started)
    )
    return value


def _vector_parts(observations: Any) -> tuple[tuple[str, ...], np.ndarray | None]:
    """A vector env's observations as their texts and, for `text_and_image` envs, their images
    (num_envs, H, W, 3); None for text envs."""
    if isinstance(observations, dict):
        return tuple(observations["text"]), np.asarray(observations["image"])
    return tuple(observations), None


def _first_difference(sync: tuple[Any, ...], async_: tuple[Any, ...], task_ids: list[str]) -> str:
    """Where two vector runs' (reset observations, step observations, rewards, …) first differ.

    >>> _first_difference((["a\\nb"], ["c"]), (["a\\nB"], ["c"]), ["t/0"])
    "reset observation of env 0 (task t/0), line 2: 'b' in sync mode, 'B' in async mode"
    """
    parts = ("reset observation", "step observation", "reward", "terminated", "truncated")
    for part, left, right in zip(parts, sync, async_, strict=True):
        for index, (one, other) in enumerate(zip(left, right, strict=True)):
            if one == other:
                continue
            where = f"{part} of env {index} (task {task_ids[index]})"
            if not isinstance(one, str):
                return f"{where}: {one!r} in sync mode, {other!r} in async mode"
            lines = itertools.zip_longest(one.splitlines(), other.splitlines(), fillvalue="")
            found = next(((n, a, b) for n, (a, b) in enumerate(lines, 1) if a != b), None)
            if found is None:
                return f"{where}: the same lines, ended differently"
            number, a, b = found
            return f"{where}, line {number}: {_short(a)} in sync mode, {_short(b)} in async mode"
    return "the runs differ"


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
