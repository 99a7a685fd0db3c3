"""Only the task's own page, in its own episode, is judged: however another page is reached, its
reward is never the task's; and no page runs script the agent wrote.

Each attack below scored 1.0, or ended in a misleading "The browser failed", before the judge
checked the page it read.
"""

from __future__ import annotations

import gymnasium as gym
import pytest
from page_scripts import on_page

import gfcr  # noqa: F401  (registers the envs)
from gfcr.envs.browser import BrowserVerifier
from gfcr.envs.browser.apps import APPS
from gfcr.envs.browser.data import browser_source
from gfcr.envs.browser.policy import NO_SCRIPTS, own_scripts_policy
from gfcr.envs.browser.server import BLANK, COOKIE, loopback_server
from gfcr.envs.browser.snapshot import PageView
from gfcr.envs.browser.tab import MAX_TYPED_CHARS

DATASET = ["click-color", "click-test", "terminal", "enter-text", "shop"]
EASY_PAGE = "/wob/miniwob/click-test.html"
LEFT = "the episode's page was left or reloaded"
# typed into MiniWoB's terminal, which writes the command line into the page as HTML
SET_REWARD = "WOB_DONE_GLOBAL=true;WOB_RAW_REWARD_GLOBAL=1;WOB_REWARD_GLOBAL=1"


@pytest.fixture(scope="module")
def env():
    env = gym.make("gfcr/Browser-v0", dataset=DATASET, num_seeds=1)
    yield env
    env.close()


def ref(observation: str, role: str, name: str | None = None) -> str:
    node = PageView.parse(observation).find(role, name)
    assert node is not None, f"no {role} {name!r} on the page"
    return node.ref


def solve_easy_page(observation: str) -> str:
    """An agent for click-test: its START cover (shown on a page the env did not start), then its button."""
    page = PageView.parse(observation)
    return f'click("{(page.find("button", "START") or page.get("button", "Click Me!")).ref}")'


def test_solving_another_page_after_goto_is_not_the_task_s_reward(env):
    """This scored 1.0 on click-color: the judge read click-test's reward globals as the task's."""
    env.reset(options={"task_id": "miniwob/click-color/0"})
    obs, reward, terminated, truncated, info = env.step(f'goto("{EASY_PAGE}")')
    rewards = [reward]
    while not (terminated or truncated) and len(rewards) < 3:
        obs, reward, terminated, truncated, info = env.step(solve_easy_page(obs))
        rewards.append(reward)
    assert (rewards, terminated, truncated) == ([0.0], True, False)
    assert f"The task is over: reward 0 ({LEFT}: the browser shows {EASY_PAGE}" in obs
    state = info["state"]["site_state"]
    assert state["page"] == EASY_PAGE and state["page_episode"] is None and state["episode"]
    # re-judged offline, the record says so too: the globals of a solved page other than the task's
    # (or of the task's page, read in a document its episode did not open) earn nothing
    task = browser_source(DATASET, 1).get("miniwob/click-color/0")
    solved_elsewhere = {**state, "WOB_DONE_GLOBAL": True, "WOB_RAW_REWARD_GLOBAL": 1.0, "WOB_REWARD_GLOBAL": 1.0}
    for recorded in (solved_elsewhere, {**solved_elsewhere, "page": "/wob/miniwob/click-color.html"}):
        verdict = BrowserVerifier().check(task, {**info["state"], "site_state": recorded})
        assert (verdict.reward, verdict.passed, verdict.signals["state_ok"]) == (0.0, False, True)
    # a record that does not say which page was read cannot be re-judged
    old_record = {k: v for k, v in solved_elsewhere.items() if k not in ("page", "page_episode", "episode")}
    assert BrowserVerifier().check(task, {**info["state"], "site_state": old_record}).signals["state_ok"] is False


LINK = f"""() => {{
  const link = document.body.appendChild(document.createElement("a"));
  link.href = "{EASY_PAGE}";
  link.textContent = "an easier task";
}}"""
FORM = f"""() => {{
  const form = document.body.appendChild(document.createElement("form"));
  form.action = "{EASY_PAGE}";
  form.appendChild(document.createElement("button")).textContent = "Go";
}}"""


# Each way of leaving the task's page: what to set up on it (as a page's own script would), then
# the agent's action.


