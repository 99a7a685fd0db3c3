"""gfcr envs inside veRL 0.9's agent-loop machinery, on CPU.

veRL lives in its own venv (.venv-verl, made by scripts/setup_verl.sh: it pins transformers<5.11),
so this file is two things. Run by that venv's python as a script, it plays gfcr/ToolUse-v0
episodes with veRL's real classes — the trainer config composed from veRL's own config files,
its RLHFDataset reading `to_parquet`'s file, its `AgentLoopWorker` and `GfcrAgentLoop` — against
server managers that really generate (`TransformersServer`: the tiny model sampled with
transformers on CPU, a stand-in for vLLM) or emit scripted text as tokens (the env's oracle,
junk), and prints what came out as JSON. Collected by pytest in the main venv, its tests run that
script once and check the JSON against a local gfcr env and the tiny model's tokenizer.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
VERL_PYTHON = ROOT / ".venv-verl" / "bin" / "python"
ENV_ID = "gfcr/ToolUse-v0"
ENV_KWARGS = {"num_tasks": 20}
PROMPT_LENGTH, RESPONSE_LENGTH = 1024, 160
MAX_NEW_TOKENS = 24  # per turn of the tiny model: random text, so every turn would run to the budget
BUDGET = 40  # a response length that ends an episode after the lookup call (24 ids + 16 of observation)


# -- the veRL side: run by .venv-verl/bin/python ------------------------------------------------


def verl_side(model_dir: str, work_dir: str) -> dict[str, Any]:  # pragma: no cover - runs in .venv-verl
    """Play episodes through veRL's classes; everything the tests check, as JSON-able data."""
    import doctest

    import gymnasium as gym
    import numpy as np
    import torch
    import verl
    from hydra import compose, initialize_config_dir
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker, DictConfigWrap
    from verl.protocol import DataProto
    from verl.trainer.ppo.reward import extract_reward
    from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn
    from verl.workers.rollout.llm_server import LLMServerClient
    from verl.workers.rollout.replica import TokenOutput

    from gfcr.envs.tooluse.env import LOOKUP_CALL
    from gfcr.errors import ConfigError
    from gfcr.integrations import verl as gfcr_verl
    from gfcr.registry import env_class

    config_dir = str(Path(verl.__file__).parent / "trainer" / "config")
    with initialize_config_dir(config_dir=config_dir, version_base=None):
        config = compose("ppo_trainer", overrides=[
            f"actor_rollout_ref.model.path={model_dir}",
            "actor_rollout_ref.rollout.name=vllm",
            f"actor_rollout_ref.rollout.prompt_length={PROMPT_LENGTH}",
            f"actor_rollout_ref.rollout.response_length={RESPONSE_LENGTH}",
            f"data.max_prompt_length={PROMPT_LENGTH}",
            f"data.max_response_length={RESPONSE_LENGTH}",
            "data.filter_overlong_prompts_workers=1",
        ])  # fmt: skip

    class TransformersServer(LLMServerClient):
        """veRL's server manager, generating with the tiny model on CPU (a stand-in for vLLM).

        ToolUse ends at the first plain answer and random text never calls the tool, so each
        episode's first turn is the lookup call, teacher-forced (its ids scored by the model for
        their logprobs); every later turn is sampled."""

        def __init__(self, tokenizer) -> None:
            super().__init__(config)
            self.model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
            self.opening = tokenizer.encode(LOOKUP_CALL, add_special_tokens=False) + [tokenizer.eos_token_id]
            self.tool_response_id = tokenizer.convert_tokens_to_ids("<tool_response>")
            self.calls: list[list[int]] = []

        async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
            max_new = min(int(sampling_params.get("max_tokens", MAX_NEW_TOKENS)), MAX_NEW_TOKENS)
            torch.manual_seed(len(self.calls))
            with torch.no_grad():
                if self.tool_response_id not in prompt_ids:  # the first turn
                    ids = self.opening[: sampling_params["max_tokens"]]
                    logits = self.model(torch.tensor([prompt_ids + ids])).logits[0, len(prompt_ids) - 1 : -1]
                else:
                    out = self.model.generate(
                        torch.tensor([prompt_ids]), max_new_tokens=max_new, do_sample=True, top_k=0,
                        temperature=float(sampling_params.get("temperature") or 1.0),
                        output_logits=True, return_dict_in_generate=True,
                    )  # fmt: skip
                    ids = out.sequences[0, len(prompt_ids) :].tolist()
                    logits = torch.cat(out.logits)
            logprobs = torch.log_softmax(logits.float(), -1)[range(len(ids)), ids].tolist()
            self.calls.append(ids)
            return TokenOutput(token_ids=ids, log_probs=logprobs, stop_reason="completed")

    class ScriptedServer(LLMServerClient):
        """veRL's server manager answering with text as token ids: the env's oracle, or junk. It
        plays its own copy of each episode (found by its prompt ids) to ask the oracle."""

        def __init__(self, tokenizer, reply: str | None) -> None:
            super().__init__(config)
            self.tokenizer, self.reply = tokenizer, reply
            self.mirrors: dict[tuple[int, ...], Any] = {}  # prompt ids -> (env, task, messages)

        def begin(self, prompt_ids: list[int], task_id: str) -> None:
            env = gym.make(ENV_ID, **ENV_KWARGS)
            _, info = env.reset(options={"task_id": task_id})
            self.mirrors[tuple(prompt_ids)] = (env, info["task"], list(info["messages"]))

        async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
            if self.reply is None:
                key = next(k for k in self.mirrors if tuple(prompt_ids[: len(k)]) == k)
                env, task, messages = self.mirrors[key]
                text = env_class(ENV_ID).oracle(task, messages)
                _, _, _, _, info = env.step(text)
                messages += info["messages"]
            else:
                text = self.reply
            ids = self.tokenizer.encode(text, add_special_tokens=False) + [self.tokenizer.eos_token_id]
            return TokenOutput(token_ids=ids[: sampling_params["max_tokens"]])

    # veRL's RLHFDataset over the parquet file, and its worker (tokenizer from the model config).
    parquet = gfcr_verl.to_parquet(Path(work_dir) / "train.parquet", ENV_ID, n=4, **ENV_KWARGS)
    server = TransformersServer(AutoTokenizer.from_pretrained(model_dir))
    worker = AgentLoopWorker(config, server)
    tokenizer = worker.tokenizer  # veRL's own: loaded from actor_rollout_ref.model
    rows = RLHFDataset([str(parquet)], tokenizer, config.data)
    items = [rows[i] for i in range(len(rows))]
    report: dict[str, Any] = {"dataset_len": len(rows), "dataset_keys": sorted(items[0])}

    def make_loop(server_manager, trainer_config=config, **options):
        return gfcr_verl.GfcrAgentLoop(
            trainer_config=DictConfigWrap(trainer_config), server_manager=server_manager, tokenizer=tokenizer,
            processor=None, dataset_cls=RLHFDataset, data_config=DictConfigWrap(config.data), **options,
        )  # fmt: skip

    def plain(output) -> dict[str, Any]:
        as_dict = output.as_dict()
        return {
            **output.model_dump(include={"prompt_ids", "response_ids", "response_mask", "response_logprobs",
                                         "reward_score", "num_turns"}),
            "extra_fields": {k: v for k, v in output.extra_fields.items() if k.startswith(("gfcr_", "turn_"))},
            "reward_extra_info": output.extra_fields.get("reward_extra_info"),
            "as_dict": {"keys": sorted(as_dict), "rm_scores_last": float(as_dict["rm_scores"][-1]),
                        "rm_scores_sum": float(as_dict["rm_scores"].sum()),
                        "responses_len": int(as_dict["responses"].shape[0])},
        }  # fmt: skip

    sampling = {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "repetition_penalty": 1.0, "logprobs": True}

    async def play_all() -> None:
        sampled = []
        for item in items:
            start = len(server.calls)
            output = await make_loop(server).run(dict(sampling), **item)
            sampled.append({**plain(output), "task_id": item["extra_info"]["task_id"],
                            "generated": server.calls[start:]})  # fmt: skip
        report["sampled"] = sampled
        for name, reply in (("oracle", None), ("junk", "banana")):
            scripted = ScriptedServer(tokenizer, reply)
            report[name] = []
            for item in items:
                loop = make_loop(scripted)
                task_id = item["extra_info"]["task_id"]
                prompt_ids = await loop.apply_chat_template(*_reset_chat(ENV_ID, task_id))
                scripted.begin(prompt_ids, task_id)
                report[name].append({**plain(await loop.run(dict(sampling), **item)), "task_id": task_id})

        # A response budget that the first observation would overrun: the episode stops before it.
        small = copy.deepcopy(config)
        small.actor_rollout_ref.rollout.response_length = BUDGET
        scripted, item = ScriptedServer(tokenizer, None), items[0]
        loop = make_loop(scripted, small)
        scripted.begin(await loop.apply_chat_template(*_reset_chat(ENV_ID, item["extra_info"]["task_id"])),
                       item["extra_info"]["task_id"])  # fmt: skip
        report["budget"] = plain(await loop.run(dict(sampling), **item))

        # A recipe's per-episode stages: a plan in the prompt, and Control's length budget stopping the
        # episode after its first turn (the lookup call); what veRL does itself is refused.
        recipe = Path(work_dir) / "recipe.toml"
        recipe.write_text('[control]\nmax_length = 1\n[generate.guidance]\nkind = "plan"\nplan = "Look the code up."\n')
        configured = Path(work_dir) / "agent_loops.yaml"
        gfcr_verl.write_agent_loop_config(configured, recipe=recipe)
        report["recipe"] = {**plain(await make_loop(server, recipe=str(recipe)).run(dict(sampling), **items[0])),
                            "agent_loop_config": configured.read_text()}  # fmt: skip
        refused = []
        for table in ({"control": {"dynamic_sampling": True}}, {"generate": {"tree": {"segments": 2}}}):
            try:
                gfcr_verl.EpisodeStages.from_dict(table)
            except ConfigError as e:
                refused.append(str(e))
        report["refused"] = refused

        # The whole worker path: a batch as veRL's trainer hands it over, padded into a DataProto.
        batch = DataProto.from_single_dict(collate_fn(items))
        result = await worker.generate_sequences(batch)
        report["batch"] = {
            "shapes": {k: list(v.shape) for k, v in result.batch.items()},
            "rm_scores_sum": result.batch["rm_scores"].sum(-1).tolist(),
            "response_mask_sum": result.batch["response_mask"].sum(-1).tolist(),
            "task_ids": [str(t) for t in result.non_tensor_batch["gfcr_task_id"]],
            "agent_names": np.unique(result.non_tensor_batch["agent_name"]).tolist(),
            # what veRL's trainer reads of the rollouts beside the reward (its dumps, val-aux/ metrics)
            "reward_extra_infos": {k: v.tolist() for k, v in extract_reward(result)[1].items()},
        }

    def _reset_chat(env_id: str, task_id: str):
        env = gym.make(env_id, **ENV_KWARGS)
        _, info = env.reset(options={"task_id": task_id})
        return [m.to_openai() for m in info["messages"]], list(info["tools"]) or None

    asyncio.run(play_all())
    examples = doctest.testmod(gfcr_verl, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report["doctest"] = {"attempted": examples.attempted, "failed": examples.failed}
    return report


if __name__ == "__main__":
    print(json.dumps(verl_side(sys.argv[1], sys.argv[2])))
    raise SystemExit(0)


# -- the tests: main venv -----------------------------------------------------------------------

import gymnasium as gym  # noqa: E402
import pytest  # noqa: E402

import gfcr  # noqa: E402,F401

if not VERL_PYTHON.exists():
    reason = f"{VERL_PYTHON} is missing: run `bash scripts/setup_verl.sh`"
    if os.environ.get("CI"):
        raise RuntimeError(reason)  # CI sets up everything: a missing venv is a failure there
    pytest.skip(reason, allow_module_level=True)


@pytest.fixture(scope="module")
def report(tiny_model, tmp_path_factory) -> dict[str, Any]:
    """The JSON of one run of this file's veRL side in .venv-verl."""
    work = tmp_path_factory.mktemp("verl")
    done = subprocess.run([str(VERL_PYTHON), __file__, str(tiny_model), str(work)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)  # fmt: skip
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stderr[-4000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def tokenizer(tiny_model):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model)


def runs(mask: list[int], ids: list[int]) -> list[tuple[int, list[int]]]:
    """`ids` cut where `mask` changes: (mask value, ids) per run."""
    out: list[tuple[int, list[int]]] = []
    for value, token in zip(mask, ids, strict=True):
        if out and out[-1][0] == value:
            out[-1][1].append(token)
        else:
            out.append((value, [token]))
    return out


def replay(tokenizer, task_id: str, episode: dict) -> tuple[float, list[dict]]:
    """Step a local env with the episode's sampled turns: (total reward, conversation)."""
    env = gym.make(ENV_ID, **ENV_KWARGS)
    _, info = env.reset(options={"task_id": task_id})
    messages = [m.to_openai() for m in info["messages"]]
    total = 0.0
    for value, ids in runs(episode["response_mask"], episode["response_ids"]):
        if value == 1:
            text = tokenizer.decode(ids[:-1] if ids[-1] == tokenizer.eos_token_id else ids, skip_special_tokens=False)
            _, reward, terminated, truncated, info = env.step(text)
            total += reward
            messages += [{"role": "assistant", "content": text}, *(m.to_openai() for m in info["messages"])]
    return total, messages


def test_the_modules_examples_run_in_the_verl_venv(report):
    assert report["doctest"]["attempted"] > 0 and report["doctest"]["failed"] == 0


def test_verls_dataset_reads_the_parquet_rows(report):
    assert report["dataset_len"] == 4
    assert {"raw_prompt", "extra_info", "agent_name", "index"} <= set(report["dataset_keys"])


def test_sampled_episodes_are_token_in_token_out(report, tokenizer):
    for episode in report["sampled"]:
        turns = runs(episode["response_mask"], episode["response_ids"])
        assert [value for value, _ in turns] == [1, 0, 1]  # lookup call, its result, the answer
        # the server's ids exactly as it returned them (never re-tokenized), in order
        assert [ids for value, ids in turns if value == 1] == episode["generated"]
        observation = tokenizer.decode(turns[1][1], skip_special_tokens=False)
        assert observation.startswith("\n<|im_start|>tool\n<tool_response>"), observation  # after the sampled <|im_end|>
        assert observation.endswith("</tool_response><|im_end|>\n<|im_start|>assistant\n"), observation
        logprobs = episode["response_logprobs"]
        assert len(logprobs) == len(episode["response_ids"]) <= RESPONSE_LENGTH
        assert all((lp == 0.0) == (m == 0) for lp, m in zip(logprobs, episode["response_mask"], strict=True))
        assert episode["num_turns"] == 4  # prompt, call, result, answer


def test_prompt_and_response_ids_decode_to_the_conversation(report, tokenizer):
    for episode in report["sampled"] + report["oracle"] + report["junk"]:
        _, messages = replay(tokenizer, episode["task_id"], episode)
        env = gym.make(ENV_ID, **ENV_KWARGS)
        _, info = env.reset(options={"task_id": episode["task_id"]})
        tools = list(info["tools"]) or None
        last_assistant = max(i for i, m in enumerate(messages) if m["role"] == "assistant")
        rendered = tokenizer.apply_chat_template(messages[: last_assistant + 1], tools=tools, tokenize=False)
        decoded = tokenizer.decode(episode["prompt_ids"] + episode["response_ids"], skip_special_tokens=False)
        assert rendered.startswith(decoded)
        assert len(rendered) - len(decoded) <= len("<|im_end|>\n")


def test_reward_score_is_gfcrs_reward_for_the_same_actions(report, tokenizer):
    for episode in report["sampled"] + report["oracle"] + report["junk"]:
        total, _ = replay(tokenizer, episode["task_id"], episode)
        assert episode["reward_score"] == pytest.approx(total)
        assert episode["extra_fields"]["gfcr_task_id"] == episode["task_id"]
        assert episode["as_dict"]["rm_scores_last"] == pytest.approx(total)


def test_the_oracle_scores_one_and_junk_scores_zero(report):
    assert [e["reward_score"] for e in report["oracle"]] == [1.0] * 4
    assert [e["reward_score"] for e in report["junk"]] == [0.0] * 4
    assert all(e["extra_fields"]["gfcr_ended"] == "terminated" for e in report["oracle"])
    assert all(e["extra_fields"]["gfcr_signals"]["correct"] for e in report["oracle"])
    oracle = report["oracle"][0]
    assert runs(oracle["response_mask"], oracle["response_ids"])[1][0] == 0  # the lookup's result, masked
    keys = set(oracle["as_dict"]["keys"])
    assert {"prompts", "responses", "response_mask", "rm_scores"} <= keys


def test_the_response_budget_stops_before_an_observation_that_would_overrun_it(report):
    budget = report["budget"]
    assert budget["extra_fields"]["gfcr_ended"] == "response_length"
    assert 0 < len(budget["response_ids"]) <= BUDGET
    assert set(budget["response_mask"]) == {1}  # the lookup call, and no partial observation after it
    assert budget["reward_score"] == 0.0


def test_verls_worker_batches_gfcr_episodes(report):
    batch = report["batch"]
    assert batch["shapes"]["responses"] == [4, RESPONSE_LENGTH]
    assert batch["shapes"]["input_ids"] == [4, PROMPT_LENGTH + RESPONSE_LENGTH]
    assert batch["agent_names"] == ["gfcr_agent"]
    assert len(set(batch["task_ids"])) == 4
    assert all(0 < s <= RESPONSE_LENGTH for s in batch["response_mask_sum"])
    # each rollout's record of the per-episode stages reaches veRL's trainer (no recipe: none acted)
    assert batch["reward_extra_infos"] == {"gfcr_guided": [0.0] * 4, "gfcr_stopped": [0.0] * 4}


def test_a_recipes_per_episode_stages_act_in_the_agent_loop(report, tokenizer):
    episode = report["recipe"]
    assert episode["extra_fields"]["gfcr_ended"] == "stopped"  # [control] max_length, after the lookup
    assert set(episode["response_mask"]) == {1}  # stopped before the observation was appended
    assert episode["extra_fields"]["gfcr_guidance"] == "Follow this plan:\nLook the code up."
    assert episode["reward_extra_info"] == {"gfcr_guided": 1.0, "gfcr_stopped": 1.0}  # veRL's record of it
    assert "Look the code up." in tokenizer.decode(episode["prompt_ids"])  # the plan is in the prompt
    assert "recipe: " in episode["agent_loop_config"]  # how veRL's workers get it
    dynamic, tree = report["refused"]
    assert dynamic.startswith("[control] dynamic_sampling: veRL does this itself, with algorithm.filter_groups")
    assert tree.startswith("[generate] tree: veRL plays one unbranched episode per row")

