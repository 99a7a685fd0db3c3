"""Token-in-token-out: stored ids are the ones the policy emitted, and decode to exactly the transcript."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest
from runner_envs import EchoEnv  # noqa: F401  (registers test/Echo-v0)

from gfcr.agents import Completion, Request, Runner, RunnerConfig, SamplingParams
from gfcr.agents.policies.chat import ChatTokens
from gfcr.agents.runner.specs import EpisodeSpec, env_config
from gfcr.core import Message


class FirstTurnCallsEcho(ChatTokens):
    """The tiny model, except that its first turn is a tool call (a random model never writes one).

    Every completion it returns, sampled or scripted, is recorded: the runner must store exactly these ids.
    """

    version = "1"

    def __init__(self, model) -> None:
        self.model, self.chat, self.name = model, model.chat, "tiny+echo-call"
        self.emitted: list[Completion] = []

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        completions = []
        for request in requests:
            if len(request.messages) == 1:  # the first turn
                call = {"name": "echo", "arguments": {"text": "héllo ✓"}}
                ids = self.chat.encode(f"Let me call it.<tool_call>{json.dumps(call)}</tool_call>") + [
                    next(iter(self.chat.end_ids))
                ]
                completion = Completion(
                    self.chat.completion_text(ids),
                    completion_ids=tuple(ids),
                    logprobs=tuple(-0.5 for _ in ids),
                    completion_tokens=len(ids),
                )
            else:
                completion = self.model.generate([request])[0]
            completions.append(completion)
        self.emitted += completions
        return completions


def segments(mask: list[int], values: list) -> list[tuple[int, list]]:
    """Runs of equal mask values: [(mask value, the values under it), ...]."""
    runs: list[tuple[int, list]] = []
    for m, v in zip(mask, values, strict=True):
        if runs and runs[-1][0] == m:
            runs[-1][1].append(v)
        else:
            runs.append((m, [v]))
    return runs


@pytest.mark.timeout(240)
def test_a_multi_turn_tool_episode_keeps_the_emitted_ids_and_decodes_to_the_transcript(token_policy):
    policy = FirstTurnCallsEcho(token_policy)
    config = RunnerConfig(sampling=SamplingParams(max_tokens=24, seed=3))
    spec = EpisodeSpec(env_config("test/Echo-v0"), "turns-4", seed=0)
    (trajectory,) = Runner(policy, config).run([spec]).trajectories
    assert trajectory.status == "ok" and len(trajectory.steps) == 4 and trajectory.total_reward == 1.0
    chat, tokens = token_policy.chat, trajectory.tokens
    tools = EchoEnv().reset(options={"task_id": "turns-4"})[1]["tools"]

    # the prompt: the template's rendering of the first messages, with the tools offered
    first = trajectory.messages[:1]
    assert tokens.prompt_ids == chat.prompt_ids(first, tools)

    # the policy's own tokens (mask 1) are exactly what it emitted, in order, with their logprobs
    runs = segments(tokens.loss_mask, list(zip(tokens.completion_ids, tokens.logprobs, strict=True)))
    policy_runs = [[token for token, _ in run] for m, run in runs if m == 1]
    assert policy_runs == [list(c.completion_ids) for c in policy.emitted]
    assert [[lp for _, lp in run] for m, run in runs if m == 1] == [list(c.logprobs) for c in policy.emitted]
    assert all(lp == 0.0 for m, run in runs if m == 0 for _, lp in run)
    assert [m for m, _ in runs] == [1, 0, 1, 0, 1, 0, 1]  # 4 turns, observations between them, none after

    # the actions the env saw are the emitted ids' text; the first turn's tool call got a tool message
    assert [s.action for s in trajectory.steps] == [c.text for c in policy.emitted]
    assert trajectory.messages[2] == Message("tool", "echo: héllo ✓", tool_call_id="call_0", name="echo")

    # all ids decode to exactly the chat template's rendering of the transcript, up to the last action
    # (assistant turns as the raw text the model wrote; the final observation is never fed back)
    last_turn = max(i for i, m in enumerate(trajectory.messages) if m.role == "assistant")
    transcript = [m.to_openai() for m in trajectory.messages[: last_turn + 1]]
    rendered = chat.tokenizer.apply_chat_template(transcript, tools=tools, tokenize=False)
    last = policy.emitted[-1]
    ended = last.completion_ids[-1] in chat.end_ids
    expected = rendered[: rendered.rindex(last.text) + len(last.text)] + ("<|im_end|>" if ended else "")
    assert chat.decode(tokens.prompt_ids + tokens.completion_ids) == expected
    assert len(tokens.completion_ids) == len(tokens.loss_mask) == len(tokens.logprobs)


def test_observation_ids_close_an_unfinished_turn_and_skip_a_sampled_end(hf_policy):
    chat = hf_policy.chat
    end = next(iter(chat.end_ids))
    observation = [Message("user", "go on")]
    after_end = chat.decode(chat.observation_ids(observation, [5, end]))
    after_cut = chat.decode(chat.observation_ids(observation, [5, 6]))
    assert after_end == "\n<|im_start|>user\ngo on<|im_end|>\n<|im_start|>assistant\n"
    assert after_cut == "<|im_end|>" + after_end
