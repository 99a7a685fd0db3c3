"""gfcr envs inside veRL 0.9: an `AgentLoop` that plays gfcr episodes, and its dataset.

veRL's PPO/GRPO trainer (`python -m verl.trainer.main_ppo`) rolls out each prompt row with the
agent loop its `agent_name` column names. `GfcrAgentLoop` (registered as `"gfcr_agent"`) plays
one gfcr episode per row, token-in-token-out:

- it makes the row's env (`gymnasium.make(env_id, **env_kwargs)`, pooled per worker process),
  resets it to the row's `task_id` and renders the env's messages and tools with the tokenizer's
  chat template (veRL's own `apply_chat_template`, so `data.apply_chat_template_kwargs` apply);
- each turn, veRL's server manager (vLLM/SGLang) generates from the ids so far; the sampled
  ids are the response (mask 1, their logprobs) and their text is the gfcr action, which the env
  parses itself (gfcr's `<tool_call>` blocks, or a plain answer);
- the env's observation messages are rendered by the chat template as the ids that follow the
  sampled ones (`gfcr.agents.policies.chat.ChatEncoder`: the model's own ids are never
  re-tokenized) and appended with mask 0, until the env terminates or truncates, veRL's
  `rollout.response_length` budget runs out, or `multi_turn.max_assistant_turns` is reached;
- `reward_score` is gfcr's episode reward (the sum of the step rewards), so veRL needs no reward
  function; `extra_fields` carries the env id, task id, per-step rewards and the last step's
  Filter signals, and `reward_extra_info` what the recipe's per-episode stages did, as numbers
  veRL keeps beside each rollout (`gfcr_guided`, `gfcr_stopped`: 1.0 or 0.0; `trainer.rollout_data_dir`
  writes them with every sample, and validation averages them into its `val-aux/` metrics).

Rows come from `dataset(env_id, n)` (or `to_parquet(path, env_id, n)`): veRL's RLHFDataset
columns `data_source`, `prompt` (chat messages), `agent_name` and `extra_info`, whose `env_id`,
`env_kwargs` (JSON) and `task_id` pick the episode. veRL's rollout workers are Ray actors in
other processes, which find the loop through an agent-loop config file (`write_agent_loop_config`)
rather than through this module's `@register`. A recipe (a GPU machine; `vllm` installed):

    .venv-verl/bin/python -c "from gfcr.integrations import verl as g; \\
        g.to_parquet('data/train.parquet', 'gfcr/ToolUse-v0', n=256); \\
        g.to_parquet('data/val.parquet', 'gfcr/ToolUse-v0', n=32, seed=1); \\
        g.write_agent_loop_config('data/agent_loops.yaml')"
    .venv-verl/bin/python -m verl.trainer.main_ppo algorithm.adv_estimator=grpo \\
        data.train_files=data/train.parquet data.val_files=data/val.parquet \\
        data.max_prompt_length=512 data.max_response_length=256 data.train_batch_size=8 \\
        actor_rollout_ref.model.path=Qwen/Qwen3-0.6B \\
        actor_rollout_ref.rollout.name=vllm actor_rollout_ref.rollout.n=4 \\
        actor_rollout_ref.rollout.agent.agent_loop_config_path=data/agent_loops.yaml \\
        actor_rollout_ref.actor.ppo_mini_batch_size=8 trainer.n_gpus_per_node=1 ...

veRL 0.9 pins transformers<5.11 and pulls ray, hydra, tensordict and wandb, so this module runs
from its own venv: `bash scripts/setup_verl.sh`, then `.venv-verl/bin/python`.

>>> rows = dataset("gfcr/ToolUse-v0", n=2, num_tasks=10)
>>> rows[0]["agent_name"], sorted(rows[0]["extra_info"])
('gfcr_agent', ['env_id', 'env_kwargs', 'index', 'task_id'])
>>> AGENT_NAME in _agent_loop_registry
True
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar
from uuid import uuid4

import gymnasium as gym

try:
    from verl.experimental.agent_loop.agent_loop import (  # type: ignore[import-not-found, unused-ignore]
        AgentLoopBase,
        AgentLoopOutput,
        _agent_loop_registry,  # noqa: F401  (the doctest shows the loop registered)
        register,
    )
except ImportError as e:  # pragma: no cover - depends on the venv
    raise ImportError(
        "gfcr.integrations.verl needs verl==0.9.0, which lives in its own venv (it pins "
        f"transformers<5.11): run `bash scripts/setup_verl.sh`, then use .venv-verl/bin/python ({e})"
    ) from e

import gfcr  # noqa: F401  (registers the gfcr/ env ids with Gymnasium)
from gfcr.agents.policies.chat import ChatEncoder
from gfcr.agents.runner.specs import task_specs
from gfcr.control import AdaptiveGuidance, ControlConfig, RolloutController
from gfcr.control.guidance import guide_of
from gfcr.core import Message, Step, Task, TokenData, Trajectory
from gfcr.core.config import from_dict
from gfcr.envs.spaces import observation_text
from gfcr.errors import ConfigError
from gfcr.generate import BranchTokens, GuidanceConfig, first_user_text, inject

__all__ = [
    "AGENT_NAME",
    "GfcrAgentLoop",
    "dataset",
    "episode_of",
    "to_parquet",
    "write_agent_loop_config",
]

logger = logging.getLogger(__name__)

AGENT_NAME = "gfcr_agent"
"""The `agent_name` of gfcr rows: veRL runs them with `GfcrAgentLoop`."""

Json = dict[str, Any]


# -- the dataset ---------------------------------------------------------------------------------


def dataset(
    env_id_or_suite: str, n: int | None = None, *, seed: int = 0, split: str | None = None, **env_kwargs: Any
) -> list[Json]:
    """The rows veRL's RLHFDataset reads for an env's tasks (or a suite's), one per task.

    Each row: `data_source` (the env id), `prompt` (the env's reset messages, OpenAI chat format:
    what veRL filters by length and logs; the loop renders the env's own messages and tools),
    `agent_name` (`"gfcr_agent"`) and `extra_info` with `env_id`, `env_kwargs` (JSON of the
    `gymnasium.make` keywords), `task_id` and `index`. For an env, `n` tasks in a seeded order
    (every task if None; `split=X` is the env keyword `split=X`); for a suite, its first `n` tasks.
    """
    if split is not None:
        env_kwargs["split"] = split
    envs: dict[str, gym.Env] = {}
    rows = []
    for index, spec in enumerate(task_specs(env_id_or_suite, n, seed=seed, kwargs=env_kwargs)):
        if spec.env.key not in envs:
            envs[spec.env.key] = gym.make(spec.env.env_id, **spec.env.kwargs)
        _, info = envs[spec.env.key].reset(options={"task_id": spec.task_id})
        rows.append(
            {
                "data_source": spec.env.env_id,
                "prompt": [{"role": m.role, "content": m.text} for m in info["messages"]],
                "agent_name": AGENT_NAME,
                "extra_info": {
                    "env_id": spec.env.env_id,
                    "env_kwargs": json.dumps(spec.env.kwargs, sort_keys=True, default=str),
                    "task_id": info["task"].id,
                    "index": index,
                },
            }
        )
    for env in envs.values():
        env.close()
    return rows


def to_parquet(
    path: str | Path, env_id_or_suite: str, n: int | None = None, *, seed: int = 0, **env_kwargs: Any
) -> Path:
    """Write `dataset(env_id_or_suite, n, seed=seed, **env_kwargs)` to a parquet file for
    `data.train_files` / `data.val_files`; returns its path."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(dataset(env_id_or_suite, n, seed=seed, **env_kwargs)), path)
    return path


def write_agent_loop_config(path: str | Path, recipe: str | Path | None = None) -> Path:
    """Write the agent-loop config file that makes veRL's rollout workers (Ray actors, other
    processes) find `GfcrAgentLoop`: pass it as `actor_rollout_ref.rollout.agent.agent_loop_config_path`.
    `recipe` (a gfcr train recipe) gives every episode the pipeline's per-episode stages
    (`EpisodeStages`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    target = f"{GfcrAgentLoop.__module__}.{GfcrAgentLoop.__qualname__}"
    text = f"- name: {AGENT_NAME}\n  _target_: {target}\n"
    if recipe is not None:
        EpisodeStages.from_recipe(recipe)  # a recipe veRL cannot run fails here, not in a worker
        text += f"  recipe: {json.dumps(str(Path(recipe).resolve()))}\n"
    path.write_text(text)
    return path


# A recipe's group stages under veRL: (section, key) -> what veRL does instead
VERL_OWNS = {
    ("control", "selector"): "veRL samples prompts itself (data.sampler)",
    ("control", "sample_budget"): "veRL samples actor_rollout_ref.rollout.n per prompt",
    ("control", "token_budget"): "veRL samples actor_rollout_ref.rollout.n per prompt",
    ("control", "dynamic_sampling"): "veRL does this itself, with algorithm.filter_groups",
    ("control", "early_stopping"): "veRL samples each group whole (actor_rollout_ref.rollout.n)",
    ("control", "branch_at"): "veRL plays one unbranched episode per row",
    ("generate", "tree"): "veRL plays one unbranched episode per row",
    ("overlong_penalty", None): "veRL does this itself, with reward_model.overlong_buffer",
    ("replay", None): "veRL trains on-policy from its own rollouts",
    ("credit", None): "veRL computes the advantages itself (algorithm.adv_estimator)",
}


@dataclass
class EpisodeStages:
    """The rollout pipeline's stages that act on one episode, inside veRL's agent loop: guidance
    in its prompt (`[generate.guidance]`, adaptive over the posteriors this worker has seen) and
    Control's stops after each step (`[control]` prefix_signal, max_length, length_factor). veRL
    itself samples each prompt's group (`rollout.n`) and computes the advantages, so a recipe's
    group stages are refused, naming what veRL does instead (`VERL_OWNS`).

    >>> plan = {"kind": "plan", "plan": "Look it up."}
    >>> stages = EpisodeStages.from_dict({"control": {"max_length": 8}, "generate": {"guidance": plan}})
    >>> stages.guidance([Message("user", "q")], Task("tooluse/0", "q"))
    'Follow this plan:\\nLook it up.'
    >>> EpisodeStages.from_dict({"control": {"dynamic_sampling": True}})
    Traceback (most recent call last):
    ...
    gfcr.errors.ConfigError: [control] dynamic_sampling: veRL does this itself, with ...; leave it out ...
    """

    controller: RolloutController = field(default_factory=RolloutController)
    guidance_config: GuidanceConfig = field(default_factory=GuidanceConfig)

    def __post_init__(self) -> None:
        config = self.guidance_config
        self.guide = guide_of(config) if config.kind != "none" else None
        below = config.adaptive_below
        self.when = AdaptiveGuidance(self.controller.history, below) if below is not None else None

    @classmethod
    def from_dict(cls, recipe: dict[str, Any]) -> EpisodeStages:
        """The stages of a recipe's tables (the trainer-only ones are left alone)."""
        for (section, key), owner in VERL_OWNS.items():
            if _asks(recipe, section, key):
                what = f"[{section}]" + (f" {key}" if key else "")
                raise ConfigError(f"{what}: {owner}; leave it out of the recipe for veRL")
        control = from_dict(ControlConfig, recipe.get("control", {}), "control")
        guidance_table = recipe.get("generate", {}).get("guidance", {})
        guidance = from_dict(GuidanceConfig, guidance_table, "generate.guidance")
        return cls(RolloutController(control), guidance)

    @classmethod
    def from_recipe(cls, path: str | Path) -> EpisodeStages:
        """The stages of a recipe file (e.g. examples/methods/grpo.toml)."""
        import tomllib

        with open(path, "rb") as f:
            return cls.from_dict(tomllib.load(f))

    def guidance(self, messages: Sequence[Message], task: Task) -> str:
        """The guidance an episode's prompt gets ("" for none)."""
        if self.guide is None or (self.when is not None and not self.when(task)):
            return ""
        return self.guide.guidance(first_user_text(messages))

    def stop(self, trajectory: Trajectory) -> bool:
        """Whether Control stops the episode after its last step (prefix stop, length budget)."""
        return self.controller.after_step(trajectory).stop

    def observe(self, trajectory: Trajectory) -> None:
        """A finished episode updates its prompt's posterior (adaptive guidance, length budgets)."""
        self.controller.observe([trajectory])


def _asks(recipe: dict[str, Any], section: str, key: str | None) -> bool:
    """Whether a recipe turns on `section`'s `key` (None: the section's module as a whole)."""
    table = recipe.get(section) or {}
    if section == "generate":  # the tree inside turns
        return from_dict(BranchTokens, table.get(key) or {}, "generate.tree").enabled
    if key is None:
        return bool(table.get("enabled", False))
    return key in table and table[key] != getattr(ControlConfig(), key)


def episode_of(row: Json) -> tuple[str, Json, str]:
    """`(env_id, env_kwargs, task_id)` of a row's fields as the agent loop receives them (from
    `extra_info`, or from top-level columns of the same names)."""
    extra = dict(row.get("extra_info") or {})
    fields = {key: extra.get(key, row.get(key)) for key in ("env_id", "env_kwargs", "task_id")}
    missing = [key for key, value in fields.items() if value is None]
    if missing:
        raise ConfigError(
            f"a gfcr row needs env_id, env_kwargs and task_id (in extra_info), missing {missing}; "
            "make rows with gfcr.integrations.verl.dataset or to_parquet"
        )
    kwargs = fields["env_kwargs"]
    env_kwargs = json.loads(kwargs) if isinstance(kwargs, str) else kwargs
    if not isinstance(env_kwargs, dict):
        raise ConfigError(f"env_kwargs must be a JSON object of gymnasium.make keywords, got {kwargs!r}")
    return str(fields["env_id"]), env_kwargs, str(fields["task_id"])


# -- the agent loop ------------------------------------------------------------------------------


class _TemplateEncoder(ChatEncoder):
    """gfcr's `ChatEncoder` rendering with veRL's `data.apply_chat_template_kwargs` (e.g.
    `enable_thinking`), so observation ids match the prompt veRL renders."""

    def __init__(self, tokenizer: Any, end_ids: Sequence[int], template_kwargs: Json) -> None:
        self.template_kwargs = dict(template_kwargs)
        super().__init__(tokenizer, end_ids)

    def _render(self, conversation: list[Json], **kwargs: Any) -> str:
        options = {**self.template_kwargs, **kwargs}
        return str(self.tokenizer.apply_chat_template(conversation, tokenize=False, **options))


@dataclass
class _Response:
    """The response side of one episode as it grows: ids, loss mask and logprobs, turn by turn."""

    ids: list[int] = field(default_factory=list)
    mask: list[int] = field(default_factory=list)  # 1: sampled by the policy, 0: the env's observation
    logprobs: list[float] | None = field(default_factory=list)  # None once a turn came without them
    rewards: list[float] = field(default_factory=list)  # the env's, one per policy turn
    observations: int = 0

    def add_turn(self, ids: list[int], logprobs: Sequence[float] | None) -> None:
        self.ids += ids
        self.mask += [1] * len(ids)
        if self.logprobs is not None and logprobs is not None:
            self.logprobs += list(logprobs)[: len(ids)]
        else:
            self.logprobs = None  # keep none rather than misalign them

    def add_observation(self, ids: list[int]) -> None:
        self.ids += ids
        self.mask += [0] * len(ids)
        if self.logprobs is not None:
            self.logprobs += [0.0] * len(ids)
        self.observations += 1


@register(AGENT_NAME)
class GfcrAgentLoop(AgentLoopBase):  # type: ignore[misc]
    """One gfcr episode per dataset row (see the module docstring); veRL makes one per row."""

    # Envs are pooled per worker process: veRL builds an agent loop per row, and making an env
    # can be slow (datasets, sandboxes). An env is taken out while an episode runs on it.
    _idle_envs: ClassVar[dict[str, list[gym.Env]]] = defaultdict(list)
    _encoders: ClassVar[dict[int, tuple[Any, _TemplateEncoder]]] = {}  # id(tokenizer) -> (it, its encoder)
    # A recipe's per-episode stages, one per worker process: the posteriors they keep grow over its rows
    _stages: ClassVar[dict[str, EpisodeStages]] = {}

    def __init__(self, *args: Any, recipe: str | None = None, **kwargs: Any) -> None:
        kwargs.pop("tools", None)  # veRL's own tools: gfcr envs bring theirs
        super().__init__(*args, **kwargs)
        if recipe is not None and recipe not in self._stages:
            self._stages[recipe] = EpisodeStages.from_recipe(recipe)
        self.stages = self._stages[recipe] if recipe is not None else EpisodeStages()
        self.response_length = int(self.rollout_config.response_length)
        multi_turn = self.rollout_config.get("multi_turn", {}) or {}
        self.max_assistant_turns = multi_turn.get("max_assistant_turns") or None

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        """Play the row's episode; `kwargs` are the row's fields (veRL's `non_tensor_batch`)."""
        env_id, env_kwargs, task_id = episode_of(kwargs)
        key = json.dumps([env_id, env_kwargs], sort_keys=True, default=str)
        env = self._idle_envs[key].pop() if self._idle_envs[key] else gym.make(env_id, **env_kwargs)
        try:
            return await self._play(env, env_id, task_id, sampling_params)
        finally:
            self._idle_envs[key].append(env)

    async def _play(self, env: gym.Env, env_id: str, task_id: str, sampling: Json) -> AgentLoopOutput:
        obs, info = await self._in_thread(env.reset, options={"task_id": task_id})
        encoder = self._encoder()
        guidance = self.stages.guidance(info["messages"], info["task"])  # the generate stage's, in the prompt
        messages = [m.to_openai() for m in inject(info["messages"], guidance)]
        prompt_ids = await self.apply_chat_template(messages, tools=list(info["tools"]) or None)
        response = _Response()
        # the episode as Control sees it after each step (prefix stop, length budget)
        trajectory = Trajectory(
            env_id, task_id, observation_text(obs), messages=list(info["messages"]), guidance=guidance
        )
        extra: Json = {}
        timing = {"generate_sequences": 0.0, "tool_calls": 0.0}
        request_id, signals, ended = uuid4().hex, {}, "response_length"
        while (budget := self.response_length - len(response.ids)) > 0:
            started = time.perf_counter()
            output = await self.server_manager.generate(
                request_id=request_id,
                prompt_ids=prompt_ids + response.ids,
                sampling_params={**sampling, "max_tokens": min(sampling.get("max_tokens", budget), budget)},
            )
            timing["generate_sequences"] += time.perf_counter() - started
            # veRL's per-request fields: the first turn's win (min_global_steps), the last turn's max
            last_step = output.extra_fields.get("max_global_steps")
            extra = {**output.extra_fields, **extra, "max_global_steps": last_step}
            ids = list(output.token_ids)[:budget]
            response.add_turn(ids, output.log_probs)

            started = time.perf_counter()
            action = encoder.completion_text(ids)  # the env parses its own tool-call format
            obs, reward, terminated, truncated, info = await self._in_thread(env.step, action)
            timing["tool_calls"] += time.perf_counter() - started
            response.rewards.append(float(reward))
            signals = dict(info.get("signals") or {})
            trajectory.steps.append(
                Step(action, observation_text(obs), float(reward), terminated, truncated, signals)
            )
            ids = list(response.ids)
            trajectory.tokens = TokenData(prompt_ids, ids, list(response.mask), [0.0] * len(ids))
            if terminated or truncated:
                ended = "terminated" if terminated else "truncated"
                break
            if self.stages.stop(trajectory):
                ended = "stopped"  # by the recipe's Control: its prefix failed, or it outgrew its budget
                trajectory.steps[-1].truncated = True
                break
            if self.max_assistant_turns and len(response.rewards) >= self.max_assistant_turns:
                ended = "max_assistant_turns"
                break
            observation_ids = encoder.observation_ids(info["messages"], ids)
            if len(response.ids) + len(observation_ids) >= self.response_length:
                break  # no room left to generate after the observation
            response.add_observation(observation_ids)

        self.stages.observe(trajectory)
        extra.update(gfcr_env_id=env_id, gfcr_task_id=task_id, gfcr_ended=ended, gfcr_signals=signals,
                     gfcr_guidance=guidance, turn_scores=response.rewards, tool_rewards=[])  # fmt: skip
        # veRL carries these keys of every rollout to its dumps and validation metrics (numbers only:
        # it averages them); they show the recipe's stages acted inside its workers
        extra["reward_extra_info"] = {
            "gfcr_guided": float(bool(guidance)),
            "gfcr_stopped": float(ended == "stopped"),
        }
        return AgentLoopOutput(
            prompt_ids=prompt_ids,
            response_ids=response.ids,
            response_mask=response.mask,
            response_logprobs=response.logprobs or None,
            reward_score=sum(response.rewards),  # gfcr's episode reward: veRL puts it on the last token
            num_turns=1 + len(response.rewards) + response.observations,  # prompt, policy's turns, env's
            metrics={**timing, "num_preempted": -1},
            extra_fields=extra,
        )

    def _encoder(self) -> _TemplateEncoder:
        """The chat encoder of this worker's tokenizer (built once: it renders probe conversations)."""
        tokenizer = self.tokenizer
        cached = self._encoders.get(id(tokenizer))
        if cached is None or cached[0] is not tokenizer:
            end_ids = [tokenizer.eos_token_id, *_generation_eos(self.config.actor_rollout_ref.model.path)]
            cached = (tokenizer, _TemplateEncoder(tokenizer, end_ids, self.apply_chat_template_kwargs or {}))
            self._encoders[id(tokenizer)] = cached
        return cached[1]

    async def _in_thread(self, function: Any, *args: Any, **kwargs: Any) -> Any:
        """Run a blocking env call off the event loop (other rows' coroutines keep generating)."""
        return await asyncio.get_running_loop().run_in_executor(None, lambda: function(*args, **kwargs))


def _generation_eos(model_path: str) -> list[int]:
    """The end-of-turn ids of the model's generation config (what vLLM stops at), if it has one."""
    from transformers import GenerationConfig

    try:
        eos = GenerationConfig.from_pretrained(model_path).eos_token_id
    except Exception:  # no generation_config.json, or a path only veRL's own loader resolves
        return []
    return [eos] if isinstance(eos, int) else list(eos or [])
