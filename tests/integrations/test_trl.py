"""gfcr's envs in TRL's real `GRPOTrainer`: `environment_factory`, `rollout_func` and `dataset`.

Each trainer run is one or two GRPO steps of the tiny model on CPU. Rewards with a known value
come from a token-level oracle policy (the env's own oracle, encoded with the tiny tokenizer).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

pytest.importorskip("trl", reason="the trl extra is not installed: pip install -e '.[trl]'")

from gfcr.agents import OraclePolicy  # noqa: E402
from gfcr.agents.policies.chat import ChatTokens, load_chat_encoder  # noqa: E402
from gfcr.control import ControlConfig  # noqa: E402
from gfcr.core import Completion, Request  # noqa: E402
from gfcr.errors import ConfigError  # noqa: E402
from gfcr.integrations import trl as gfcr_trl  # noqa: E402
from gfcr.replay import ReplayBuffer  # noqa: E402
from gfcr.trainers.config import PipelineConfig  # noqa: E402

ENV = "gfcr/ToolUse-v0"
KWARGS = {"num_tasks": 20}
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _quiet_trl(monkeypatch):
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")


class OracleTokens(ChatTokens):
    """The env's oracle as a `TokenPolicy` of the tiny model: its actions encoded as token ids."""

    def __init__(self, path: Path) -> None:
        self.chat = load_chat_encoder(str(path))
        self.oracle = OraclePolicy()
        self.name, self.version = "oracle-tokens", "0"

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        out = []
        for completion in self.oracle.generate(requests):
            ids = (*self.chat.encode(completion.text), *sorted(self.chat.end_ids))
            out.append(Completion(completion.text, completion_ids=ids, logprobs=(0.0,) * len(ids)))
        return out


def grpo_trainer(
    tiny_model: Path,
    tmp_path: Path,
    rows: int = 2,
    tasks: int | None = None,
    completion_tokens: int = 64,
    generations: int = 2,
    env: tuple[str, dict[str, Any]] = (ENV, KWARGS),
    trainer_class: type | None = None,
    **kwargs: Any,
):
    """A GRPOTrainer (or `trainer_class`) of the tiny model (or another model directory): one step
    of `rows` prompts of `env` (id, kwargs; `tasks` dataset rows), `generations` each."""
    from transformers import AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    args = GRPOConfig(
        output_dir=str(tmp_path / "out"),
        per_device_train_batch_size=generations * rows,
        num_generations=generations,
        max_completion_length=completion_tokens,
        max_steps=1,
        learning_rate=1e-3,
        beta=0.0,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        bf16=False,
        seed=0,
        disable_tqdm=True,
        dataloader_num_workers=0,
    )
    return (trainer_class or GRPOTrainer)(
        model=str(tiny_model),
        processing_class=AutoTokenizer.from_pretrained(tiny_model),
        args=args,
        train_dataset=gfcr_trl.dataset(env[0], n=tasks or rows, **env[1]),
        **kwargs,
    )


def logged(trainer, key: str) -> float:
    return next(log[key] for log in trainer.state.log_history if key in log)


# -- dataset -------------------------------------------------------------------------------------


def test_dataset_rows_are_the_envs_prompts_with_their_task_ids():
    rows = gfcr_trl.dataset(ENV, n=3, **KWARGS)
    env = gym.make(ENV, **KWARGS)
    for row in rows:
        _, info = env.reset(options={"task_id": row["task_id"]})
        assert row["prompt"] == [m.to_openai() for m in info["messages"]]
        assert (row["env_id"], json.loads(row["env_kwargs"])) == (ENV, KWARGS)
    assert len(set(rows["task_id"])) == 3
    assert len(gfcr_trl.dataset(ENV, **KWARGS)) == 20  # n=None: every task


def test_dataset_of_a_suite_keeps_each_rows_env(monkeypatch):
    from gfcr import suites

    entries = (suites.SuiteEntry(ENV, {"num_tasks": 5}, 2), suites.SuiteEntry(ENV, {"num_tasks": 7}, 2))
    suite = suites.Suite("trl-test", "two ToolUse configurations", entries)
    monkeypatch.setitem(suites._SUITES, "trl-test", lambda: suite)  # registered for this test only
    rows = gfcr_trl.dataset("trl-test")
    assert [json.loads(k)["num_tasks"] for k in rows["env_kwargs"]] == [5, 5, 7, 7]
    with pytest.raises(ConfigError, match="fixes its envs' keywords"):
        gfcr_trl.dataset("trl-test", num_tasks=3)


