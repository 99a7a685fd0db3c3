"""gfcr's envs inside TRL's `GRPOTrainer` (TRL >= 1.16): `dataset`, `environment_factory`, `rollout_func`.

Two ways in, over one dataset of prompts (`dataset(env_id)`: chat messages with `task_id`,
`env_id` and `env_kwargs` columns):

- `environment_factory(env_id)`: TRL generates and runs its own tool loop; each of the env's tools
  is a method of the returned class, stepped through the gfcr env, and `get_reward()` is gfcr's
  verdict. Pass `reward_funcs=final_answer` so the model's last text answer is stepped too.
- `rollout_func(env_id)`: gfcr's vectorized `Runner` plays the episodes with the trainer's current
  weights, multi-turn and token-in-token-out (observation tokens get `env_mask` 0); a gfcr
  `Controller` and a replay buffer plug in as in gfcr's own trainer. Pass `reward_funcs=env_reward`.

    from trl import GRPOConfig, GRPOTrainer
    from gfcr.integrations import trl as gfcr_trl

    trainer = GRPOTrainer(
        model=path,
        args=GRPOConfig(output_dir="out", num_generations=4, max_steps=10),
        train_dataset=gfcr_trl.dataset("gfcr/ToolUse-v0", n=64),
        rollout_func=gfcr_trl.rollout_func("gfcr/ToolUse-v0"),
        reward_funcs=gfcr_trl.env_reward,
    )
    trainer.train()

The module imports neither TRL nor `datasets` until they are needed (`pip install -e '.[trl]'`).
"""

from __future__ import annotations

import inspect
import json
import logging
import re
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar, cast

import gymnasium as gym
import numpy as np

from gfcr.agents.policies.hf import HFPolicy
from gfcr.agents.runner import (
    Runner,
    RunnerConfig,
    RunResult,
    env_config,
)
from gfcr.agents.runner.episode import keeps_tokens
from gfcr.agents.runner.specs import task_specs
from gfcr.control import DynamicSampling, PromptHistory
from gfcr.control.dynamic import Batch
from gfcr.core import (
    Action,
    Controller,
    EnvConfig,
    EpisodeSpec,
    Message,
    ReplaySink,
    SamplingParams,
    Step,
    TokenPolicy,
    ToolCall,
    Trajectory,
)
from gfcr.core.policy import Policy
from gfcr.errors import ConfigError
from gfcr.suites import make_suite

if TYPE_CHECKING:
    from datasets import Dataset

logger = logging.getLogger(__name__)
INSTALL = "pip install -e '.[trl]'"
_JSON_HINTS: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "object": dict,
}


# -- the dataset ---------------------------------------------------------------------------------


def dataset(
    env_id_or_suite: str, *, split: str | None = None, n: int | None = None, seed: int = 0, **env_kwargs: Any
) -> Dataset:
    """The prompts of an env's tasks (or a suite's) as a `datasets.Dataset` for `GRPOTrainer`.

    Columns: `prompt` (the env's reset messages, OpenAI chat format), `task_id`, `env_id` and
    `env_kwargs` (JSON of the `gymnasium.make` keywords). For an env, `n` tasks in a seeded order
    (every task if None; `split=X` is the env keyword `split=X`); for a suite, its first `n` tasks.

    >>> rows = dataset("gfcr/ToolUse-v0", n=2, num_tasks=10)
    >>> rows.column_names, rows[0]["prompt"][-1]["role"]
    (['prompt', 'task_id', 'env_id', 'env_kwargs'], 'user')
    """
    try:
        from datasets import Dataset
    except ImportError as e:
        raise ConfigError(f"gfcr.integrations.trl.dataset needs the `datasets` package: {INSTALL}") from e
    if split is not None:
        env_kwargs["split"] = split
    specs = task_specs(env_id_or_suite, n, seed=seed, kwargs=env_kwargs)
    envs: dict[str, gym.Env] = {}
    rows = []
    for spec in specs:
        if spec.env.key not in envs:
            envs[spec.env.key] = gym.make(spec.env.env_id, **spec.env.kwargs)
        _, info = envs[spec.env.key].reset(options={"task_id": spec.task_id})
        rows.append(
            {
                "prompt": [m.to_openai() for m in info["messages"]],
                "task_id": info["task"].id,
                "env_id": spec.env.env_id,
                "env_kwargs": _kwargs_json(spec.env.kwargs),
            }
        )
    for env in envs.values():
        env.close()
    return Dataset.from_list(rows)


