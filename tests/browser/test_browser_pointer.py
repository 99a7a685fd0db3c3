"""Pointer and keyboard actions, and refs for elements a page makes actionable without a role.

Every test drives real MiniWoB pages in headless Chromium and checks the page's own reward, so a
pointer action that does not reach the page, or an element left without a ref, fails it.
"""

from __future__ import annotations

import re

import gymnasium as gym
import pytest

import gfcr  # noqa: F401  (registers the envs)
from gfcr.core import Action, ToolCall
from gfcr.envs.browser.snapshot import PageView

PAGES = ["click-link", "click-tab-2", "email-inbox", "social-media", "click-test", "click-menu", "drag-box"]


@pytest.fixture(scope="module")
def env():
    env = gym.make("gfcr/Browser-v0", dataset=[*PAGES, "enter-text"], num_seeds=10, set_of_marks=True)
    yield env
    env.close()


def centre(box: tuple[float, float, float, float]) -> tuple[float, float]:
    x, y, width, height = box
    return x + width / 2, y + height / 2


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_plain_span_link_has_a_ref_and_clicking_it_succeeds(env, seed):
    """click-link's links are `<span>`s with a click handler: before, the page text held only prose."""
    obs, _ = env.reset(options={"task_id": f"miniwob/click-link/{seed}"})
    page = PageView.parse(obs)
    word = re.search(r'"(.*)"', page.goal).group(1)
    links = page.find_all("link")
    assert len(links) >= 2 and all(link.ref for link in links)
    obs, reward, terminated, *_ = env.step(f'click("{page.get("link", word).ref}")')
    assert (reward, terminated) == (1.0, True)


def test_the_wrong_span_link_fails(env):
    obs, _ = env.reset(options={"task_id": "miniwob/click-link/0"})
    page = PageView.parse(obs)
    word = re.search(r'"(.*)"', page.goal).group(1)
    other = next(link for link in page.find_all("link") if link.name != word)
    *_, info = env.step(f'click("{other.ref}")')
    assert info["signals"]["raw_reward"] == -1.0


def test_icons_get_refs_named_by_their_class(env):
    """The e-mail and social-media pages' icons are empty `<span>`s; they show as named buttons."""
    obs, _ = env.reset(options={"task_id": "miniwob/email-inbox/0"})
    inbox = PageView.parse(obs)
    assert len(inbox.find_all("button", "trash")) == len(inbox.find_all("button", "star")) >= 3
    obs, _ = env.reset(options={"task_id": "miniwob/social-media/0"})
    names = {button.name for button in PageView.parse(obs).find_all("button")}
    assert {"reply", "retweet", "like", "more"} <= names


def test_a_social_media_menu_item_is_reached_through_the_revealed_more_button(env):
    for seed in range(10):
        obs, _ = env.reset(options={"task_id": f"miniwob/social-media/{seed}"})
        page = PageView.parse(obs)
        user, action = re.fullmatch(r'For the user (@\S+), click on the "(.+)" button\.', page.goal).groups()
        if action in ("Reply", "Retweet", "Like"):
            break
    # the post: the innermost node with both the user's name and the button
    post = [n for n in page.root.walk() if user in n.all_text() and n.find("button", action.lower())][-1]
    *_, info = env.step(f'click("{post.get("button", action.lower()).ref}")')
    assert info["signals"]["raw_reward"] == 1.0


def test_pages_without_such_elements_keep_their_observation(env):
    obs, _ = env.reset(options={"task_id": "miniwob/click-test/0"})
    assert obs.split("Page:\n")[1] == (
        '- generic [ref=e2]:\n  - generic [ref=e3]: Click the button.\n  - button "Click Me!" [ref=e5]'
    )


def test_mouse_click_at_the_centre_of_a_set_of_marks_box(env):
    obs, info = env.reset(options={"task_id": "miniwob/click-test/1"})
    button = PageView.parse(obs).get("button", "Click Me!").ref
    x, y = centre(info["marks"][button])
    obs, reward, *_ = env.step(f"mouse_click({x}, {y})")
    assert reward == 1.0 and f"Clicked at ({x:g}, {y:g})." in obs


def test_a_mouse_click_beside_the_button_misses_it(env):
    obs, info = env.reset(options={"task_id": "miniwob/click-test/1"})
    x, y, width, height = info["marks"][PageView.parse(obs).get("button", "Click Me!").ref]
    _, reward, terminated, *_ = env.step(f"mouse_click({x + width + 40}, {y + height + 40})")
    assert (reward, terminated) == (0.0, False)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_drag_and_drop_by_refs_puts_the_small_box_in_the_large_one(env, seed):
    obs, _ = env.reset(options={"task_id": f"miniwob/drag-box/{seed}"})
    page = PageView.parse(obs)
    small, large, submit = (page.get("button", name).ref for name in ("s", "L", "Submit"))
    obs, reward, *_ = env.step(f'drag_and_drop("{small}", "{large}")\nclick("{submit}")')
    assert reward == 1.0 and f'drag_and_drop("{small}", "{large}"): Dragged' in obs


def test_submitting_drag_box_without_dragging_fails(env):
    obs, _ = env.reset(options={"task_id": "miniwob/drag-box/0"})
    *_, info = env.step(f'click("{PageView.parse(obs).get("button", "Submit").ref}")')
    assert info["signals"]["raw_reward"] == -1.0


