"""Guidance that trains (issue 32): guided episodes run through the real Runner keep their token data,
with the guidance in the prompt ids and out of the loss, record which guidance they got, and
become trainer samples; adaptive guidance guides only the prompts the policy fails."""

from __future__ import annotations

import itertools
import json
import re

import pytest

from gfcr.agents import OraclePolicy, Runner, RunnerConfig
from gfcr.agents.runner.episode import keeps_tokens
from gfcr.agents.runner.specs import EpisodeSpec, env_config
from gfcr.control import AdaptiveGuidance, PromptHistory, guided
from gfcr.core import Completion, Trajectory
from gfcr.core.config import from_dict
from gfcr.core.policy import SamplingParams
from gfcr.errors import ConfigError
from gfcr.generate import FewShot, GuidanceConfig, GuidedPolicy, Plan, group_by_task, inject
from gfcr.skills import SkillLibrary

TOOLUSE = env_config("gfcr/ToolUse-v0", {"num_tasks": 4})
SHOT = FewShot((("What is 2+2?", "Zebra 4"),))  # "Zebra": a word no ToolUse prompt has
CONFIG = RunnerConfig(concurrency=4, sampling=SamplingParams(max_tokens=6))


def specs(tasks: list[str], k: int = 2) -> list[EpisodeSpec]:
    return [EpisodeSpec(TOOLUSE, task, seed=i, sample=j) for i, task in enumerate(tasks) for j in range(k)]


def run(policy, tasks: list[str], k: int = 2) -> list[Trajectory]:
    result = Runner(policy, CONFIG).run(specs(tasks, k))
    assert result.failed == 0
    return result.trajectories