# -- environment_factory -------------------------------------------------------------------------


def test_tool_methods_have_the_envs_schemas():
    from transformers.utils import get_json_schema

    env = gym.make("gfcr/Math-v0", split="AIME2024", tools=("calculator",))
    _, info = env.reset()
    [expected] = info["tools"]
    Math = gfcr_trl.environment_factory("gfcr/Math-v0", split="AIME2024", tools=("calculator",))
    schema = get_json_schema(Math.calculator)["function"]
    assert schema["name"] == expected["function"]["name"] == "calculator"
    assert schema["parameters"]["required"] == expected["function"]["parameters"]["required"]
    assert schema["parameters"]["properties"]["expression"]["type"] == "string"
    assert schema["description"] == expected["function"]["description"]
    lookup = get_json_schema(gfcr_trl.environment_factory(ENV).lookup)["function"]
    assert (lookup["name"], lookup["parameters"]["properties"]) == ("lookup", {})


def test_tool_calls_step_the_env_and_bad_arguments_come_back_as_text():
    ToolUse = gfcr_trl.environment_factory(ENV, **KWARGS)
    env = ToolUse()
    assert env.reset(task_id="tooluse/4") == env.trajectory.prompt  # no prompt in the row: TRL appends it
    error = env.lookup(locker="x")  # the tool takes no argument
    assert error.startswith("Error:") and "unexpected ['locker']" in error
    code = env.lookup()
    gfcr_trl.final_answer([[{"role": "assistant", "content": code}]], environments=[env])
    assert env.get_reward() == 1.0
    assert [s.signals["used_tool"] for s in env.trajectory.steps] == [False, True, True]
    assert env.trajectory.steps[-1].signals["correct"] and env.trajectory.steps[-1].terminated


def test_an_unfinished_episode_is_truncated_with_its_reward_so_far():
    env = gfcr_trl.environment_factory(ENV, **KWARGS)()
    env.reset(task_id="tooluse/1", prompt=[{"role": "user", "content": "..."}])
    env.lookup()
    assert env.get_reward() == 0.0
    assert env.trajectory.steps[-1].truncated
    assert env.lookup().startswith("Error: the episode is over")


def test_reset_refuses_a_row_of_another_env_configuration():
    env = gfcr_trl.environment_factory(ENV, num_tasks=5)()
    [row] = gfcr_trl.dataset(ENV, n=1, **KWARGS)
    with pytest.raises(ConfigError, match="build it with environment_factory"):
        env.reset(**row)


def test_grpo_trainer_with_environment_factory(tiny_model, tmp_path):
    ToolUse = gfcr_trl.environment_factory(ENV, **KWARGS)
    trainer = grpo_trainer(
        tiny_model, tmp_path, environment_factory=ToolUse, reward_funcs=[gfcr_trl.final_answer]
    )
    trainer.train()
    assert trainer.state.global_step == 1
    episodes = [env.trajectory for env in trainer.environments]
    assert len(episodes) == 4 and all(t.steps for t in episodes)  # every rollout stepped the env
    rewards = [t.total_reward for t in episodes]
    assert ToolUse.__name__ == "ToolUseV0"  # TRL logs get_reward under the class name
    assert logged(trainer, "rewards/ToolUseV0/mean") == pytest.approx(sum(rewards) / 4)
    assert logged(trainer, "rewards/final_answer/mean") is None  # it scores nothing itself


def test_the_pretrained_model_trains_under_trl(smollm2, tmp_path):
    """`gfcr pretrained` writes a plain float32 model: TRL trains it (it refuses quantised configs)."""
    assert "quantization_config" not in json.loads((smollm2 / "config.json").read_text())

    def alternate(completions: list, **_: Any) -> list[float]:  # a reward spread in the group: a gradient
        return [float(i % 2) for i in range(len(completions))]

    trainer = grpo_trainer(smollm2, tmp_path, rows=1, completion_tokens=8, reward_funcs=[alternate])
    before = {name: p.detach().clone() for name, p in trainer.model.named_parameters()}
    trainer.train()
    assert trainer.state.global_step == 1
    assert any(not p.detach().equal(before[name]) for name, p in trainer.model.named_parameters())


# -- rollout_func --------------------------------------------------------------------------------


