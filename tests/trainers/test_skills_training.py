"""Skills inside training (issue 36): a skill the keep stage extracts in step t is in step t+1's
prompt ids (token data intact, out of the loss), its uses are counted from the episodes that
carried it, and the run's library is checkpointed, kept on resume and cleared on a fresh start."""

from __future__ import annotations

import pytest

from gfcr.agents import OraclePolicy, Runner, episodes_for_env
from gfcr.core import Completion
from gfcr.errors import ConfigError
from gfcr.generate import GuidedPolicy, group_by_task
from gfcr.trainers import Trainer
from gfcr.trainers.batching import samples_from_groups
from gfcr.trainers.config import PipelineConfig
from gfcr.trainers.pipeline import RolloutPipeline

SKILLS = {"replay": {"skills": {"enabled": True}}, "generate": {"guidance": {"kind": "skills"}}}


class TokenOracle(OraclePolicy):
    """The scripted oracle (it solves ToolUse with a tool call), with token data: its text encoded
    by the tiny model's chat template, as a token policy's would be."""

    def __init__(self, hf_policy) -> None:
        self.chat = hf_policy.chat

    def encode_prompt(self, messages, tools):
        return self.chat.prompt_ids(messages, tools)

    def encode_observation(self, messages, after):
        return self.chat.observation_ids(messages, after)

    def generate(self, requests):
        out = []
        for completion in super().generate(requests):
            ids = [*self.chat.encode(completion.text), next(iter(self.chat.end_ids))]
            out.append(
                Completion(
                    self.chat.completion_text(ids), completion_ids=tuple(ids), logprobs=(0.0,) * len(ids)
                )
            )
        return out


def test_a_skill_extracted_in_step_t_is_in_step_t_plus_1s_prompt_ids_out_of_the_loss(hf_policy):
    tasks = episodes_for_env("gfcr/ToolUse-v0", 4, kwargs={"num_tasks": 4})
    pipeline = RolloutPipeline.from_config(
        TokenOracle(hf_policy), tasks, PipelineConfig.from_dict(SKILLS), prompts_per_step=2, group_size=2
    )
    assert isinstance(pipeline.policy, GuidedPolicy) and pipeline.policy.guide is pipeline.skills.library
    first = pipeline.step(["tooluse/0", "tooluse/1"])
    assert first.metrics["generate/skills_retrieved"] == 0 and first.metrics["generate/guided"] == 0
    assert first.metrics["keep/skills/extracted"] >= 1 and len(pipeline.skills.library) >= 1
    extracted = {s.id for s in pipeline.skills.library}
    assert all(s.extracted_at == 1 and s.verification["reward"] == 1.0 for s in pipeline.skills.library)

    second = pipeline.step(["tooluse/2", "tooluse/3"])
    decode = hf_policy.chat.tokenizer.decode
    for trajectory in second.generated:
        carried = pipeline.skills.carried(trajectory)
        assert carried and {s.id for s in carried} <= extracted  # step 1's skills, in step 2's prompts
        prompt = decode(trajectory.tokens.prompt_ids)
        assert all(skill.render() in prompt for skill in carried)
    assert second.metrics["generate/skills_retrieved"] == sum(
        len(pipeline.skills.carried(t)) for t in second.generated
    )
    carried_ids = {s.id for t in second.generated for s in pipeline.skills.carried(t)}
    assert all(s.uses > 0 and s.last_used == 2 for s in pipeline.skills.library if s.id in carried_ids)
    samples = samples_from_groups(group_by_task(second.generated))
    for sample, trajectory in zip(samples, second.generated, strict=True):
        cut = len(trajectory.tokens.prompt_ids)
        assert sample.input_ids[:cut] == trajectory.tokens.prompt_ids and not any(sample.loss_mask[:cut])
        assert "Skills that solved similar tasks" in decode(sample.input_ids[:cut])


def test_skill_guidance_without_a_library_needs_the_runs_own():
    with pytest.raises(ConfigError, match=r"set \[replay.skills\] enabled = true"):
        RolloutPipeline.from_config(
            OraclePolicy(), [], PipelineConfig.from_dict({"generate": SKILLS["generate"]}),
            prompts_per_step=1, group_size=1,
        )  # fmt: skip


def test_the_runs_library_is_checkpointed_kept_on_resume_and_cleared_on_a_fresh_start(make_config):
    config = make_config(env={"id": "gfcr/ToolUse-v0"}, steps=1, checkpoint_every=1, **SKILLS)
    trainer = Trainer(config)
    trainer.begin()
    keeper = trainer.pipeline.skills
    assert (
        keeper.library.config.url.endswith("run/skills.db")
        and trainer.pipeline.policy.guide is keeper.library
    )
    solved = (
        Runner(OraclePolicy())
        .run(episodes_for_env("gfcr/ToolUse-v0", 2, kwargs=config.env.kwargs))
        .trajectories
    )
    keeper.keep(solved)  # the library has skills before the step, as after an earlier step
    history = trainer.train()
    m = history[-1]
    assert {
        "keep/skills/extracted",
        "keep/skills/size",
        "keep/skills/evicted",
        "keep/skills/usefulness_mean",
    } <= set(m)
    assert m["generate/guided"] > 0  # the tiny model's prompts carried the skills
    saved = keeper.state_dict()
    assert saved["step"] == 2 and saved["library"]["skills"]

    resumed = Trainer(make_config(env={"id": "gfcr/ToolUse-v0"}, steps=2, checkpoint_every=1, **SKILLS))
    resumed.begin()
    assert resumed.resumed and resumed.pipeline.skills.state_dict() == saved
    fresh = Trainer(config, resume=False)
    fresh.begin()
    assert len(fresh.pipeline.skills.library) == 0 and fresh.pipeline.skills.step == 0
