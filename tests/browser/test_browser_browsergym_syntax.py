"""`action_syntax="browsergym"`: BrowserGym's action functions drive gfcr's pages to the reward."""

from __future__ import annotations

import re

import gymnasium as gym
import pytest

import gfcr  # noqa: F401  (registers the envs)
from gfcr.core import Action, ToolCall
from gfcr.envs.browser.snapshot import PageView
from gfcr.errors import UnknownNameError


@pytest.fixture(scope="module")
def env():
    env = gym.make(
        "gfcr/Browser-v0",
        dataset=["enter-text", "click-link", "drag-box", "click-checkboxes", "click-test", "shop"],
        num_seeds=5,
        action_syntax="browsergym",
        set_of_marks=True,
    )
    yield env
    env.close()


def test_the_prompt_and_the_tools_speak_browsergym(env):
    obs, info = env.reset(options={"task_id": "miniwob/click-test/0"})
    assert "Act with BrowserGym's action functions" in obs and "select_option(bid, options)" in obs
    tools = {t["function"]["name"]: t["function"]["parameters"] for t in info["tools"]}
    assert {"click", "fill", "select_option", "mouse_click", "keyboard_press", "send_msg_to_user"} <= set(
        tools
    )
    assert list(tools["press"]["properties"]) == ["bid", "key_comb"]
    assert tools["click"]["properties"]["button"]["enum"] == ["left", "middle", "right"]
    assert "select" not in tools and "answer" not in tools  # gfcr's own names are not taken here


def test_fill_and_click_with_browsergym_arguments_earn_reward_one(env):
    obs, _ = env.reset(options={"task_id": "miniwob/enter-text/1"})
    page = PageView.parse(obs)
    word = re.search(r'"(\w+)"', page.goal).group(1)
    box, submit = page.get("textbox").ref, page.get("button", "Submit").ref
    obs, reward, terminated, *_ = env.step(
        f"fill('{box}', 'x')\nclear('{box}')\nfill('{box}', \"{word}\")\n"
        f"click('{submit}', button='left', modifiers=[])"
    )
    assert (reward, terminated) == (1.0, True)


def test_press_with_a_bid_and_keyboard_type(env):
    obs, _ = env.reset(options={"task_id": "miniwob/enter-text/2"})
    page = PageView.parse(obs)
    word = re.search(r'"(\w+)"', page.goal).group(1)
    box, submit = page.get("textbox").ref, page.get("button", "Submit").ref
    steps = [f"fill('{box}', 'junk')", f"press('{box}', 'ControlOrMeta+a')", f"keyboard_type('{word}')"]
    _, reward, *_ = env.step("\n".join([*steps, f"click('{submit}')"]))
    assert reward == 1.0


def test_a_plain_span_link_is_a_bid(env):
    obs, _ = env.reset(options={"task_id": "miniwob/click-link/3"})
    page = PageView.parse(obs)
    word = re.search(r'"(.*)"', page.goal).group(1)
    assert env.step(f'click("{page.get("link", word).ref}")')[1] == 1.0


def test_check_marks_the_boxes_the_goal_names(env):
    obs, _ = env.reset(options={"task_id": "miniwob/click-checkboxes/0"})
    page = PageView.parse(obs)
    wanted = re.fullmatch(r"Select (.*) and click Submit\.", page.goal).group(1)
    names = [] if wanted == "nothing" else [n.strip() for n in wanted.split(",")]
    calls = [f'check("{page.get("checkbox", name).ref}")' for name in names]
    _, reward, *_ = env.step("\n".join([*calls, f'click("{page.get("button", "Submit").ref}")']))
    assert reward == 1.0


def test_mouse_drag_and_drop_between_coordinates(env):
    obs, info = env.reset(options={"task_id": "miniwob/drag-box/3"})
    page = PageView.parse(obs)
    (sx, sy, sw, sh), (lx, ly, lw, lh) = (info["marks"][page.get("button", n).ref] for n in ("s", "L"))
    calls = (
        ToolCall("mouse_drag_and_drop", {"from_x": sx + sw / 2, "from_y": sy + sh / 2,
                                         "to_x": lx + lw / 2, "to_y": ly + lh / 2}, "c1"),
        ToolCall("click", {"bid": page.get("button", "Submit").ref}, "c2"),
    )  # fmt: skip
    _, reward, *_ = env.step(Action("", calls))
    assert reward == 1.0


def test_send_msg_to_user_is_the_answer(env):
    _, info = env.reset(options={"task_id": "shop/3"})  # which product of a category is rated best
    obs, reward, terminated, *_ = env.step(f'send_msg_to_user("{info["task"].gold["answer"]}")')
    assert (reward, terminated) == (1.0, True)


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ("new_tab()", "this browser keeps the task's one tab"),
        ("tab_focus(1)", "this browser keeps the task's one tab"),
        ('upload_file("{button}", "a.pdf")', "file uploads are not available"),
        ('click("{button}", modifiers=["Hyper"])', "modifiers must be names from"),
        ("mouse_click(10, 700)", "(10, 700) is off the page"),
        ('select_option("{button}", ["a", "b"])', "is not a drop-down list"),
        ('press("Enter")', "missing ['key_comb']"),
        ('keyboard_press("NoSuchKey")', "Unknown key"),
    ],
)
def test_what_gfcr_cannot_do_is_explained(env, action, message):
    obs, _ = env.reset(options={"task_id": "miniwob/click-test/0"})
    button = PageView.parse(obs).get("button", "Click Me!").ref
    obs, reward, terminated, _, info = env.step(action.format(button=button))
    assert message in obs and (reward, terminated) == (0.0, False) and info["signals"]["actions_ok"] is False
    assert env.step(f"click('{button}')")[1] == 1.0


def test_an_unknown_syntax_is_refused_with_the_known_ones():
    with pytest.raises(
        UnknownNameError, match="unknown action syntax 'browsergim'; did you mean 'browsergym'"
    ):
        gym.make("gfcr/Browser-v0", dataset="click-test", action_syntax="browsergim")