def test_grpo_trainer_with_rollout_func_scores_gfcr_rewards_and_fills_replay(tiny_model, tmp_path):
    replay = ReplayBuffer(tmp_path / "replay.db")
    rollout = gfcr_trl.rollout_func(ENV, OracleTokens(tiny_model), replay=replay, **KWARGS)
    trainer = grpo_trainer(tiny_model, tmp_path, rollout_func=rollout, reward_funcs=gfcr_trl.env_reward)
    trainer.train()
    assert trainer.state.global_step == 1
    assert logged(trainer, "reward") == 1.0  # the oracle, judged by gfcr's verifier
    trajectories = rollout.last_batch.generated
    assert len(trajectories) == len(replay) == 4
    policy_tokens = [sum(t.tokens.loss_mask) for t in trajectories]
    assert logged(trainer, "completions/mean_length") == sum(policy_tokens) / 4  # observations masked
    prompts = [prompt for prompt in trainer.train_dataset["prompt"] for _ in range(2)]
    out = rollout(prompts, trainer)  # what TRL receives from a step
    assert out["task_id"] == [task for task in trainer.train_dataset["task_id"] for _ in range(2)]
    assert out["gfcr_reward"] == [1.0] * 4 and all(s["correct"] for s in out["gfcr_signals"])
    for ids, mask, logprobs in zip(out["completion_ids"], out["env_mask"], out["logprobs"], strict=True):
        assert len(ids) == len(mask) == len(logprobs)
        assert 0 in mask and mask[-1] == 1  # the tool result between the two turns is not trained on
    assert set(replay.task_ids(passed=True)) == set(trainer.train_dataset["task_id"])


def test_control_takes_effect_inside_rollout_func(tiny_model, tmp_path):
    # A one-token length budget stops each episode after its first turn (the lookup), unanswered.
    config = PipelineConfig(control=ControlConfig(max_length=1))
    rollout = gfcr_trl.rollout_func(ENV, OracleTokens(tiny_model), config=config, **KWARGS)
    trainer = grpo_trainer(tiny_model, tmp_path, rollout_func=rollout, reward_funcs=gfcr_trl.env_reward)
    trainer.train()
    assert logged(trainer, "reward") == 0.0
    assert all(len(t.steps) == 1 and t.steps[0].truncated for t in rollout.last_batch.generated)
    assert rollout.last_batch.metrics["decide/stopped_episodes"] == 4
    history = rollout.pipeline.controller.history
    assert all(history.get(task).samples == 2 for task in trainer.train_dataset["task_id"])


class SpreadOracle(OracleTokens):
    """The oracle, but junk on the `informative` tasks' episodes of odd seed: a first turn is
    sampled with its episode's seed (later turns with seeds hashed from it), so the junk is decided
    there, and a group of consecutive seeds, or two waves (round seeds differ by an odd stride),
    always has a reward spread."""

    def __init__(self, path: Path, informative: set[str]) -> None:
        super().__init__(path)
        self.informative = informative
        ids = (*self.chat.encode("zzz"), *sorted(self.chat.end_ids))
        self.junk = Completion("zzz", completion_ids=ids, logprobs=(0.0,) * len(ids))

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        def junk(request: Request) -> bool:
            first_turn = not any(m.role == "assistant" for m in request.messages)
            return request.task.id in self.informative and first_turn and request.sampling.seed % 2 == 1

        answers = super().generate(requests)
        return [self.junk if junk(r) else a for r, a in zip(requests, answers, strict=True)]


def test_dynamic_sampling_with_thompson_selection_fills_the_batch_with_informative_groups(
    tiny_model, tmp_path
):
    tasks = gfcr_trl.dataset(ENV, n=6, **KWARGS)["task_id"]
    informative = set(tasks[-2:])  # not among the step's first prompts: dynamic sampling must find them
    config = PipelineConfig(control=ControlConfig(selector="thompson", dynamic_sampling=True, oversample=1.0))
    rollout = gfcr_trl.rollout_func(ENV, SpreadOracle(tiny_model, informative), config=config, **KWARGS)
    trainer = grpo_trainer(
        tiny_model, tmp_path, rows=2, tasks=6, rollout_func=rollout, reward_funcs=gfcr_trl.env_reward
    )
    trainer.train()
    assert set(rollout.last_batch.groups) == informative  # 2 groups, both with a reward spread
    assert logged(trainer, "reward") == 0.5 and logged(trainer, "frac_reward_zero_std") == 0.0
    history = rollout.pipeline.controller.history
    assert rollout.last_batch.decided.dropped >= 1 and all(history.get(t).samples > 0 for t in informative)


