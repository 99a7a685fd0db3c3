"""The method recipes (examples/methods/*.toml): each loads, runs one RL step of `gfcr train` on the
tiny model with its own stages (only the shared model, env and sizes shrunk), and its defining stage
acts; those whose stages fit a TRL batch configure TRL's rollout_func unchanged (the tree ones with
their estimator and the PRM-shaped one, for TreeGRPOTrainer), the others are refused with the reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gfcr.control.selection import GresoSelector, SecSelector, ThompsonSelector, VarianceSelector
from gfcr.errors import ConfigError
from gfcr.trainers import TrainConfig, Trainer
from gfcr.trainers.config import PipelineConfig, read_toml
from gfcr.trainers.update import correct_off_policy

RECIPES = sorted((Path(__file__).parents[2] / "examples" / "methods").glob("*.toml"))
METHODS = {"grpo", "dr_grpo", "dapo", "greso", "vcrl", "vade", "sec", "ar3po", "treerl", "treerpo", "gspo"}
METHODS |= {"seed_grpo"}  # the credit stage's
METHODS |= {"repo"}  # the keep stage's replay mix, corrected in the update
METHODS |= {"ttrl", "shorter_better", "ruler"}  # the judge stage's
METHODS |= {"prm"}  # the judge stage's process scores, mixed into credit
METHODS |= {"skills"}  # the keep stage's skill library, retrieved as guidance
METHODS |= {"curriculum"}  # the choose stage's difficulty levels
METHODS |= {"absolute_zero"}  # the propose stage's tasks the policy proposes
LEVELED = {"curriculum"}  # the shared tasks at difficulty levels: [env] kwargs levels, not generator_config
TREES = {"treerl", "treerpo"}  # per-token credit from a tree: TRL trains them with TreeGRPOTrainer
TOKEN_CREDIT = TREES | {"prm"}  # per-token credit, trees' or process scores': TreeGRPOTrainer under TRL


def shrunk(path: Path, tiny_model: Path, env_id: str, out_dir: Path) -> TrainConfig:
    """The recipe with its shared parts made small: the tiny model, the parity env, 2 prompts of
    4 samples, 6 tokens, one RL step; every method section stays as written."""
    data = read_toml(path)
    env = {"id": env_id, "kwargs": {}, "num_tasks": 16}
    if path.stem in LEVELED:  # its own tasks, few: 2 generators x 3 levels x 4, every one in the pool
        env = {"kwargs": {**data["env"]["kwargs"], "size": 4}, "num_tasks": 24}
    if path.stem == "absolute_zero":  # proposals of the math family: its own tasks are their parents
        env = {"kwargs": {**data["env"]["kwargs"], "size": 4}, "num_tasks": 8}
    overrides: dict[str, Any] = {
        "model": {"path": str(tiny_model)},
        "env": env,
        "rollout": {"prompts_per_step": 2, "group_size": 4, "max_tokens": 6, "concurrency": 8},
        "optim": {"micro_batch_size": 8},
        "log": {"tensorboard": False, "progress": False, "eval_every": 0},
        "sft": {"steps": 0},
    }
    for section, values in overrides.items():
        data[section] = {**data.get(section, {}), **values}
    judge = data.get("judge", {})
    if "llm" in judge:  # the judge model: the tiny one, no reply file
        judge["llm"] |= {"model": f"hf:{tiny_model}", "cache_path": None, "max_tokens": 8}
    process = data.get("judge", {}).get("process", {})
    if process.get("scorer", "rules") != "rules":  # a policy as the PRM: the tiny model, no reply file
        process |= {"scorer": f"hf:{tiny_model}", "cache_path": None, "max_tokens": 8}
    return TrainConfig.from_dict(
        {**data, "steps": 1, "out_dir": str(out_dir), "checkpoint_every": 0, "threads": 1}
    )


def test_every_method_of_the_survey_that_gfcr_realises_has_a_recipe():
    assert {p.stem for p in RECIPES} == METHODS


def test_the_recipes_share_everything_but_their_method():
    """Side by side, they differ only in out_dir and the method's sections ([loss], [control],
    [generate], [judge], [overlong_penalty], [replay], [credit])."""
    method = {"out_dir", "loss", "control", "generate", "judge", "overlong_penalty", "replay", "credit", "propose"}
    shared = [{k: v for k, v in read_toml(p).items() if k not in method} for p in RECIPES]
    for path, recipe in zip(RECIPES, shared, strict=True):  # the tasks' difficulty: levels or generator_config
        recipe["env"]["kwargs"].pop("levels" if path.stem in LEVELED else "generator_config")
    assert all(s == shared[0] for s in shared)
    assert all(read_toml(p)["out_dir"] == f"runs/methods/{p.stem}" for p in RECIPES)


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: p.stem)
def test_the_recipe_runs_one_step_and_its_method_acts(path, tiny_model, parity_env, tmp_path):
    recipe = TrainConfig.from_toml(path)  # as written: it loads
    trainer = Trainer(shrunk(path, tiny_model, parity_env, tmp_path / "run"))
    history = trainer.train()
    assert [m["step"] for m in history] == [1]
    m, name = history[0], path.stem
    assert m["generate/episodes"] > 0 and "update/skipped" in m
    assert trainer.settings.loss == recipe.loss  # the recipe's loss, estimator and clip range
    selector = trainer.controller.selector
    match name:
        case "grpo":
            assert trainer.models.reference is not None and recipe.loss.beta > 0  # the KL term
        case "dr_grpo" | "gspo":
            assert trainer.pipeline.estimator == recipe.loss.estimator
        case "dapo":  # dynamic sampling: nothing without a reward spread reaches the update
            assert m["decide/rounds"] >= 1 and m["rollout/zero_variance_share"] == 0.0
            assert "judge/overlong_penalty_mean" in m
            assert (recipe.loss.epsilon_low, recipe.loss.epsilon_high) == (0.2, 0.28)
        case "greso":
            assert isinstance(selector, GresoSelector) and m["rollout/zero_variance_share"] == 0.0
            assert m["choose/greso/skipped"] >= 0 and m["choose/greso/p_hard"] == selector.p_hard
        case "vcrl":
            assert isinstance(selector, VarianceSelector)
        case "vade":
            assert isinstance(selector, ThompsonSelector)
            assert trainer.controller.history.decay == recipe.pipeline.control.decay < 1.0
            assert trainer.controller.history.prior == recipe.pipeline.control.prior
        case "sec":  # the bandit learnt a value for the category it drew from
            assert isinstance(selector, SecSelector) and set(selector.values) == {"tooluse"}
            assert m["choose/sec/share/tooluse"] == 1.0  # logged: where it sent the batch, and its value
            assert m["choose/sec/value/tooluse"] == selector.values["tooluse"]
        case "ar3po":  # groups drawn in waves; every response kept for reuse
            assert m["decide/runs"] > m["decide/rounds"]
            stored = [t for t in trainer.last_rollout.generated if t.status == "ok"]
            assert trainer.replay is not None and len(trainer.replay) == len(stored) > 0
            assert "keep/rescued" in m
        case "treerl" | "treerpo":  # branches inside the turn, credited per token by the tree
            assert m["generate/branches"] > 0 and trainer.pipeline.estimator == name
            assert m["generate/episodes"] > trainer.pipeline.roots(4) * 2  # leaves beyond the roots
            assert [len(g) for g in trainer.last_rollout.groups.values()] == [4, 4]  # exactly the samples
        case "ttrl":  # label-free: the vote is the whole reward
            trained = [t for g in trainer.last_rollout.groups.values() for t in g]
            assert trained and all(set(t.reward_terms) == {"majority"} for t in trained)
            assert "judge/majority_mean" in m and "judge/verifier_mean" not in m
        case "ruler":  # the judge's listwise scores are the whole reward; what it cannot score is left out
            generated = trainer.last_rollout.generated
            failed = [t for t in generated if (t.failure or "").startswith("judge_failure")]
            assert all(set(t.reward_terms) == {"llm"} for t in generated if t not in failed)
            assert m["judge/failures"] == len(failed) and generated
        case "shorter_better":  # the distance to the group's shortest correct length
            assert "judge/length_mean" in m and m["judge/length_mean"] <= 0.0
        case "seed_grpo":  # the credit stage damps each group by its semantic entropy
            seed_grpo = recipe.pipeline.credit.seed_grpo
            assert seed_grpo.enabled and trainer.pipeline.seed_grpo == seed_grpo
            assert "judge/semantic_entropy_mean" in m
        case "prm":  # every line of every trained response asked of the PRM (the tiny one answers noise)
            process = trainer.pipeline.process
            assert process is not None and process.credit.segments == "lines" and process.credit.weight == 0.5
            assert m["judge/process_scored"] + m["judge/process_unscored"] >= len(trainer.last_rollout.trained)
        case "absolute_zero":  # one proposer group (the tiny model's junk: invalid, reward 0), recorded
            proposals = trainer.last_rollout.groups["propose/gfcr/Math-v0/0"]
            assert len(proposals) == m["propose/proposed"] == 8 and m["propose/invalid"] == 8
            assert all(t.reward_terms == {"learnability": 0.0} for t in proposals)
            store = trainer.pipeline.propose.store
            assert str(store.engine.url).endswith("proposals.db") and len(store.records()) == 8
        case "curriculum":  # each category starts at level 1: only its level-1 tasks are chosen
            assert trainer.controller.curriculum is not None and m["choose/curriculum/level_mean"] == 1.0
            assert {task_id.split("/")[2] for task_id in trainer.last_rollout.groups} == {"1"}
            assert m["choose/curriculum/level/rg/chain_sum"] == m["choose/curriculum/level/rg/products"] == 1.0
            assert m["choose/curriculum/candidates"] == 8  # 2 generators x 4 tasks of level 1
        case "skills":  # the run's library, opened in out_dir, is the guidance's; logged every step
            keeper = trainer.pipeline.skills
            assert keeper is not None and trainer.pipeline.policy.guide is keeper.library
            assert keeper.library.config.url.endswith("skills.db") and keeper.step == 1
            assert {"keep/skills/size", "keep/skills/extracted", "generate/skills_retrieved"} <= set(m)
        case "repo":  # the same prompts again: each group of 4 gets 4 stored samples, weighed by tis
            assert m["keep/mixed"] == 0 and m["replay/samples"] == 0  # nothing stored before step 1
            again = trainer.pipeline.step(candidates=list(trainer.last_rollout.groups))
            assert again.metrics["keep/mixed"] == 8
            samples, log = correct_off_policy(
                trainer.model, trainer.pipeline.credit(again), trainer.settings, current_version=trainer.step
            )
            assert log["replay/samples"] == 8 and "replay/truncated_share" in log
            assert all(s.is_weights is not None for s in samples if s.replayed)
        case _:
            pytest.fail(f"no check for the recipe {name}")


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: p.stem)
def test_the_recipe_configures_trl(path):
    from gfcr.integrations.trl import rollout_func

    if path.stem == "repo":  # TRL's batch holds num_generations fresh samples of each prompt
        with pytest.raises(ConfigError, match=r"\[replay\] mix_ratio = 0.5 .* exactly num_generations"):
            rollout_func("gfcr/ToolUse-v0", config=path, num_tasks=4)
        return
    if path.stem == "seed_grpo":  # TRL computes the advantages itself: nothing of gfcr's to scale
        with pytest.raises(ConfigError, match=r"\[credit.seed_grpo\] scales the advantages"):
            rollout_func("gfcr/ToolUse-v0", config=path, num_tasks=4)
        return
    rollout = rollout_func("gfcr/ToolUse-v0", config=path, num_tasks=4)
    if path.stem in TREES:  # the tree's credit: the recipe's estimator
        assert rollout.estimator == path.stem == TrainConfig.from_toml(path).loss.estimator
    if path.stem in TOKEN_CREDIT - TREES:  # per-token process advantages, for TreeGRPOTrainer (TRL's own
        # GRPOTrainer refuses them at its first step: tests/integrations/test_trl_process.py)
        assert rollout.config.judge.process.enabled and rollout.config.judge.process.weight == 0.5
    assert rollout.config == PipelineConfig.from_toml(path) == TrainConfig.from_toml(path).pipeline
