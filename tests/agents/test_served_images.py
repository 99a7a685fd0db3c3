"""Images through `gfcr serve` and the `openai:` backend: image parts on the wire, both ways, with the
real `openai` client and a real server (uvicorn on loopback)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import httpx
import pytest
from image_envs import ENV_ID, square
from servers import gfcr_process, serve_in_thread

openai = pytest.importorskip("openai", reason="the openai extra is not installed")
pytest.importorskip("fastapi", reason="the serve extra is not installed")


from gfcr.agents import Completion, Request, Runner, RunnerConfig, SamplingParams  # noqa: E402
from gfcr.agents.policies.chat import ChatTokens  # noqa: E402
from gfcr.agents.policies.openai_api import OpenAIPolicy  # noqa: E402
from gfcr.agents.runner.specs import EpisodeSpec, env_config  # noqa: E402
from gfcr.apps.serve import create_app  # noqa: E402
from gfcr.core import Image, Message  # noqa: E402


def seen(images: Sequence[Image]) -> str:
    """What `SaysWhatItSees` answers: each image's size and the start of its hash."""
    return " ".join(f"{i.size[0]}x{i.size[1]}:{i.sha256[:10]}" for i in images) or "nothing"


class SaysWhatItSees(ChatTokens):
    """A vision-language stand-in over the tiny model's tokenizer (`sees_images`): it answers with
    the size and hash of each image its request holds, so a test reads which bytes arrived."""

    version = "1"
    sees_images = True

    def __init__(self, hf_policy) -> None:
        self.name, self.chat = "sees", hf_policy.chat

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        out = []
        for request in requests:
            images = request.images if request.prompt_ids is not None else [
                image for m in request.messages for image in m.images
            ]  # fmt: skip
            text = seen(images)
            ids = (*self.chat.encode(text), *sorted(self.chat.end_ids))
            out.append(Completion(text, completion_ids=ids, logprobs=(-0.5,) * len(ids)))
        return out


@contextmanager
def serving(policy, name: str) -> Iterator[str]:
    """`create_app(policy, name)` on uvicorn in a thread; its OpenAI base URL."""
    with serve_in_thread(create_app(policy, name)) as url:
        yield f"{url}/v1"


@pytest.mark.timeout(120)
def test_the_openai_backend_sends_image_parts_that_the_server_gives_the_policy_byte_for_byte(hf_policy):
    red, blue = square("red"), square("blue", border=True)
    question = Message("user", ["Which two?", red, "and", blue])
    with serving(SaysWhatItSees(hf_policy), "sees") as url:
        policy = OpenAIPolicy("sees", url, max_retries=0)
        (completion,) = policy.generate([Request((question,), sampling=SamplingParams(max_tokens=32))])
        policy.close()
    assert completion.text == seen([red, blue]) == f"24x16:{red.sha256[:10]} 24x16:{blue.sha256[:10]}"


@pytest.mark.timeout(120)
def test_a_served_image_episode_keeps_the_same_token_data_and_images_as_the_local_policy(hf_policy):
    """Token-in-token-out through the server: each turn's images reach the model (the second turn
    shows both pictures), and the trajectory's ids and `TokenData.images` equal the local run's."""
    spec = EpisodeSpec(env_config(ENV_ID), "colour-green", seed=0)
    with serving(SaysWhatItSees(hf_policy), "sees") as url:
        policy = OpenAIPolicy("sees", url, max_retries=0)
        (served,) = Runner(policy, RunnerConfig(concurrency=1)).run([spec]).trajectories
        policy.close()
    (local,) = Runner(SaysWhatItSees(hf_policy), RunnerConfig(concurrency=1)).run([spec]).trajectories
    first, second = square("green"), square("green", border=True)
    assert served.status == "ok" and [s.action for s in served.steps] == [
        seen([first]),
        seen([first, second]),
    ]
    assert served.images == [first, second] and served.messages == local.messages
    assert served.tokens is not None and served.tokens.images == [first, second]
    assert served.tokens == local.tokens


@pytest.mark.timeout(120)
def test_a_text_model_refuses_images_with_a_400_that_names_the_fix(hf_policy):
    with serving(hf_policy, "tiny") as url:
        client = openai.OpenAI(base_url=url, api_key="EMPTY", max_retries=0)
        image_part = {"type": "image_url", "image_url": {"url": square("red").data_url()}}
        messages = [{"role": "user", "content": [{"type": "text", "text": "Colour?"}, image_part]}]
        with pytest.raises(
            openai.BadRequestError, match="does not take images; serve a vision-language model"
        ):
            client.chat.completions.create(model="tiny", messages=messages, max_tokens=4)
        remote = {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}
        reply = httpx.post(f"{url}/chat/completions", json={"model": "tiny", "messages": [
            {"role": "user", "content": [remote]}]})  # fmt: skip
        assert reply.status_code == 400 and "not a base64 data URL" in reply.json()["error"]["message"]
        # text parts alone are still text, as before
        text_only = [{"role": "user", "content": [{"type": "text", "text": "Say hi"}]}]
        assert client.chat.completions.create(model="tiny", messages=text_only, max_tokens=2).choices
        # an episode of an env that shows images fails with the server's reason, the run goes on
        policy = OpenAIPolicy("tiny", url, max_retries=0)
        result = Runner(policy).run([EpisodeSpec(env_config(ENV_ID), "colour-red")])
        policy.close()
    (trajectory,) = result.trajectories
    assert trajectory.status == "failed" and "does not take images" in trajectory.failure


@pytest.mark.timeout(300)
def test_gfcr_serve_serves_the_tiny_vision_language_model_as_hf_runs_it(tiny_vision_model):
    """`gfcr serve VLM`, as a user starts it: completions for messages with images, the same ids and
    logprobs through `openai:` as the local `hf:` policy samples, and an episode of an env that shows
    images runs through it."""

    from gfcr.agents.policies.hf import HFPolicy

    question = Message("user", ["What colour is the square?", square("red")])
    request = Request((question,), sampling=SamplingParams(max_tokens=6, seed=1))
    with gfcr_process("serve", str(tiny_vision_model), "--name", "vlm") as (base, _):
        url = f"{base}/v1"
        client = openai.OpenAI(base_url=url, api_key="EMPTY", max_retries=0)
        with_image = client.chat.completions.create(
            model="vlm", messages=[question.to_openai()], max_tokens=6
        )
        text_only = client.chat.completions.create(
            model="vlm", messages=[{"role": "user", "content": question.text}], max_tokens=6
        )
        assert isinstance(with_image.choices[0].message.content, str)
        assert with_image.usage.prompt_tokens > text_only.usage.prompt_tokens  # the image's placeholder run
        policy = OpenAIPolicy("vlm", url, max_retries=0, top_logprobs=0)
        (served,) = policy.generate([request])
        (episode,) = (
            Runner(policy, RunnerConfig(sampling=SamplingParams(max_tokens=6)))
            .run([EpisodeSpec(env_config(ENV_ID), "colour-blue")])
            .trajectories
        )
        policy.close()
    (local,) = HFPolicy(tiny_vision_model).generate([request])
    assert served.prompt_ids == local.prompt_ids and served.completion_ids == local.completion_ids
    assert served.logprobs == pytest.approx(local.logprobs, abs=1e-4)
    assert episode.status == "ok" and len(episode.steps) >= 1 and episode.images[0] == square("blue")