def test_rollout_func_refuses_stages_a_trl_batch_cannot_hold():
    budget = PipelineConfig(control=ControlConfig(sample_budget=6))
    with pytest.raises(
        ConfigError, match=r"sample_budget/token_budget .* num_generations samples of every prompt"
    ):
        gfcr_trl.rollout_func(ENV, config=budget, **KWARGS)


# -- the examples --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("example", "env_args", "tasks"),
    [
        # one task in the env: both of the step's prompts are it
        ("trl_environment_factory.py", ["-e", "num_tasks=1"], "tasks tooluse/0, tooluse/0"),
        # reasoning-gym's generator, as in the SmolLM2 command of the example's docstring
        ("trl_rollout_func.py", ["--env", "gfcr/Math-v0", "-e", "dataset=reasoning_gym",
                                 "-e", 'generators=["chain_sum"]', "-e", "size=50"], "tasks rg/chain_sum/"),
    ],
)  # fmt: skip
def test_example_runs_with_the_env_keywords_given(example, env_args, tasks, tiny_model, tmp_path):
    command = [sys.executable, str(ROOT / "examples" / example), "--model", str(tiny_model), *env_args]
    command += ["--out", str(tmp_path), "--steps", "1"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert tasks in done.stdout and "step 1: reward" in done.stdout and "grad norm" in done.stdout


def test_a_group_with_a_reward_spread_gives_a_gradient(tiny_model, tmp_path):
    """GRPO learns only from groups whose rewards differ: with a spread in every group (the oracle on
    even seeds, junk on odd ones), TRL logs a non-zero reward std and grad norm, and the weights move."""
    tasks = set(gfcr_trl.dataset(ENV, n=2, **KWARGS)["task_id"])
    rollout = gfcr_trl.rollout_func(ENV, SpreadOracle(tiny_model, tasks), **KWARGS)
    trainer = grpo_trainer(tiny_model, tmp_path, rollout_func=rollout, reward_funcs=gfcr_trl.env_reward)
    before = {name: p.detach().clone() for name, p in trainer.model.named_parameters()}
    trainer.train()
    rewards = [t.total_reward for t in rollout.last_batch.generated]
    assert sorted(rewards) == [0.0, 0.0, 1.0, 1.0]
    assert logged(trainer, "reward_std") > 0 and logged(trainer, "frac_reward_zero_std") == 0.0
    assert logged(trainer, "grad_norm") > 0
    assert any(not p.detach().equal(before[name]) for name, p in trainer.model.named_parameters())


def test_grpo_trainer_through_a_remote_env(tiny_model, tmp_path, tooluse_gold_server, monkeypatch):
    """The same GRPO step with the env behind `gfcr serve-env` (gfcr/Remote-v0): tasks, episodes and
    rewards come over the OpenEnv protocol (from a trainer-side server, `--send-gold`: the oracle
    plays from the gold data)."""
    url, token = tooluse_gold_server
    monkeypatch.setenv("GFCR_SERVE_TOKEN", token)
    from transformers import AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    remote = {"url": url}
    rollout = gfcr_trl.rollout_func("gfcr/Remote-v0", OracleTokens(tiny_model), **remote)
    args = GRPOConfig(
        output_dir=str(tmp_path / "out"), per_device_train_batch_size=4, num_generations=2,
        max_completion_length=64, max_steps=1, beta=0.0, save_strategy="no", report_to="none",
        use_cpu=True, logging_steps=1, disable_tqdm=True, dataloader_num_workers=0,
    )  # fmt: skip
    trainer = GRPOTrainer(
        model=str(tiny_model),
        processing_class=AutoTokenizer.from_pretrained(tiny_model),
        args=args,
        train_dataset=gfcr_trl.dataset("gfcr/Remote-v0", n=2, **remote),
        rollout_func=rollout,
        reward_funcs=gfcr_trl.env_reward,
    )
    trainer.train()
    assert logged(trainer, "reward") == 1.0  # the oracle, judged by the served env's verifier
    # trajectories name the env the server plays, and keep where it was played
    assert {t.env_id for t in rollout.last_batch.generated} == {"gfcr/ToolUse-v0"}
    assert all(t.remote and t.remote["url"] == url for t in rollout.last_batch.generated)
    assert all(t.task_id.startswith("tooluse/") for t in rollout.last_batch.generated)