def _kwargs_json(kwargs: dict[str, Any]) -> str:
    return json.dumps(kwargs, sort_keys=True, default=str)


# -- environment_factory -------------------------------------------------------------------------


class GfcrEnvironment:
    """One gfcr env as a TRL environment; `environment_factory(env_id)` makes a subclass per env.

    TRL creates instances with no arguments, calls `reset(**row)` before each rollout, calls the
    tool methods the model asks for, and `get_reward()` at the end. Each tool call is one
    `step` of the gfcr env (an `Action` holding that one call), so turn limits, signals and
    rewards advance exactly as in a gfcr rollout; `trajectory` records the episode. Only `reset`
    and `get_reward` are public besides the tools: TRL offers every other public method as a tool.
    """

    env_id: ClassVar[str] = ""
    env_kwargs: ClassVar[dict[str, Any]] = {}

    def __init__(self) -> None:
        self._env = gym.make(self.env_id, **self.env_kwargs)
        weakref.finalize(self, self._env.close)
        self.trajectory: Trajectory | None = None
        self._done = False

    def reset(self, **row: Any) -> str | None:
        """Start the episode of `row["task_id"]` (the seed picks a task without one).

        Returns None when the row has a prompt (TRL renders it), else the env's prompt text, which
        TRL appends to its placeholder user message.
        """
        self._check_row(row)
        task_id = row.get("task_id")
        obs, info = self._env.reset(options={"task_id": task_id} if task_id else None)
        self.trajectory = Trajectory(self.env_id, info["task"].id, obs, messages=list(info["messages"]))
        self._done = False
        return None if row.get("prompt") else obs

    def get_reward(self) -> float:
        """gfcr's verdict: the episode's total reward.

        An episode still running (the model stopped without the answer the env waits for, and no
        `final_answer` stepped it) is truncated here and keeps the reward it has: 0.0 for tasks
        judged on their answer.
        """
        if self.trajectory is None:
            return 0.0
        if not self._done and self.trajectory.steps:
            self.trajectory.steps[-1].truncated = not self.trajectory.steps[-1].terminated
        self._done = True
        return self.trajectory.total_reward

    def _check_row(self, row: dict[str, Any]) -> None:
        env_id, kwargs = row.get("env_id"), row.get("env_kwargs")
        if env_id not in (None, self.env_id) or kwargs not in (None, _kwargs_json(self.env_kwargs)):
            raise ConfigError(
                f"row of task {row.get('task_id')!r} is for env {env_id!r} with {kwargs}, but this class "
                f"steps {self.env_id!r} with {_kwargs_json(self.env_kwargs)}; build it with "
                "environment_factory(env_id, **env_kwargs) as the dataset was built"
            )

    def _call_tool(self, name: str, arguments: dict[str, Any]) -> str:
        """Step the env with one tool call; the observation (a tool result or error) goes to the model."""
        if self.trajectory is None:
            return f"Error: {name}() was called before reset(); no episode is running."
        if self._done:
            return f"Error: the episode is over; {name}() was not run."
        call = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False, default=str)
        return self._step(Action(f"<tool_call>{call}</tool_call>", (ToolCall(name, arguments),)))

    def _answer(self, text: str) -> None:
        """Step the model's final text answer, if the episode still waits for one."""
        if self.trajectory is not None and not self._done:
            self._step(text)

    def _step(self, action: str | Action) -> str:
        assert self.trajectory is not None  # callers check reset() was called
        obs, reward, terminated, truncated, info = self._env.step(action)
        text = action.text if isinstance(action, Action) else action
        tool_calls = action.tool_calls if isinstance(action, Action) else ()
        self.trajectory.messages += [Message("assistant", text, tool_calls), *info["messages"]]
        self.trajectory.steps.append(
            Step(text, str(obs), float(reward), terminated, truncated, info["signals"], info.get("state"))
        )
        self._done = terminated or truncated
        return str(obs)


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


def _tool_method(function: dict[str, Any]) -> Callable[..., str]:
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

    def tool(self: GfcrEnvironment, **arguments: Any) -> str:
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


# -- rollout_func --------------------------------------------------------------------------------


def env_reward(
    completions: list[Any], gfcr_reward: list[float | None] | None = None, **kwargs: Any
) -> list[float | None]:
    """A TRL reward function for `rollout_func` runs: gfcr's episode reward of each completion.

    None (TRL leaves it out of its group baseline) for an episode the infrastructure failed.
    """
    if gfcr_reward is None:
        raise ConfigError(
            "env_reward reads the `gfcr_reward` field of gfcr's rollout_func; use it with "
            "GRPOTrainer(rollout_func=rollout_func(...)), or final_answer with environment_factory"
        )
    return list(gfcr_reward)