class Spy(OraclePolicy):
    """The oracle (a text-only policy; it plays ToolUse in two turns), keeping every request."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list = []

    def generate(self, requests):
        self.requests += requests
        return super().generate(requests)


def system_text(request) -> str:
    return request.messages[0].content if request.messages[0].role == "system" else ""


def test_a_guided_hf_policy_keeps_token_data_with_the_guidance_in_the_prompt_only(hf_policy):
    guided_policy = GuidedPolicy(hf_policy, SHOT)
    assert keeps_tokens(type(guided_policy)) and guided_policy.name == hf_policy.name
    guided_runs = run(guided_policy, ["tooluse/0", "tooluse/1"])
    plain_runs = run(hf_policy, ["tooluse/0", "tooluse/1"])
    guided_policy.record(guided_runs)
    text = SHOT.guidance("")
    decode = hf_policy.tokenizer.decode
    for trajectory in guided_runs:
        tokens = trajectory.tokens
        assert tokens is not None and trajectory.guidance == text
        assert text in decode(tokens.prompt_ids) and "Zebra" not in decode(tokens.completion_ids)
        first = trajectory.messages[:1]  # the episode's own record is the env's prompt, unguided
        assert first[0].role == "user"
        assert tokens.prompt_ids == hf_policy.encode_prompt(inject(first, text), trajectory.tools)
    for trajectory in plain_runs:
        assert trajectory.tokens is not None and trajectory.guidance == ""
        assert "Zebra" not in decode(trajectory.tokens.prompt_ids)
    line = json.loads(plain_runs[0].to_json())
    assert "guidance" not in line  # unguided lines are as they were before the field existed
    assert Trajectory.from_json(guided_runs[0].to_json()).guidance == text

    # the trainer takes them: one sample each, the guidance tokens inside the prompt, masked out
    from gfcr.trainers.batching import samples_from_groups

    samples = samples_from_groups(group_by_task(guided_runs))
    assert len(samples) == len(guided_runs)
    by_ids = {tuple(t.tokens.prompt_ids + t.tokens.completion_ids): t for t in guided_runs}
    for sample in samples:
        prompt = len(by_ids[tuple(sample.input_ids)].tokens.prompt_ids)
        assert "Zebra" in decode(sample.input_ids[:prompt]) and not any(sample.loss_mask[:prompt])
        assert sample.num_loss_tokens > 0


def test_every_turn_of_a_multi_turn_token_episode_continues_the_guided_prompt(hf_policy):
    seen: list = []

    class LooksUp:
        """The tiny model, except that its first turn calls `lookup` (a random model never does)."""

        name, version = "tiny+lookup", "1"

        def __init__(self) -> None:
            self.chat = hf_policy.chat

        def encode_prompt(self, messages, tools):
            return hf_policy.encode_prompt(messages, tools)

        def encode_observation(self, messages, after):
            return hf_policy.encode_observation(messages, after)

        def generate(self, requests):
            seen.extend(requests)
            out = []
            for request in requests:
                if len(request.messages) <= 2:  # system + user: the first turn
                    ids = self.chat.encode('<tool_call>{"name": "lookup", "arguments": {}}</tool_call>')
                    ids += [next(iter(self.chat.end_ids))]
                    out.append(Completion(self.chat.completion_text(ids), completion_ids=tuple(ids)))
                else:
                    out.append(hf_policy.generate([request])[0])
            return out

    policy = GuidedPolicy(LooksUp(), Plan("look the code up, then answer"))
    (trajectory,) = run(policy, ["tooluse/0"], k=1)
    assert len(trajectory.steps) == 2 and len(seen) == 2
    prompt = trajectory.tokens.prompt_ids
    assert all(list(r.prompt_ids[: len(prompt)]) == prompt for r in seen)  # one guided prefix for both
    assert "look the code up" in hf_policy.tokenizer.decode(prompt)
    assert all(system_text(r).endswith("look the code up, then answer") for r in seen)


def test_a_guided_text_policy_sees_one_guidance_per_prompt_for_every_turn_and_keeps_no_tokens():
    plans = itertools.count()
    spy = Spy()
    policy = GuidedPolicy(spy, Plan(lambda prompt: f"plan {next(plans)}"))  # a new plan at each call
    assert not keeps_tokens(type(policy)) and not hasattr(policy, "encode_prompt")
    trajectories = run(policy, ["tooluse/0", "tooluse/1"])
    assert all(t.tokens is None and t.total_reward == 1.0 and len(t.steps) == 2 for t in trajectories)
    by_prompt: dict[str, set[str]] = {}
    for request in spy.requests:
        by_prompt.setdefault(request.messages[1].content, set()).add(system_text(request))
    assert len(by_prompt) == 2 and all(len(texts) == 1 for texts in by_prompt.values())
    policy.record(trajectories)
    assert {t.guidance for t in trajectories} == {text for texts in by_prompt.values() for text in texts}
    run(policy, ["tooluse/0"], k=1)  # a new round: guided afresh
    assert system_text(spy.requests[-1]) not in {t.guidance for t in trajectories}


def test_adaptive_guidance_guides_a_failing_task_and_not_a_solved_one(hf_policy):
    history = PromptHistory()
    history.update("tooluse/0", [0.0] * 6)  # fails: posterior mean 1/8
    history.update("tooluse/1", [1.0] * 6)  # solved: 7/8
    when = AdaptiveGuidance(history, below=0.3)

    spy = Spy()  # a text policy: each request names its task, so the first round is guided already
    run(GuidedPolicy(spy, SHOT, when), ["tooluse/0", "tooluse/1"])
    guided_tasks = {r.task.id for r in spy.requests if "Zebra" in system_text(r)}
    assert guided_tasks == {"tooluse/0"}

    # a token policy encodes the prompt before a request names the task; the runner names it first
    policy = GuidedPolicy(hf_policy, SHOT, when)
    first = run(policy, ["tooluse/0", "tooluse/1"])
    policy.record(first)
    assert {t.task_id for t in first if t.guidance} == {"tooluse/0"}
    decode = hf_policy.tokenizer.decode
    assert all(("Zebra" in decode(t.tokens.prompt_ids)) == (t.task_id == "tooluse/0") for t in first)

    history.update("tooluse/0", [1.0] * 20)  # learnt: the guidance is withdrawn
    third = run(policy, ["tooluse/0"])
    policy.record(third)
    assert {t.guidance for t in third} == {""}


def test_the_trainers_generate_settings_build_the_guided_policy(tmp_path):
    policy, history = OraclePolicy(), PromptHistory()
    assert guided(policy, GuidanceConfig(), history) is policy
    config = from_dict(GuidanceConfig, {"kind": "fewshot", "fewshot": [["2+2?", "4"]], "adaptive_below": 0.3})
    built = guided(policy, config, history)
    assert built.guide == FewShot((("2+2?", "4"),)) and built.when == AdaptiveGuidance(history, 0.3)
    assert guided(policy, GuidanceConfig(kind="plan", plan="check"), history).when is None
    library = guided(policy, GuidanceConfig(kind="skills", skills=str(tmp_path / "skills.db")), history).guide
    assert isinstance(library, SkillLibrary)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"kind": "plan"}, "guidance kind 'plan' needs its plan setting"),
        ({"kind": "fewshot", "fewshot": [["only a task"]]}, "fewshot must be [task, solution] pairs"),
        ({"plan": "check"}, "plan set but guidance kind is 'none'"),
        ({"kind": "plan", "plan": "x", "adaptive_below": 1.5}, "adaptive_below must be in (0, 1]"),
        ({"kind": "hints"}, "unknown guidance kind 'hints'"),
    ],
)
def test_bad_guidance_settings_say_what_is_wrong(table, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        from_dict(GuidanceConfig, table, "generate")
