"""`environment_factory(env_id)`: a gfcr env as a TRL environment, its tools as methods.

TRL generates and runs its own tool loop; each tool call is one `step` of the gfcr env and
`get_reward()` is gfcr's verdict. Pass `reward_funcs=final_answer` so the model's last text answer
is stepped too. A step whose messages show images answers TRL with its multimodal tool response
(text and image parts, the images as PIL images: the form TRL collects for a vision-language
model's processor); a text step answers with its text, as before.
"""

from __future__ import annotations

import inspect
import json
import re
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, cast

import gymnasium as gym

from gfcr.agents.runner import env_config
from gfcr.agents.runner.episode import Episode
from gfcr.core import Action, Completion, Message, Request, ToolCall, Trajectory
from gfcr.envs.spaces import observation_text
from gfcr.errors import ConfigError
from gfcr.integrations.trl.dataset import kwargs_json

_JSON_HINTS: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "object": dict,
}


class GfcrEnvironment:
    """One gfcr env as a TRL environment; `environment_factory(env_id)` makes a subclass per env.

    TRL creates instances with no arguments, calls `reset(**row)` before each rollout, calls the
    tool methods the model asks for, and `get_reward()` at the end. Each tool call is one
    `step` of the gfcr env (an `Action` holding that one call), so turn limits, signals and
    rewards advance exactly as in a gfcr rollout; `trajectory` records the episode, turn by turn
    as the runner records one (`gfcr.agents.runner.episode.Episode`: messages, steps, cost), with
    TRL named as its policy. Only `reset` and `get_reward` are public besides the tools: TRL offers
    every other public method as a tool.
    """

    env_id: ClassVar[str] = ""
    env_kwargs: ClassVar[dict[str, Any]] = {}

    def __init__(self) -> None:
        self._env = gym.make(self.env_id, **self.env_kwargs)
        weakref.finalize(self, self._env.close)
        self._episode: Episode | None = None

    def reset(self, **row: Any) -> str | None:
        """Start the episode of `row["task_id"]` (the seed picks a task without one).

        Returns None when the row has a prompt (TRL renders it), else the env's prompt text, which
        TRL appends to its placeholder user message (a prompt's images reach TRL only in the
        rows of `dataset(...)`, as OpenAI image parts).
        """
        self._check_row(row)
        task_id = row.get("task_id")
        started = time.perf_counter()
        obs, info = self._env.reset(options={"task_id": task_id} if task_id else None)
        self._episode = Episode(TRL_GENERATES, self.env_id, (obs, info), started=started)
        return None if row.get("prompt") else observation_text(obs)

    @property
    def trajectory(self) -> Trajectory | None:
        """The episode so far (None before the first `reset`)."""
        return self._episode.trajectory if self._episode is not None else None

    def get_reward(self) -> float:
        """gfcr's verdict: the episode's total reward.

        An episode still running (the model stopped without the answer the env waits for, and no
        `final_answer` stepped it) is truncated here and keeps the reward it has: 0.0 for tasks
        judged on their answer.
        """
        if self._episode is None:
            return 0.0
        if not self._episode.done:
            self._episode.truncate()
        return self._episode.finish().total_reward

    def _check_row(self, row: dict[str, Any]) -> None:
        env_id, kwargs = row.get("env_id"), row.get("env_kwargs")
        if env_id not in (None, self.env_id) or kwargs not in (None, kwargs_json(self.env_kwargs)):
            raise ConfigError(
                f"row of task {row.get('task_id')!r} is for env {env_id!r} with {kwargs}, but this class "
                f"steps {self.env_id!r} with {kwargs_json(self.env_kwargs)}; build it with "
                "environment_factory(env_id, **env_kwargs) as the dataset was built"
            )

    def _call_tool(self, name: str, arguments: dict[str, Any]) -> str | list[dict[str, Any]]:
        """Step the env with one tool call; the observation (a tool result or error) goes to the model."""
        if self._episode is None:
            return f"Error: {name}() was called before reset(); no episode is running."
        if self._episode.done:
            return f"Error: the episode is over; {name}() was not run."
        call = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False, default=str)
        return self._step(Action(f"<tool_call>{call}</tool_call>", (ToolCall(name, arguments),)))

    def _answer(self, text: str) -> None:
        """Step the model's final text answer, if the episode still waits for one."""
        if self._episode is not None and not self._episode.done:
            self._step(text)

    def _step(self, action: str | Action) -> str | list[dict[str, Any]]:
        assert self._episode is not None  # callers check reset() was called
        started = time.perf_counter()
        obs, reward, terminated, truncated, info = self._env.step(action)
        result = (obs, float(reward), terminated, truncated, info)
        completion = (
            Completion(action.text, action.tool_calls) if isinstance(action, Action) else Completion(action)
        )
        self._episode.record(completion, result, policy_s=0.0, env_s=time.perf_counter() - started)
        return tool_response(info["messages"], observation_text(obs))


def tool_response(messages: list[Message], text: str) -> str | list[dict[str, Any]]:
    """What a tool method answers TRL: the step's observation `text`, or, where its `messages` show
    images, TRL's multimodal tool response: their text and image parts in order.

    >>> from PIL import Image as PILImage
    >>> from gfcr.core import Image
    >>> dot = Image.from_pil(PILImage.new("RGB", (1, 1)))
    >>> tool_response([Message("tool", "42")], "42")
    '42'
    >>> [part["type"] for part in tool_response([Message("tool", ["zoomed:", dot])], "zoomed:")]
    ['text', 'image']
    """
    if not any(m.images for m in messages):
        return text
    parts: list[dict[str, Any]] = []
    for message in messages:
        content = (message.content,) if isinstance(message.content, str) else message.content
        for part in content:
            parts.append(
                {"type": "text", "text": part}
                if isinstance(part, str)
                else {"type": "image", "image": part.to_pil()}
            )
    return parts


