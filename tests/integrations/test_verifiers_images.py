"""Images in the real `verifiers` 0.4 (its own venv): an env that shows images, played by the tiny
vision-language model behind `gfcr serve`, through verifiers' interception endpoint."""

from __future__ import annotations

import pytest
from servers import gfcr_process
from test_verifiers import run_vf  # skips this module too where the verifiers venv is missing

IMAGES = """
import asyncio, json, os, sys
sys.path.insert(0, "tests")
from image_envs import ENV_ID, square  # registers test/Colour-v0: name the colour of the square
import verifiers.v1 as vf
from gfcr.integrations.verifiers import load_environment

os.environ["GFCR_VF_KEY"] = "EMPTY"
env = load_environment(ENV_ID)
ctx = vf.ModelContext(model="vlm", client=vf.EvalClientConfig(base_url=sys.argv[1], api_key_var="GFCR_VF_KEY"),
                      sampling=vf.SamplingConfig(max_tokens=4, temperature=0.0))

def urls(content):
    return [] if isinstance(content, str) else [p.image_url.url for p in content if p.type == "image_url"]

async def main():
    [task] = [t for t in env.taskset if t.data.task_id == "colour-red"]
    async with env.serving():
        episode = await env.run_episode(task, ctx)
    trace = episode.traces[0]
    messages = trace.branches[-1].messages
    print(json.dumps({
        "ok": episode.ok, "errors": [str(e) for e in episode.errors], "calls": len(trace.calls),
        "turns": trace.metrics["turns"], "reward": trace.reward, "live": trace.metrics["live_reward"],
        "row_images": urls(task.data.prompt[0].content), "sent_images": [urls(m.content) for m in messages],
        "red": square("red").data_url(), "second": square("red", border=True).data_url()}))

asyncio.run(main())
"""


@pytest.fixture(scope="module")
def vlm_url(tiny_vision_model):
    """`gfcr serve VLM --name vlm` in its own process; its OpenAI base URL."""
    with gfcr_process("serve", str(tiny_vision_model), "--name", "vlm") as (url, _):
        yield url + "/v1"


@pytest.mark.timeout(300)
def test_a_verifiers_episode_sends_the_envs_images_to_the_model_as_image_parts(vlm_url):
    result = run_vf("-c", IMAGES, vlm_url, timeout=240)
    assert result["ok"] and result["errors"] == [], result
    assert result["row_images"] == [result["red"]]  # the task row's prompt holds the picture
    assert result["calls"] == result["turns"] >= 1  # each turn a model call through the interception
    sent = result["sent_images"]
    assert sent[0] == [result["red"]]  # the prompt went to the model with its image, not as text
    # the random model's first answer is wrong: the second look went to the model as an image too
    assert result["turns"] == 2 and sent[2] == [result["second"]] and sent[1] == sent[3] == []
    assert result["reward"] == result["live"] == 0.0
