"""gfcr/Browser-v0 for vision-language agents: the page as a screenshot (`observation="screenshot"`
or `"both"`), in the messages and the gym observation, with the pointer actions at its pixels.

The pages whose task is drawn are solved by the scripted oracle from the screenshot modes only,
and junk at the screenshot's pixels (points off the page, a flood of clicks) is not paid.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.spaces import Dict
from PIL import ImageColor

from gfcr.agents import OraclePolicy
from gfcr.agents.runner.rollout import rollout
from gfcr.core import Action, SamplingParams, ToolCall, Trajectory, read_jsonl, write_jsonl
from gfcr.envs.browser import BrowserVerifier
from gfcr.envs.browser.data import browser_source
from gfcr.envs.browser.miniwob_oracle import SCREENSHOT_PAGES
from gfcr.envs.browser.snapshot import PageView
from gfcr.envs.spaces import UnicodeText
from gfcr.errors import UnknownNameError
from gfcr.testing import contract

ENV_ID = "gfcr/Browser-v0"
PAGES = ["click-test", "enter-text", *SCREENSHOT_PAGES]
# 49 clicks on a 24-pixel grid over MiniWoB's 160 x 210 task area: everything an attacker can hit
FLOOD = "\n".join(f"mouse_click({x}, {y})" for y in range(60, 205, 24) for x in range(10, 155, 24))


@pytest.fixture(scope="module")
def env():
    env = gymnasium_make(observation="screenshot")
    yield env
    env.close()


@pytest.fixture(scope="module")
def both():
    env = gymnasium_make(observation="both", set_of_marks=True)
    yield env
    env.close()


def gymnasium_make(**kwargs):
    return gym.make(ENV_ID, dataset=PAGES, num_seeds=5, **kwargs)


def oracle_episode(env, task_id: str) -> Trajectory:
    return rollout(env, OraclePolicy(), env_id=ENV_ID, task_id=task_id, seed=0)


def shown_image(info):
    """The one image of the latest message: the screenshot the step showed."""
    (image,) = info["messages"][-1].images
    return image


def test_the_screenshot_mode_shows_the_page_as_a_picture_of_the_viewport(env):
    obs, info = env.reset(options={"task_id": "miniwob/click-test/0"})
    assert isinstance(env.observation_space, Dict) and env.observation_space.contains(obs)
    text, pixels = obs["text"], obs["image"]
    assert text.endswith("Goal: Click the button.\nURL: /wob/miniwob/click-test.html\nPage: the screenshot")
    assert "[ref=" not in text and "800x600" in text and "mouse_click(x, y)" in text
    image = shown_image(info)
    assert image.size == (800, 600) and info["messages"][-1].text == text
    assert pixels.shape == (600, 800, 3) and np.array_equal(pixels, np.asarray(image.to_pil()))


def test_the_pixel_under_the_oracle_s_click_is_the_colour_the_goal_names(env):
    """The screenshot's pixels are the pointer's: where the solver clicks, the picture has the colour."""
    for seed in range(5):
        obs, info = env.reset(options={"task_id": f"miniwob/click-color/{seed}"})
        colour = PageView.parse(obs["text"]).goal.split("Click on the ")[1].split(" colored")[0]
        action = type(env.unwrapped).oracle(info["task"], info["messages"])
        x, y = (int(v) for v in action.removeprefix("mouse_click(").rstrip(")").split(", "))
        assert tuple(obs["image"][y, x]) == ImageColor.getrgb(colour), (seed, colour)
        assert env.step(action)[1] == 1.0


def test_each_step_shows_the_page_again_and_a_step_without_a_picture_shows_zeros(env):
    env.reset(options={"task_id": "miniwob/enter-text/0"})
    obs, reward, terminated, _, info = env.step("mouse_click(80, 120)\ntype(typed)")
    assert (reward, terminated) == (0.0, False) and "Typed 5 characters." in obs["text"]
    assert obs["image"].any() and np.array_equal(obs["image"], np.asarray(shown_image(info).to_pil()))
    obs, reward, terminated, _, info = env.step(42)  # not text: nothing ran, no picture taken
    assert obs["text"].startswith("Invalid action") and not obs["image"].any()


def test_native_tool_calls_get_the_screenshot_in_the_last_tool_message(env):
    env.reset(options={"task_id": "miniwob/click-test/1"})
    calls = (ToolCall("mouse_move", {"x": 5, "y": 5}, "c1"), ToolCall("noop", {}, "c2"))
    obs, *_, info = env.step(Action("", calls))
    first, last = info["messages"]
    assert (first.role, first.images, last.role, last.tool_call_id) == ("tool", (), "tool", "c2")
    assert last.text.endswith("Page: the screenshot") and shown_image(info).size == (800, 600)
    assert obs["text"] == f"{first.text}\n{last.text}"


def test_the_both_mode_shows_the_text_with_refs_and_the_marked_picture(both):
    obs, info = both.reset(options={"task_id": "miniwob/click-test/0"})
    button = PageView.parse(obs["text"]).get("button", "Click Me!").ref
    x, y, width, height = info["marks"][button]  # drawn on the observation's picture
    assert "Each element you can act on is boxed and labelled with its ref" in obs["text"]
    assert (obs["image"][int(y) - 2, int(x) + 4] == (230, 30, 90)).all()  # the mark's outline
    assert both.step(f"mouse_click({x + width / 2}, {y + height / 2})")[1] == 1.0


def test_text_mode_is_unchanged_and_an_unknown_mode_names_the_known_ones():
    text_env = gymnasium_make()
    try:
        obs, info = text_env.reset(options={"task_id": "miniwob/click-test/0"})
        assert isinstance(text_env.observation_space, UnicodeText) and isinstance(obs, str)
        assert "[ref=e5]" in obs and info["messages"][-1].images == ()
    finally:
        text_env.close()
    with pytest.raises(UnknownNameError, match="Known: both, screenshot, text"):
        gymnasium_make(observation="pixels")


def test_the_screenshot_mode_keeps_the_env_contract():
    """Gymnasium's check_env, seeding, pixels through async vector envs' shared memory, pickling,
    and junk actions: each gives a valid step whose observation is text and pixels."""
    kwargs = {"dataset": "vision", "num_seeds": 3, "observation": "screenshot"}
    contract.check_gymnasium(ENV_ID, kwargs)
    contract.check_vector_modes(ENV_ID, kwargs, num_envs=2)
    contract.check_pickling(ENV_ID, kwargs)
    env = gym.make(ENV_ID, **kwargs)
    try:
        contract.check_seeding(env)
        for action in contract.HOSTILE_TEXT:
            contract.check_action(env, action)
        for action in contract.MALFORMED_ACTIONS:
            contract.check_malformed_action(env, action)
        contract.check_step_after_end(env)
    finally:
        env.close()


def test_the_oracle_solves_every_page_drawn_on_the_screenshot(in_threads):
    """Three seeds a page: two shown as a screenshot alone, one as text and a marked screenshot."""
    runs = {}
    for observation, seeds in (("screenshot", (0, 1)), ("both", (2,))):
        task_ids = [f"miniwob/{page}/{seed}" for page in SCREENSHOT_PAGES for seed in seeds]
        kwargs = {"observation": observation, "set_of_marks": observation == "both"}
        runs |= in_threads(task_ids, oracle_episode, dataset="vision", num_seeds=3, **kwargs)
    failed = {task: (t.total_reward, t.failure, [s.action for s in t.steps]) for task, t in runs.items()}
    assert {task: f for task, f in failed.items() if f[0] != 1.0} == {}
    assert all(len(t.steps) == 1 for t in runs.values())  # one message does each task


def test_the_oracle_has_no_plan_for_a_drawn_page_shown_as_text():
    text_env = gymnasium_make(max_turns=3)
    try:
        trajectory = oracle_episode(text_env, "miniwob/click-color/0")
    finally:
        text_env.close()
    assert trajectory.total_reward == 0.0 and "no plan here" in trajectory.steps[-1].action


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ("mouse_click(800, 10)", "(800, 10) is off the page: x must be in [0, 800) and y in [0, 600)"),
        ("mouse_click(-1, 10)", "(-1, 10) is off the page"),
        ("mouse_click(10, 1e9)", "is off the page"),
        ("mouse_down(10, 600)", "(10, 600) is off the page"),
        ("drag_and_drop([10, 10], [10, -5])", "(10, -5) is off the page"),
    ],
)
def test_a_point_off_the_screenshot_is_refused_and_not_paid(env, action, message):
    env.reset(options={"task_id": "miniwob/click-color/0"})
    plan = type(env.unwrapped).oracle(env.unwrapped.task, env.unwrapped.messages)
    obs, reward, terminated, _, info = env.step(f"{action}\n{plan}")  # the right click after it
    assert message in obs["text"] and "Skipped after the error." in obs["text"]
    assert (reward, terminated, info["signals"]["actions_ok"]) == (0.0, False, False)
    assert obs["image"].any()


def test_a_flood_of_clicks_over_the_page_is_not_paid(env):
    """49 clicks at every part of the task area, on each drawn page: a page ends at the first
    click that answers, so the flood scores what a blind guess does, far below the oracle's 1.0."""
    rewards = []
    for page in SCREENSHOT_PAGES:
        for seed in (0, 1):
            env.reset(options={"task_id": f"miniwob/{page}/{seed}"})
            obs, reward, terminated, truncated, _ = env.step(FLOOD)
            assert terminated or truncated, page
            rewards.append(reward)
    assert sum(rewards) / len(rewards) <= 0.1, rewards
    env.reset(options={"task_id": "miniwob/click-shades/0"})
    obs, *_ = env.step("\n".join([FLOOD] * 30))  # 1,470 calls: the first 50 are read
    assert obs["text"].count("mouse_click(") <= 50