def reload(env) -> str:  # would deal the page a new, unseeded problem
    return 'goto("/wob/miniwob/click-color.html")'


def history_back(env) -> str:  # the blank page before the task: no reward globals at all
    return "back()"


def another_document(env) -> str:
    return 'goto("/wob/miniwob/")'


def link(env) -> str:
    return f'click("{ref(page_after(env, LINK), "link", "an easier task")}")'


def form_submit(env) -> str:
    return f'click("{ref(page_after(env, FORM), "button", "Go")}")'


def script_navigation(env) -> str:
    async def navigate(tab) -> None:
        await tab.page.evaluate(f"() => {{ window.location = '{EASY_PAGE}'; }}")
        await tab.page.wait_for_url(f"**{EASY_PAGE}")

    env.unwrapped.on_page(navigate)
    return "noop()"


@pytest.mark.parametrize("leave", [reload, history_back, another_document, link, form_submit, script_navigation])
def test_leaving_the_task_s_page_any_way_ends_the_episode_at_zero(env, leave):
    """(`back()` here ended in "The browser failed (ReferenceError …)" before; the rest went on.)"""
    env.reset(options={"task_id": "miniwob/click-color/0"})
    obs, reward, terminated, truncated, info = env.step(leave(env))
    assert (reward, terminated, truncated) == (0.0, True, False), obs[:300]
    assert LEFT in obs and "The browser failed" not in obs
    assert info["signals"]["success"] is False and info["state"]["site_state"]["page_episode"] is None


def page_after(env, script: str) -> str:
    """The env's page after `script` changed it (as the page's own script would)."""
    on_page(env, script)
    return env.step("noop()")[0]


def test_the_task_s_page_cannot_deal_itself_another_problem(env):
    """MiniWoB shows a START cover after each episode, which deals a new problem; it is hidden, and
    were it shown (by markup an agent got into a page, say), it would deal none."""
    env.reset(options={"task_id": "miniwob/click-color/0"})
    goal = on_page(env, "() => core.getUtterance()")
    on_page(env, "() => core.startEpisode()")
    obs = page_after(env, "() => { document.getElementById('sync-task-cover').style.cssText = 'display: block !important'; }")
    obs, reward, terminated, *_ = env.step(f'click("{ref(obs, "button", "START")}")')
    assert (reward, terminated) == (0.0, False) and on_page(env, "() => core.getUtterance()") == goal


def test_a_frame_of_another_page_inside_the_task_s_page_is_not_judged(env):
    obs, _ = env.reset(options={"task_id": "miniwob/click-color/0"})
    on_page(env, f"""() => new Promise(done => {{
      const frame = document.body.appendChild(document.createElement("iframe"));
      frame.onload = done;
      frame.src = "{EASY_PAGE}";
    }})""")
    framed = env.step("noop()")[0]
    start = PageView.parse(framed).get(text="START").ref  # the frame's cover: a role only the top page's get
    obs, reward, terminated, *_ = env.step(f'click("{start}")')
    obs, reward, terminated, *_ = env.step(f'click("{ref(obs, "button", "Click Me!")}")')
    assert on_page(env, "() => document.querySelector('iframe').contentWindow.WOB_RAW_REWARD_GLOBAL") == 1
    assert (reward, terminated) == (0.0, False)  # click-test solved in its frame; click-color is not


@pytest.mark.parametrize(
    ("markup", "element"),
    [
        (f'<img src=x onerror="{SET_REWARD}">', "img"),
        (f'<svg onload="{SET_REWARD}"></svg>', "svg"),
        (f'<iframe srcdoc="<script>{SET_REWARD.replace("WOB", "parent.WOB")}</script>"></iframe>', "iframe"),
        (f'<iframe src="javascript:{SET_REWARD.replace("WOB", "parent.WOB")}"></iframe>', "iframe"),
    ],
    ids=["handler", "svg-handler", "frame-script", "javascript-url"],
)
def test_markup_the_agent_gets_a_page_to_insert_runs_no_script(env, markup, element):
    """MiniWoB's terminal writes the command typed into it into the page as HTML: an image whose
    error handler sets the reward globals scored 1.0 before every page came with a script policy."""
    obs, _ = env.reset(options={"task_id": "miniwob/terminal/0"})
    obs, reward, terminated, *_ = env.step(f'click("{ref(obs, "textbox")}")\ntype({markup!r})\npress(Enter)')
    assert (reward, terminated) == (0.0, False), obs[:300]
    assert on_page(env, f"() => document.querySelectorAll('.command {element}').length") == 1  # it is there
    assert on_page(env, "() => [WOB_DONE_GLOBAL, WOB_RAW_REWARD_GLOBAL]") == [False, 0]


