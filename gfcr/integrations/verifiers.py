"""gfcr envs as `verifiers` 0.4 environments: `vf-eval`-style evaluation and prime-rl training.

`load_environment(env_id, **kwargs)` returns a `verifiers.v1.Env` whose rollouts are gfcr episodes:

- the taskset (`GfcrTaskset`) holds the env's tasks, one `GfcrTaskData` row each (prompt, gfcr
  task id, the env's OpenAI tool schemas); a prompt that shows images is verifiers' messages with
  OpenAI content parts (`image_url` parts holding `data:` URLs), a text prompt its text;
- the harness (`GfcrHarness`) plays one episode per rollout, in process: it resets
  `gymnasium.make(env_id, **kwargs)` to the row's task, sends the conversation (and the tools)
  to the model through the rollout's interception endpoint — so verifiers records every model
  call, tokens included — and steps each reply through the env (native `tool_calls` or gfcr's
  text `<tool_call>` blocks, both as a `gfcr.core.Action`), appending the env's observation
  messages (tool results as `tool` messages; images as `image_url` parts, so the model needs to
  see images) until the env terminates or truncates;
- the task (`GfcrTask`) scores with gfcr: its reward `gfcr_reward` replays the episode's actions
  through a fresh env reset to the task and sums gfcr's rewards; the episode's Filter signals
  and live reward are metrics (`signal/<name>`, `live_reward`, `turns`, `truncated`).

verifiers 0.4 pins mcp==2.0.0, which openenv refuses, so this module runs from its own venv:
`bash scripts/setup_verifiers.sh`, then `.venv-verifiers/bin/python` (see
examples/verifiers_eval.py). verifiers resolves tasksets by plugin id, importing the top-level
module the id names: `gfcr-verifiers` is the package examples/verifiers_taskset (`gfcr_verifiers`,
installed by the setup script), which exports this module's env, taskset and harness, so that
`vf-eval gfcr-verifiers --env.taskset.env-id gfcr/Math-v0 …` evaluates any gfcr env.

>>> env = load_environment("gfcr/ToolUse-v0", num_tasks=3)
>>> [task.data.task_id for task in env.taskset]
['tooluse/0', 'tooluse/1', 'tooluse/2']
>>> type(env).__name__, env.config.taskset.env_id, env.config.agent.runtime.type
('GfcrEnv', 'gfcr/ToolUse-v0', 'subprocess')
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import gymnasium as gym

try:
    import verifiers.v1 as vf  # type: ignore[import-not-found, unused-ignore]
    from openai import AsyncOpenAI
except ImportError as e:  # pragma: no cover - depends on the venv
    raise ImportError(
        "gfcr.integrations.verifiers needs verifiers==0.4.0, which lives in its own venv (its "
        f"mcp pin clashes with openenv): run `bash scripts/setup_verifiers.sh`, then use "
        f".venv-verifiers/bin/python ({e})"
    ) from e

import gfcr  # noqa: F401  (registers the gfcr/ env ids with Gymnasium)
from gfcr.core import Action, Message, ToolCall, parse_action
from gfcr.errors import ConfigError

__all__ = [
    "TASKSET_ID",
    "GfcrEnv",
    "GfcrEnvConfig",
    "GfcrHarness",
    "GfcrHarnessConfig",
    "GfcrTask",
    "GfcrTaskData",
    "GfcrTaskset",
    "GfcrTasksetConfig",
    "load_environment",
    "replay_reward",
]

TASKSET_ID = "gfcr-verifiers"
"""The verifiers plugin id of the gfcr taskset and harness (verifiers imports `gfcr_verifiers`)."""

Json = dict[str, Any]


class GfcrTasksetConfig(vf.TasksetConfig):  # type: ignore[misc]
    """Which gfcr env the taskset draws from (`--env.taskset.env-id`, `--env.taskset.env-kwargs`)."""

    env_id: str = "gfcr/ToolUse-v0"
    """A gfcr env id, e.g. `gfcr/Math-v0` (see `gfcr list`)."""
    env_kwargs: dict[str, Any] = {}
    """Keyword arguments of `gymnasium.make(env_id, ...)`: dataset, split, tools, limits."""


class GfcrTaskData(vf.TaskData):  # type: ignore[misc]
    """One gfcr task as a verifiers row: the prompt, and what it takes to replay the episode."""

    env_id: str
    env_kwargs: dict[str, Any]
    task_id: str
    """The gfcr task id (`options={"task_id": ...}` of the env's `reset`)."""
    tools: list[Json] = []
    """The env's tools as OpenAI function schemas (`info["tools"]` after `reset`)."""


class GfcrTask(vf.Task[GfcrTaskData]):  # type: ignore[misc]
    """A gfcr task; its reward is gfcr's, recomputed from the episode's recorded actions."""

    @property
    def key(self) -> str:
        return f"{self.data.env_id}:{self.data.task_id}"

    @vf.reward  # type: ignore[misc]
    async def gfcr_reward(self, task: GfcrTaskData, trace: vf.Trace) -> float:
        """The env's total reward for the actions the harness stepped (`trace.info["gfcr"]`)."""
        episode = trace.info.get("gfcr")
        if episode is None:
            return 0.0  # the harness never ran (the rollout failed before its first turn)
        return await asyncio.to_thread(replay_reward, task, episode["actions"])

    @vf.metric  # type: ignore[misc]
    async def gfcr_episode(self, trace: vf.Trace) -> dict[str, float]:
        """The live episode's reward, turn count, truncation and last Filter signals."""
        episode = trace.info.get("gfcr") or {}
        signals = {f"signal/{k}": float(v) for k, v in (episode.get("signals") or {}).items()}
        return {
            "live_reward": float(episode.get("reward", 0.0)),
            "turns": float(len(episode.get("actions", ()))),
            "truncated": float(episode.get("truncated", False)),
            **signals,
        }


class GfcrTaskset(vf.Taskset[GfcrTask, GfcrTasksetConfig]):  # type: ignore[misc]
    """The tasks of one gfcr env, in the env's own order (select with `take`, `shuffle` …)."""

    def load(self) -> Iterator[GfcrTask]:
        config: GfcrTasksetConfig = self.config
        env = _make(config.env_id, config.env_kwargs)
        try:
            tasks = env.unwrapped.tasks  # type: ignore[attr-defined]  # every gfcr env is a TextEnv
            for index in range(len(tasks)):
                task_id = tasks[index].id
                _, info = env.reset(options={"task_id": task_id})
                system = [m.text for m in info["messages"] if m.role == "system"]
                user = [m for m in info["messages"] if m.role != "system"]
                data = GfcrTaskData(
                    id=task_id,
                    name=task_id,
                    prompt=_prompt(user),
                    system_prompt=system[0] if system else None,
                    env_id=config.env_id,
                    env_kwargs=config.env_kwargs,
                    task_id=task_id,
                    tools=info["tools"],
                )
                yield GfcrTask(data, config.task)
        finally:
            env.close()


class GfcrHarnessConfig(vf.HarnessConfig):  # type: ignore[misc]
    """The gfcr harness has no knobs of its own: turn and length limits are the env's."""


class GfcrHarness(vf.Harness[GfcrHarnessConfig]):  # type: ignore[misc]
    """Plays one gfcr episode per rollout, in process; every model call goes through verifiers'
    interception endpoint (the harness contract), so the trace records the whole exchange."""

    APPENDS_SYSTEM_PROMPT = True
    EXECUTES_CODE = False  # the env runs the tools, not the model's runtime
    NEEDS_CONTAINER = False

    async def launch(
        self,
        ctx: vf.ModelContext,
        trace: vf.Trace,
        runtime: Any,
        endpoint: str,
        secret: str,
        mcp_urls: dict[str, str],
        data: vf.TaskData,
        tool_interception_url: str | None = None,
    ) -> Any:
        if not isinstance(data, GfcrTaskData):
            raise ConfigError(
                f"the gfcr harness plays gfcr tasks only, got {type(data).__name__}; "
                f"load the env with gfcr.integrations.verifiers.load_environment(env_id)"
            )
        client = AsyncOpenAI(base_url=endpoint, api_key=secret, max_retries=0)
        try:
            trace.info["gfcr"] = await play_episode(client, ctx.model, data)
        finally:
            await client.close()
        return vf.ProgramResult(exit_code=0, stdout="", stderr="")


async def play_episode(client: AsyncOpenAI, model: str, data: GfcrTaskData) -> Json:
    """One gfcr episode of `data`'s task with `model` behind `client`; returns what the trace
    keeps: the actions stepped (replayable), total reward, last signals, end flags."""
    env = _make(data.env_id, data.env_kwargs)
    try:
        _, info = env.reset(options={"task_id": data.task_id})
        messages = [m.to_openai() for m in info["messages"]]
        tools = info["tools"]
        actions: list[Json] = []
        reward, terminated, truncated, signals = 0.0, False, False, {}
        while not (terminated or truncated):
            kwargs = {"tools": tools} if tools else {}
            response = await client.chat.completions.create(model=model, messages=messages, **kwargs)
            action, stepped = to_action(response.choices[0].message)
            messages.append(Message("assistant", action.text, action.tool_calls).to_openai())
            actions.append(_action_to_json(action))
            _, step_reward, terminated, truncated, info = await asyncio.to_thread(env.step, stepped)
            reward += float(step_reward)
            signals = info.get("signals", {})
            messages += [m.to_openai() for m in info["messages"]]
        return {
            "task_id": data.task_id,
            "actions": actions,
            "reward": reward,
            "signals": {k: float(v) for k, v in signals.items()},
            "terminated": terminated,
            "truncated": truncated,
        }
    finally:
        env.close()


def to_action(message: Any) -> tuple[Action, str | Action]:
    """The gfcr action of an OpenAI assistant message, and what to step the env with.

    Native `tool_calls` become the action's calls; otherwise the text is parsed for gfcr's
    text tool calls. Text whose tool calls cannot be read is stepped as raw text, so the env
    answers with its own "Invalid tool call" observation.

    >>> action, stepped = to_action({"content": '<tool_call>{"name": "lookup", "arguments": {}}</tool_call>'})
    >>> action.tool_calls[0].name, stepped is action
    ('lookup', True)
    >>> to_action({"content": "7"})[1]
    Action(text='7', tool_calls=())
    """
    get = message.get if isinstance(message, dict) else lambda key: getattr(message, key, None)
    text = get("content") or ""
    native = get("tool_calls") or ()
    if native:
        calls = tuple(_tool_call(call, i) for i, call in enumerate(native))
        action = Action(text, calls)
        return action, action
    parsed, errors = parse_action(text)
    return parsed, (text if errors else parsed)


def replay_reward(task: GfcrTaskData, actions: list[Json]) -> float:
    """gfcr's total reward for stepping `actions` through a fresh env reset to `task`.

    Exact for envs whose observations follow from the task and the actions (math, code, SQL,
    tool use); an env with a sampled user (dialogue) or a live page may answer differently
    on replay than it did live — compare with the `live_reward` metric.

    >>> data = GfcrTaskData(env_id="gfcr/ToolUse-v0", env_kwargs={}, task_id="tooluse/3")
    >>> lookup = {"text": '<tool_call>{"name": "lookup", "arguments": {}}</tool_call>', "tool_calls": []}
    >>> replay_reward(data, [lookup, {"text": "3", "tool_calls": []}])
    1.0
    """
    env = _make(task.env_id, task.env_kwargs)
    try:
        env.reset(options={"task_id": task.task_id})
        total = 0.0
        for action in actions:
            calls = tuple(ToolCall.from_dict(call) for call in action.get("tool_calls") or ())
            stepped: str | Action = Action(action["text"], calls) if calls else action["text"]
            _, reward, terminated, truncated, _ = env.step(stepped)
            total += float(reward)
            if terminated or truncated:
                break
        return total
    finally:
        env.close()


class GfcrEnvConfig(vf.SingleAgentEnvConfig):  # type: ignore[misc]
    """verifiers' single-agent env config, with the local subprocess runtime as the agent's default.

    gfcr's harness plays the episode in process and runs no code of the model's, so it needs no
    container; verifiers' own default runtime is a Prime sandbox, which needs a Prime account.
    """

    agent: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())


