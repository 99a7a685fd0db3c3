"""Images over the OpenEnv wire: `gfcr serve-env` of an env that shows images, read back by
`gfcr/Remote-v0` and `GfcrEnvClient` as the same observations (pixels) and messages (images)."""

from __future__ import annotations

from collections.abc import Iterator

import gymnasium as gym
import numpy as np
import pytest
from image_envs import ENV_ID, square
from servers import serve_in_thread

pytest.importorskip("openenv", reason="the remote extra is not installed: pip install -e '.[remote]'")

from gymnasium.utils.env_checker import check_env  # noqa: E402

from gfcr.agents import Runner, RunnerConfig, make_policy  # noqa: E402
from gfcr.agents.runner.specs import EpisodeSpec, env_config  # noqa: E402
from gfcr.core import read_jsonl  # noqa: E402
from gfcr.remote import GfcrEnvClient, TextAction, create_app  # noqa: E402


@pytest.fixture(scope="module")
def colour_url() -> Iterator[str]:
    with serve_in_thread(create_app(ENV_ID, send_gold=True)) as url:
        yield url


def test_the_remote_env_gives_the_same_pixels_and_message_images_as_the_local_env(colour_url):
    remote, local = gym.make("gfcr/Remote-v0", url=colour_url), gym.make(ENV_ID)
    assert remote.observation_space == local.observation_space  # text_and_image, (16, 24) pixels
    episodes = []
    for env in (remote, local):
        obs, info = env.reset(options={"task_id": "colour-blue"})
        steps = [env.step("red"), env.step("blue")]
        episodes.append((obs, info["messages"], steps))
    (r_obs, r_messages, r_steps), (l_obs, l_messages, l_steps) = episodes
    assert r_obs["text"] == l_obs["text"] == "What colour is the square?"
    assert r_obs["image"].dtype == np.uint8 and np.array_equal(r_obs["image"], l_obs["image"])
    assert r_messages == l_messages and r_messages[-1].images == (square("blue"),)  # equal by hash
    for (r, *r_rest, r_info), (lo, *l_rest, l_info) in zip(r_steps, l_steps, strict=True):
        assert r["text"] == lo["text"] and np.array_equal(r["image"], lo["image"]) and r_rest == l_rest
        assert r_info["messages"] == l_info["messages"]
    assert r_steps[0][4]["messages"][0].images == (square("blue", border=True),)
    assert r_steps[1][1:3] == (1.0, True)
    assert remote.unwrapped.messages == local.unwrapped.messages
    check_env(remote.unwrapped, skip_render_check=True)  # each observation is in the Dict space
    remote.close()


def test_a_runner_over_the_remote_env_stores_the_same_images_as_over_the_local_env(colour_url, tmp_path):
    runs = {}
    for name, env in (
        ("remote", env_config("gfcr/Remote-v0", {"url": colour_url})),
        ("local", env_config(ENV_ID)),
    ):
        specs = [EpisodeSpec(env, task) for task in ("colour-red", "colour-green")]
        Runner(make_policy("scripted:oracle"), RunnerConfig(concurrency=2)).run(
            specs, tmp_path / f"{name}.jsonl"
        )
        runs[name] = sorted(read_jsonl(tmp_path / f"{name}.jsonl"), key=lambda t: t.task_id)
    for remote, local in zip(runs["remote"], runs["local"], strict=True):
        assert remote.status == local.status == "ok" and remote.total_reward == local.total_reward == 1.0
        assert remote.messages == local.messages and remote.images == local.images == [
            square(local.task_id[7:])
        ]
        assert remote.prompt == local.prompt == "What colour is the square?"


def test_the_typed_client_reads_pixels_and_images(colour_url):
    with GfcrEnvClient(base_url=colour_url).sync() as env:
        first = env.reset(task_id="colour-green")
        wrong = env.step(TextAction(text="red"))
    local = gym.make(ENV_ID)
    obs, info = local.reset(options={"task_id": "colour-green"})
    assert (
        np.array_equal(first.observation.image, obs["image"])
        and first.observation.messages == info["messages"]
    )
    assert np.array_equal(wrong.observation.image, local.step("red")[0]["image"])
    assert wrong.observation.messages[0].images == (square("green", border=True),)


def test_gfcr_serve_env_serves_vision_v0_and_the_remote_env_plays_it_as_the_local_env(serve_env, tmp_path):
    """`gfcr serve-env gfcr/Vision-v0 --send-gold`, as a user starts it: a zoom turn's picture and the
    observation pixels come back as the local env gives them, and the oracle solves it over the wire."""
    task, zoom = (
        "vision/chart/2/5",
        '<tool_call>{"name": "zoom", "arguments": {"x": 0, "y": 0, "w": 96, "h": 96}}</tool_call>',
    )
    with serve_env("gfcr/Vision-v0", "--send-gold") as (url, _):
        remote, local = gym.make("gfcr/Remote-v0", url=url), gym.make("gfcr/Vision-v0")
        assert remote.observation_space == local.observation_space
        (r_obs, r_info), (l_obs, l_info) = (env.reset(options={"task_id": task}) for env in (remote, local))
        assert r_obs["text"] == l_obs["text"] and np.array_equal(r_obs["image"], l_obs["image"])
        assert r_info["messages"] == l_info["messages"] and r_info["messages"][-1].images
        r_step, l_step = remote.step(zoom), local.step(zoom)
        assert np.array_equal(r_step[0]["image"], l_step[0]["image"]) and r_step[1:4] == l_step[1:4]
        assert r_step[4]["messages"] == l_step[4]["messages"] and r_step[4]["messages"][0].images
        remote.close()
        spec = EpisodeSpec(env_config("gfcr/Remote-v0", {"url": url}), task)
        Runner(make_policy("scripted:oracle")).run([spec], tmp_path / "oracle.jsonl")
    (trajectory,) = read_jsonl(tmp_path / "oracle.jsonl")
    assert trajectory.total_reward == 1.0 and trajectory.images == list(l_info["messages"][-1].images)