@dataclass
class TRLGenerates:
    """The policy an `environment_factory` episode records: TRL's own generation, which gfcr never
    calls (TRL samples and hands gfcr each tool call and the final answer)."""

    name: str = "trl"
    version: str = ""

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        raise ConfigError("environment_factory episodes are generated by TRL's GRPOTrainer, not by gfcr")


TRL_GENERATES = TRLGenerates()


def environment_factory(env_id: str, **env_kwargs: Any) -> type[GfcrEnvironment]:
    """A `GfcrEnvironment` subclass for `GRPOTrainer(environment_factory=...)`.

    Its tool methods are built from the OpenAI function schemas the env offers at reset
    (`info["tools"]`): typed keyword parameters (optional ones default to None) and a Google-style
    docstring, so `transformers.utils.get_json_schema` gives back the env's schema. A call with
    bad arguments returns the env's error text; it never raises.

    >>> ToolUse = environment_factory("gfcr/ToolUse-v0", num_tasks=10)
    >>> env = ToolUse()
    >>> env.reset(task_id="tooluse/3", prompt=[{"role": "user", "content": "..."}]) is None
    True
    >>> code = env.lookup()  # a tool call: one step of the gfcr env
    >>> final_answer([[{"role": "assistant", "content": code}]], environments=[env])
    [None]
    >>> env.get_reward(), env.lookup()
    (1.0, 'Error: the episode is over; lookup() was not run.')
    """
    env_config(env_id, env_kwargs)  # an unknown id fails here, with the nearest names
    probe = gym.make(env_id, **env_kwargs)
    _, info = probe.reset()
    probe.close()
    methods: dict[str, Any] = {}
    for schema in info["tools"]:
        method = _tool_method(schema.get("function", schema))
        if method.__name__ in ("reset", "get_reward") or method.__name__.startswith("_"):
            raise ConfigError(
                f"{env_id} has a tool named {method.__name__!r}, which TRL would not offer as a tool "
                "(reset, get_reward and names starting with '_' are reserved); rename the tool"
            )
        methods[method.__name__] = method
    name = "".join(part[:1].upper() + part[1:] for part in re.split(r"\W+", env_id.split("/")[-1]))
    attributes = {"env_id": env_id, "env_kwargs": dict(env_kwargs), "__module__": __name__, **methods}
    return cast(type[GfcrEnvironment], type(name, (GfcrEnvironment,), attributes))


def _tool_method(function: dict[str, Any]) -> Callable[..., str | list[dict[str, Any]]]:
    """A method that steps the env with a call of the tool `function` (an OpenAI function schema)."""
    name = function["name"]
    parameters = function.get("parameters") or {}
    required = set(parameters.get("required", []))
    signature = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    hints: dict[str, Any] = {}
    arg_docs = []
    for key, schema in (parameters.get("properties") or {}).items():
        if not key.isidentifier():
            raise ConfigError(
                f"tool {name!r} has a parameter {key!r}, which cannot be a Python parameter name; "
                "TRL calls tools as Python methods: rename it"
            )
        hints[key] = _hint(schema)
        default = inspect.Parameter.empty if key in required else None
        signature.append(inspect.Parameter(key, inspect.Parameter.KEYWORD_ONLY, default=default))
        description = " ".join(str(schema.get("description") or key.replace("_", " ")).split())
        if "enum" in schema:
            description += f" (choices: {json.dumps(schema['enum'])})"
        arg_docs.append(f"    {key}: {description}")

    def tool(self: GfcrEnvironment, **arguments: Any) -> str | list[dict[str, Any]]:
        return self._call_tool(name, arguments)

    summary = " ".join(str(function.get("description") or f"Call the {name} tool.").split())
    tool.__doc__ = summary + ("\n\nArgs:\n" + "\n".join(arg_docs) if arg_docs else "")
    tool.__name__ = tool.__qualname__ = name
    tool.__annotations__ = {**hints, "return": str}
    tool.__signature__ = inspect.Signature(  # type: ignore[attr-defined]  # read by inspect.signature
        [p.replace(annotation=hints.get(p.name, p.annotation)) for p in signature], return_annotation=str
    )
    return tool


def _hint(schema: dict[str, Any]) -> Any:
    """The Python type of a JSON-schema property, as `get_json_schema` reads it back."""
    kind = schema.get("type")
    if kind == "array":
        item = _JSON_HINTS.get((schema.get("items") or {}).get("type", ""))
        return list[item] if item is not None else list  # type: ignore[valid-type]
    return _JSON_HINTS.get(kind or "", str)


def final_answer(completions: list[list[dict[str, Any]]], **kwargs: Any) -> list[float | None]:
    """A TRL reward function for `environment_factory` runs: steps each rollout's final text answer.

    TRL's tool loop ends when the model writes a message without tool calls; that message is
    the answer many envs wait for (ToolUse's code, Math's boxed result). This steps it into the
    rollout's env, then `get_reward` (which TRL calls after the reward functions) reports the
    verdict. It scores nothing itself: it returns None for every completion.
    """
    environments = kwargs.get("environments")
    if environments is None:
        raise ConfigError(
            "final_answer needs TRL's `environments` (GRPOTrainer(environment_factory=...)); "
            "with rollout_func use env_reward"
        )
    for completion, environment in zip(completions, environments, strict=True):
        last = completion[-1] if completion else {}
        if isinstance(environment, GfcrEnvironment) and last.get("role") == "assistant":
            if not last.get("tool_calls"):
                environment._answer(str(last.get("content") or ""))
    return [None] * len(completions)