# verifiers reads an env's config type from its `Env[Config]` base; SingleAgentEnv stays a base
# so that what verifiers offers single-agent envs only (replay, GEPA) works on gfcr's too.
class GfcrEnv(vf.SingleAgentEnv, vf.Env[GfcrEnvConfig]):  # type: ignore[misc]
    """The verifiers env of the `gfcr-verifiers` plugin: one agent seat over a `GfcrTaskset`."""


def load_environment(env_id: str, **kwargs: Any) -> vf.Env:
    """The verifiers `Env` whose rollouts are episodes of `gymnasium.make(env_id, **kwargs)`.

    The same env as `vf-eval gfcr-verifiers --env.taskset.env-id ENV_ID` (the installed plugin
    `gfcr_verifiers`, examples/verifiers_taskset): a `GfcrEnv`, whose agent runs in verifiers'
    local subprocess runtime with gfcr's in-process harness;
    evaluate it with `env.serving()` and `env.run_episode(task, vf.ModelContext(...))` (see
    examples/verifiers_eval.py). `kwargs` must be JSON-able: they travel on each task row.

    >>> load_environment("gfcr/Nope-v0")
    Traceback (most recent call last):
    ...
    gfcr.errors.UnknownNameError: unknown env id 'gfcr/Nope-v0'...
    """
    _make(env_id, kwargs).close()  # fail here, with gfcr's message, on a bad id or kwargs
    try:
        json.dumps(kwargs)
    except TypeError as e:
        raise ConfigError(f"env kwargs must be JSON-able (they ride on each task row): {e}") from e
    config = vf.resolve_env_config({"taskset": {"id": TASKSET_ID, "env_id": env_id, "env_kwargs": kwargs}})
    return vf.load_environment(config)