def test_saved_screenshot_episodes_keep_their_images_and_are_judged_again(in_threads, tmp_path):
    task_ids = ["miniwob/click-color/1", "miniwob/count-sides/1", "miniwob/click-test/2"]
    runs = in_threads(task_ids, oracle_episode, dataset=PAGES, num_seeds=5, observation="both")
    path = tmp_path / "screenshots.jsonl"
    write_jsonl(runs.values(), path)
    stored = {image.sha256 for t in runs.values() for image in t.images}  # each image once, by hash
    assert sorted(p.stem for p in (tmp_path / "images").iterdir()) == sorted(stored)
    tasks = browser_source(PAGES, num_seeds=5)
    for saved in read_jsonl(path):
        original = runs[saved.task_id]
        assert saved.images == original.images and saved.images[0].size == (800, 600)
        verdict = BrowserVerifier().verify(tasks.get(saved.task_id), saved)
        assert verdict.reward == saved.total_reward == 1.0 and verdict.signals["state_ok"]


def test_a_vision_language_policy_is_shown_the_screenshots(tiny_vision_model):
    """The tiny random VLM plays two turns: its token data holds the screenshots it was shown, in
    order (the last step's is shown to no later turn), each expanded into its image tokens."""
    from gfcr.agents.policies.hf import HFPolicy
    from gfcr.agents.policies.tiny_model import IMAGE_TOKEN

    vlm, two_turns = HFPolicy(tiny_vision_model), gymnasium_make(observation="screenshot", max_turns=2)
    try:
        sampling = SamplingParams(max_tokens=4)
        trajectory = rollout(two_turns, vlm, env_id=ENV_ID, task_id="miniwob/click-test/0", sampling=sampling)
    finally:
        two_turns.close()
    shown = [image for message in trajectory.messages for image in message.images]
    assert trajectory.status == "ok" and len(shown) == 3 and shown[0].size == (800, 600)
    assert trajectory.tokens is not None and trajectory.tokens.images == shown[:2]
    placeholder = vlm.tokenizer.convert_tokens_to_ids(IMAGE_TOKEN)
    ids = trajectory.tokens.prompt_ids + trajectory.tokens.completion_ids
    assert ids.count(placeholder) == 16 * 2