def test_a_path_typed_into_goto_comes_back_as_text(env):
    """The 404 pages said the path as HTML: `goto` could put any markup (and script) on the site."""
    env.reset(options={"task_id": "shop/0"})
    obs, reward, terminated, *_ = env.step("goto('/shop/<b>bold</b>')")
    assert "There is no shop page at /<b>bold</b>." in obs and not terminated


def test_goto_opens_no_script_url(env):
    env.reset(options={"task_id": "miniwob/click-test/0"})
    for url in (f"javascript:{SET_REWARD}", f"data:text/html,<script>{SET_REWARD}</script>"):
        obs, reward, terminated, *_ = env.step(f"goto('{url}')")
        assert "only this task's own site is reachable" in obs and (reward, terminated) == (0.0, False)
    assert on_page(env, "() => WOB_DONE_GLOBAL") is False


def test_every_response_of_the_site_says_which_scripts_may_run():
    server = loopback_server()
    shop = APPS["shop"]
    session = server.open_session(shop, shop.initial_state(shop.task(0)))
    try:
        for path, policy in (
            ("/wob/miniwob/click-test.html", own_scripts_policy()),
            ("/wob/miniwob/use-colorwheel.html", own_scripts_policy(with_eval=True)),
            ("/shop/", own_scripts_policy()),
            ("/wob/core/core.js", NO_SCRIPTS),
            ("/wob/miniwob/<img>.html", NO_SCRIPTS),  # not found
            (BLANK, NO_SCRIPTS),
            ("/mail/", NO_SCRIPTS),  # no open episode: a 404 page
            ("/nowhere/<script>", NO_SCRIPTS),
        ):
            status, headers, body = server.respond("GET", path, b"", f"{COOKIE}={session}")
            assert headers["Content-Security-Policy"] == policy, path
            assert b"<script>" not in body and b"<img>" not in body, path  # scripts carry the nonce; paths are text
    finally:
        server.close_session(session)


def test_an_app_task_is_judged_on_its_own_session_whatever_page_is_shown(env):
    """An app's judge reads the episode's server-side state: a MiniWoB page solved, or another app's
    pages, change nothing."""
    env.reset(options={"task_id": "shop/0"})
    obs, reward, terminated, *_ = env.step(f'goto("{EASY_PAGE}")')
    assert (reward, terminated) == (0.0, False)
    obs, reward, terminated, *_ = env.step(f'click("{ref(obs, "button", "START")}")')
    obs, reward, terminated, *_ = env.step(f'click("{ref(obs, "button", "Click Me!")}")')
    assert (reward, terminated) == (0.0, False)
    obs, reward, terminated, *_ = env.step('goto("/mail/")')
    assert "This page belongs to no open episode." in obs and (reward, terminated) == (0.0, False)


def test_type_refuses_a_text_over_its_limit_at_once(env):
    """30,000 characters typed key by key ran 25 s into the browser call's timeout, then "The browser
    failed"; now the agent is told the limit and the page is as it was."""
    obs, _ = env.reset(options={"task_id": "miniwob/enter-text/0"})
    box = ref(obs, "textbox")
    obs, reward, terminated, truncated, info = env.step(f'click("{box}")\ntype("{"x" * 30_000}")')
    assert not (terminated or truncated) and info["signals"]["actions_ok"] is False
    assert f"type() types at most {MAX_TYPED_CHARS} characters at a time, got 30000" in obs
    assert "fill(ref, text)" in obs and on_page(env, "() => document.activeElement.value") == ""
    assert f"{MAX_TYPED_CHARS:,} characters" in env.unwrapped.tools["type"].description
    obs, reward, *_ = env.step(f'fill("{box}", "{"x" * 30_000}")')  # fill is one input event: no limit
    assert "Filled" in obs and len(on_page(env, "() => document.activeElement.value")) == 30_000