def _make(env_id: str, kwargs: dict[str, Any]) -> gym.Env:
    from gfcr.registry import env_class

    env_class(env_id)  # UnknownNameError naming the nearest ids
    return gym.make(env_id, **kwargs)


def _prompt(messages: list[Message]) -> str | list[Json]:
    """A task row's prompt: the messages' text, or where they show images the messages themselves
    in OpenAI's format (verifiers' content parts: text, and `image_url` with a `data:` URL)."""
    if any(m.images for m in messages):
        return [m.to_openai() for m in messages]
    return "\n\n".join(m.text for m in messages)


def _tool_call(call: Any, index: int) -> ToolCall:
    """A gfcr `ToolCall` from an OpenAI `tool_calls` entry (object or dict)."""
    as_dict = call if isinstance(call, dict) else call.model_dump()
    function = as_dict["function"]
    try:
        arguments = json.loads(function.get("arguments") or "{}")
    except json.JSONDecodeError:
        arguments = {"_invalid_json": function.get("arguments")}
    if not isinstance(arguments, dict):
        arguments = {"_invalid_arguments": arguments}
    return ToolCall(function["name"], arguments, as_dict.get("id") or f"call_{index}")


def _action_to_json(action: Action) -> Json:
    return {"text": action.text, "tool_calls": [call.to_dict() for call in action.tool_calls]}