def test_mouse_down_move_up_at_points_drags_too(env):
    obs, info = env.reset(options={"task_id": "miniwob/drag-box/1"})
    page = PageView.parse(obs)
    (sx, sy), (lx, ly) = (centre(info["marks"][page.get("button", name).ref]) for name in ("s", "L"))
    submit = page.get("button", "Submit").ref
    steps = [f"mouse_down({sx}, {sy})", *(f"mouse_move({sx + (lx - sx) * i / 4}, {sy + (ly - sy) * i / 4})"
             for i in range(1, 5)), f"mouse_up({lx}, {ly})", f'click("{submit}")']  # fmt: skip
    _, reward, *_ = env.step("\n".join(steps))
    assert reward == 1.0


def test_drag_and_drop_between_points_as_native_tool_call(env):
    obs, info = env.reset(options={"task_id": "miniwob/drag-box/2"})
    page = PageView.parse(obs)
    source, target = (list(centre(info["marks"][page.get("button", n).ref])) for n in ("s", "L"))
    calls = (
        ToolCall("drag_and_drop", {"source": source, "target": target}, "c1"),
        ToolCall("click", {"ref": page.get("button", "Submit").ref}, "c2"),
    )
    _, reward, *_ = env.step(Action("", calls))
    assert reward == 1.0


def test_hover_opens_submenus_whose_items_can_then_be_clicked(env):
    """click-menu's "Select A>B>C" wants a walk through submenus that open under the pointer."""
    for seed in range(10):
        obs, _ = env.reset(options={"task_id": f"miniwob/click-menu/{seed}"})
        page = PageView.parse(obs)
        if ">" in page.goal:
            break
    *path, item = page.goal.removeprefix("Select ").split(">")
    assert page.find("menuitem", item) is None  # the submenu is closed
    for name in path:  # jQuery UI opens a submenu 300 ms after the pointer enters its item
        obs, *_ = env.step(f'hover("{PageView.parse(obs).get("menuitem", name).ref}")\nnoop(500)')
    _, reward, *_ = env.step(f'click("{PageView.parse(obs).get("menuitem", item).ref}")')
    assert reward == 1.0


@pytest.mark.parametrize(("select", "reward"), [("dblclick", 1.0), ("click", -1.0)])
def test_dblclick_selects_a_word_that_typing_then_replaces(env, select, reward):
    """A double click selects the word in the box, so `type` replaces it; a click only puts the caret."""
    obs, _ = env.reset(options={"task_id": "miniwob/enter-text/4"})
    page = PageView.parse(obs)
    word = re.search(r'"(\w+)"', page.goal).group(1)
    box, submit = page.get("textbox").ref, page.get("button", "Submit").ref
    env.step(f'fill("{box}", "wrong")')
    *_, info = env.step(f'{select}("{box}")\ntype("{word}")\nclick("{submit}")')
    assert info["signals"]["raw_reward"] == reward


@pytest.mark.parametrize(("keys", "reward"), [('press("ControlOrMeta+A")', 1.0), ('press("End")', -1.0)])
def test_a_key_combination_selects_all_and_typing_replaces_it(env, keys, reward):
    obs, _ = env.reset(options={"task_id": "miniwob/enter-text/5"})
    page = PageView.parse(obs)
    word = re.search(r'"(\w+)"', page.goal).group(1)
    box, submit = page.get("textbox").ref, page.get("button", "Submit").ref
    *_, info = env.step(f'fill("{box}", "two words")\n{keys}\ntype("{word}")\nclick("{submit}")')
    assert info["signals"]["raw_reward"] == reward


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ("mouse_click(800, 10)", "(800, 10) is off the page: x must be in [0, 800) and y in [0, 600)"),
        ("mouse_move(-1, 10)", "(-1, 10) is off the page"),
        ("mouse_down(10, 1e999)", "inf is not a coordinate"),
        ('mouse_click("10", 10)', "argument 'x' must be number, got str"),
        ("mouse_click(True, 10)", "argument 'x' must be number, got bool"),
        (
            'mouse_click(10, 10, button="side")',
            "unknown mouse button 'side'; use 'left', 'middle' or 'right'",
        ),
        ('click("{button}", "wheel")', "unknown mouse button 'wheel'"),
        ("mouse_click(10, 10, clicks=7)", "clicks must be 1, 2 or 3, got 7"),
        ('drag_and_drop("e999", "{button}")', "there is no element e999 on this page"),
        ("drag_and_drop([10], [20, 20])", "[10] is neither an element ref ('e5') nor an [x, y] point"),
        ('drag_and_drop("{button}", [20, 900])', "(20, 900) is off the page"),
        ('hover("e999")', "there is no element e999 on this page"),
        ('dblclick("button")', "'button' is not an element reference"),
        ('press("Control+NoSuchKey")', "Unknown key"),
        ("type(5)", "argument 'text' must be string, got int"),
    ],
)
def test_bad_pointer_arguments_explain_themselves_and_leave_the_page_usable(env, action, message):
    obs, _ = env.reset(options={"task_id": "miniwob/click-test/0"})
    button = PageView.parse(obs).get("button", "Click Me!").ref
    obs, reward, terminated, truncated, info = env.step(action.format(button=button) + f'\nclick("{button}")')
    assert message in obs and "Skipped after the error." in obs
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert info["signals"]["actions_ok"] is False
    assert env.step(f'click("{button}")')[1] == 1.0  # the failed drag left no button held down