class GfcrRollout:
    """`rollout_func(...)`'s result: plays TRL's prompts as gfcr episodes with gfcr's Runner.

    TRL passes each prompt `num_generations` times in a row; each run of identical prompts is one
    group of that many episodes of the prompt's task (found by its dataset row). The policy is
    the trainer's model itself (`HFPolicy.from_model`) unless one is given. `last_result` is the
    latest run's `RunResult`, with its trajectories.
    """

    def __init__(
        self,
        envs: Sequence[EnvConfig],
        policy: Policy | None,
        runner_config: RunnerConfig | None,
        controller: Controller | None,
        replay: ReplaySink | None,
        sampling: DynamicSampling | None = None,
    ) -> None:
        self.envs = {config.key: config for config in envs}
        self.policy = policy
        self.runner_config = runner_config
        self.controller = controller or Controller()
        self.replay = replay
        self.sampling = sampling
        self.history = PromptHistory()  # every group's rewards, for dynamic sampling's selector
        self.calls = 0
        self.last_result: RunResult | None = None
        self.last_batch: Batch | None = None
        self._tasks: dict[str, EpisodeSpec] = {}
        self._prompts: dict[str, Any] = {}  # task id -> its dataset prompt

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        policy = self._policy(trainer)
        size = trainer.num_generations if trainer.model.training else trainer.num_generations_eval
        tasks = [self._task(prompt, trainer) for prompt in prompts]
        groups = tasks[::size]
        if len(tasks) % size or any(task != groups[i // size] for i, task in enumerate(tasks)):
            raise ConfigError(
                f"expected each prompt {size} times in a row (num_generations), got {len(tasks)}"
            )
        if self.sampling is not None:
            ordered = self._dynamic(groups, size, policy, trainer)
            prompts = [self._prompts.get(t.task_id, t.prompt) for t in ordered]
        else:
            task_ids = [t.task_id or "" for t in groups]
            ordered = _in_groups(self._run(groups, size, policy, trainer), task_ids, size)
        return _trl_fields(ordered, prompts, cast(TokenPolicy, policy), _eos_id(trainer))

    def _run(
        self, groups: Sequence[EpisodeSpec], size: int, policy: Policy, trainer: Any
    ) -> list[Trajectory]:
        """`size` episodes of each task, with fresh seeds on every call."""
        seed = int(trainer.args.seed) + 100_003 * self.calls
        specs = [
            replace(task, seed=seed + j, sample=b * size + j)
            for b, task in enumerate(groups)
            for j in range(size)
        ]
        config = self.runner_config or _trainer_runner_config(trainer.args, len(specs))
        result = Runner(policy, config, controller=self.controller, replay=self.replay).run(specs)
        self.calls += 1
        self.last_result = result
        observe = getattr(self.controller, "observe", None)
        if callable(observe):  # e.g. RolloutController: per-prompt posteriors for the next schedule
            observe(result.trajectories)
        return result.trajectories

    def _dynamic(
        self, groups: Sequence[EpisodeSpec], size: int, policy: Policy, trainer: Any
    ) -> list[Trajectory]:
        """DAPO's dynamic sampling: as many informative groups as TRL asked for, the tasks chosen by
        the sampler's selector (e.g. Thompson) among this batch's and then every dataset task;
        topped up with the batch's own groups, uninformative, if the rounds run out."""
        assert self.sampling is not None
        tasks = {spec.task_id: spec for spec in self._tasks.values()}
        batch_ids = [spec.task_id for spec in groups]
        candidates = batch_ids + [task_id for task_id in tasks if task_id not in set(batch_ids)]
        sampler = replace(self.sampling, num_groups=len(groups), group_size=size)

        def run(plan: Mapping[str, int]) -> list[Trajectory]:
            return self._run([tasks[task_id] for task_id in plan], size, policy, trainer)

        rng = np.random.default_rng(int(trainer.args.seed) + self.calls)
        batch = sampler.collect(run, [t for t in candidates if t is not None], self.history, rng)
        self.last_batch = batch
        kept = [t for group in batch.groups.values() for t in group]
        missing = [spec for spec in groups if spec.task_id not in batch.groups][
            : len(groups) - len(batch.groups)
        ]
        if missing:
            logger.warning(
                "dynamic sampling found %d of %d informative groups", len(batch.groups), len(groups)
            )
            kept += _in_groups(
                self._run(missing, size, policy, trainer), [s.task_id or "" for s in missing], size
            )
        return kept

    def _policy(self, trainer: Any) -> Policy:
        if self.policy is None:
            tokenizer = getattr(trainer.processing_class, "tokenizer", trainer.processing_class)
            model = trainer.accelerator.unwrap_model(trainer.model)
            self.policy = HFPolicy.from_model(model, tokenizer, name="hf:trl")
        if not keeps_tokens(type(self.policy)):
            raise ConfigError(
                f"rollout_func needs a policy that keeps token ids (hf:, vllm:); {self.policy.name} does not"
            )
        self.policy.version = str(trainer.state.global_step)  # type: ignore[misc]  # the weights' step
        return self.policy

    def _task(self, prompt: Any, trainer: Any) -> EpisodeSpec:
        """The task of a prompt, from the trainer's datasets' rows (indexed on first use)."""
        key = _prompt_key(prompt)
        if key not in self._tasks:
            for rows in (trainer.train_dataset, getattr(trainer, "eval_dataset", None)):
                self._index(rows)
        if key not in self._tasks:
            raise ConfigError(
                f"no dataset row has the prompt {str(prompt)[:80]}…; build the dataset with "
                "gfcr.integrations.trl.dataset(...) (columns prompt, task_id, env_id, env_kwargs)"
            )
        return self._tasks[key]

    def _index(self, rows: Any) -> None:
        if isinstance(rows, dict):  # several eval datasets
            for part in rows.values():
                self._index(part)
            return
        names = getattr(rows, "column_names", None) or []  # None for a streaming dataset
        if "task_id" not in names:
            return
        columns = {
            name: rows[name] for name in ("prompt", "task_id", "env_id", "env_kwargs") if name in names
        }
        only = next(iter(self.envs.values())) if len(self.envs) == 1 else None
        for i, prompt in enumerate(columns["prompt"]):
            env_id = columns["env_id"][i] if "env_id" in columns else None
            kwargs = columns["env_kwargs"][i] if "env_kwargs" in columns else None
            env = only if env_id is None and only is not None else self._env(env_id, kwargs)
            spec = EpisodeSpec(env, columns["task_id"][i])
            self._prompts.setdefault(spec.task_id or "", prompt)
            previous = self._tasks.setdefault(_prompt_key(prompt), spec)
            if previous != spec:
                logger.warning(
                    "tasks %s and %s have the same prompt; it runs as %s",
                    previous.task_id,
                    spec.task_id,
                    previous.task_id,
                )

    def _env(self, env_id: str | None, kwargs: str | None) -> EnvConfig:
        key = json.dumps([env_id, json.loads(kwargs or "{}")], sort_keys=True, default=str)
        if key not in self.envs:
            raise ConfigError(
                f"a dataset row is for env {env_id!r} with {kwargs}, which this rollout_func does not run "
                f"(it runs {[c.env_id for c in self.envs.values()]}); build both from one env id and kwargs"
            )
        return self.envs[key]


def rollout_func(
    env_id_or_suite: str,
    policy: Policy | None = None,
    *,
    runner_config: RunnerConfig | None = None,
    controller: Controller | None = None,
    replay: ReplaySink | None = None,
    sampling: DynamicSampling | None = None,
    **env_kwargs: Any,
) -> GfcrRollout:
    """A `GRPOTrainer(rollout_func=...)` that plays each prompt's task with gfcr's vectorized Runner.

    Episodes are multi-turn with the env's tools, token-in-token-out: `completion_ids` are the
    policy's sampled tokens and the observation tokens between turns (`env_mask` 0, logprob 0.0).
    Sampling follows the trainer's `temperature`, `top_p` and `max_completion_length` (the token
    budget of a whole episode) unless `runner_config` is given. `policy` defaults to the trainer's
    model; any `TokenPolicy` works. GFCR modules plug in as in gfcr's trainer: `controller`
    schedules each group and may stop episodes (it must keep `num_generations` episodes per prompt;
    its `observe`, if any, sees every run), `replay` stores every finished trajectory.
    `sampling=DynamicSampling(num_groups=1, selector=ThompsonSelector())` fills each batch with
    informative groups (some reward spread: no zero-advantage group), choosing tasks among the
    batch's and the dataset's with the selector (`num_groups` and `group_size` follow TRL's batch);
    the groups returned may then be other dataset tasks than the prompts TRL drew, so reward
    functions must read `gfcr_reward`/`task_id` (as `env_reward` does), not the prompts.

    Extra fields for reward functions: `gfcr_reward`, `gfcr_signals`, `task_id`, `trajectory_id`.

    >>> f = rollout_func("gfcr/ToolUse-v0", num_tasks=10)
    >>> [config.env_id for config in f.envs.values()]
    ['gfcr/ToolUse-v0']
    """
    if env_id_or_suite in gym.registry:
        envs = [env_config(env_id_or_suite, env_kwargs)]
    elif env_kwargs:
        raise ConfigError(
            f"suite {env_id_or_suite!r} fixes its envs' keywords; got {sorted(env_kwargs)}: drop them"
        )
    else:
        suite = make_suite(env_id_or_suite)
        envs = [env_config(entry.env_id, entry.kwargs) for entry in suite.entries]
    return GfcrRollout(envs, policy, runner_config, controller, replay, sampling)


def _trainer_runner_config(args: Any, num_episodes: int) -> RunnerConfig:
    """The runner settings that follow TRL's: sampling, and the completion budget of an episode."""
    sampling = SamplingParams(
        temperature=float(args.temperature),
        top_p=float(args.top_p),
        max_tokens=int(args.max_completion_length),
    )
    return RunnerConfig(
        concurrency=num_episodes, sampling=sampling, max_episode_tokens=int(args.max_completion_length)
    )


def _in_groups(trajectories: Sequence[Trajectory], task_ids: Sequence[str], size: int) -> list[Trajectory]:
    """The run's trajectories in TRL's order: `size` of each task, group by group."""
    by_task: dict[str, list[Trajectory]] = {}
    for trajectory in trajectories:
        by_task.setdefault(trajectory.task_id, []).append(trajectory)
    ordered = []
    for task_id in task_ids:
        group, by_task[task_id] = by_task.get(task_id, [])[:size], by_task.get(task_id, [])[size:]
        if len(group) < size:
            break
        ordered += group
    leftover = sum(len(rest) for rest in by_task.values())
    if len(ordered) != size * len(task_ids) or leftover:
        raise ConfigError(
            f"the controller's run gave {len(trajectories)} episodes, but TRL needs {size} (num_generations) "
            f"for each of {len(task_ids)} prompts, no more (branches) and no fewer; give a controller that "
            f"keeps the batch's groups, e.g. RolloutController(ControlConfig(group_size={size}))"
        )
    return ordered


def _trl_fields(
    trajectories: Sequence[Trajectory], prompts: Sequence[Any], policy: TokenPolicy, eos_id: int
) -> dict[str, list[Any]]:
    """TRL's rollout fields from trajectories' token data; an episode that failed before the policy
    spoke gets its prompt's ids, one end-of-turn token masked out, and reward None."""
    out: dict[str, list[Any]] = {
        key: []
        for key in ("prompt_ids", "completion_ids", "logprobs", "env_mask", "gfcr_reward", "gfcr_signals")
    }
    out |= {"task_id": [], "trajectory_id": []}
    for trajectory, prompt in zip(trajectories, prompts, strict=True):
        tokens = trajectory.tokens
        spoke = tokens is not None and sum(tokens.loss_mask) > 0 and trajectory.status == "ok"
        if tokens is not None and spoke:
            out["prompt_ids"].append(list(tokens.prompt_ids))
            out["completion_ids"].append(list(tokens.completion_ids))
            out["logprobs"].append(list(tokens.logprobs))
            out["env_mask"].append(list(tokens.loss_mask))
        else:
            messages = (
                [Message.from_dict(m) for m in prompt]
                if isinstance(prompt, list)
                else [Message("user", prompt)]
            )
            out["prompt_ids"].append(
                list(tokens.prompt_ids) if tokens else policy.encode_prompt(messages, ())
            )
            out["completion_ids"].append([eos_id])
            out["logprobs"].append([0.0])
            out["env_mask"].append([0])
        out["gfcr_reward"].append(trajectory.total_reward if spoke else None)
        out["gfcr_signals"].append(dict(trajectory.signals))
        out["task_id"].append(trajectory.task_id)
        out["trajectory_id"].append(trajectory.id)
    return out


def _eos_id(trainer: Any) -> int:
    tokenizer = getattr(trainer.processing_class, "tokenizer", trainer.processing_class)
    return int(tokenizer.eos_token_id)


def _prompt_key(prompt: Any) -> str:
    return json.dumps(prompt, sort_keys=True, ensure_ascii=False, default=str)
