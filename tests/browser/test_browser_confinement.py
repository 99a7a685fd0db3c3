"""The browser stays on the task's own site, and survives its pages and itself crashing."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import gymnasium as gym
import pytest
from page_scripts import on_page

import gfcr  # noqa: F401  (registers the envs)
from gfcr.envs.browser import chromium
from gfcr.envs.browser.chromium import find_chromium
from gfcr.envs.browser.snapshot import PageView
from gfcr.errors import BrowserError


@pytest.fixture()
def env():
    env = gym.make("gfcr/Browser-v0", dataset=["mail", "click-test"], num_seeds=2)
    yield env
    env.close()


def click(env, observation: str, role: str, name: str):
    node = PageView.parse(observation).find(role, name)
    assert node is not None, f"no {role} {name!r} on the page"
    return env.step(f'click("{node.ref}")')


def test_offsite_requests_new_windows_and_downloads_are_blocked_and_reported(env):
    obs, _ = env.reset(options={"task_id": "mail/1"})
    obs, *_ = click(env, obs, "link", "Your weekly deals")  # the newsletter loads a tracking image
    assert "Blocked a request to http://tracker.example.net: only this task's own site is reachable." in obs
    page = obs
    obs, reward, terminated, truncated, _ = click(
        env, page, "link", "Read it online"
    )  # target=_blank, off-site
    assert "Blocked a request to http://deals.example.net" in obs
    assert "The page tried to open a new window; it was closed." in obs
    assert PageView.parse(obs).path == "/mail/message/9" and not (terminated or truncated)
    obs, *_ = click(env, page, "link", "catalogue.pdf")
    assert "A download (catalogue.pdf) was refused." in obs
    assert env.unwrapped._episode.tab.context.pages == [env.unwrapped._episode.tab.page]


def test_goto_reaches_only_the_tasks_own_origin(env):
    env.reset(options={"task_id": "mail/0"})
    origin = env.unwrapped._episode.tab.origin
    port = int(origin.rsplit(":", 1)[1])
    for url in (
        "https://example.com/",
        f"http://127.0.0.1:{port + 1}/",
        "file:///etc/passwd",
        "chrome://version",
    ):
        obs, *_ = env.step(f'goto("{url}")')
        assert "only this task's own site is reachable" in obs, url
    obs, *_ = env.step('goto("/mail/sent")')
    assert PageView.parse(obs).path == "/mail/sent" and "Error" not in obs.split("Goal:")[0]
    obs, *_ = env.step(f'goto("{origin}/mail/trash")')
    assert PageView.parse(obs).path == "/mail/trash"


LEAVE_STATE = """async () => {
  document.cookie = "left=1";
  localStorage.setItem("left", "1");
  sessionStorage.setItem("left", "1");
  window.name = "left";
  await new Promise(done => { indexedDB.open("left").onsuccess = done; });
  await (await caches.open("left")).put("/left", new Response("1"));
}"""
PROBE = """() => {
  const box = document.body.appendChild(document.createElement("input"));
  box.focus();
  window.seen = [];
  box.addEventListener("keydown", e => { if (e.key === "a") seen.push([e.key, e.shiftKey]); });
  document.addEventListener("mousemove", e => seen.push(["move", e.buttons]));
}"""
READ_STATE = """async () => [
  document.cookie, localStorage.length, sessionStorage.length, window.name,
  (await indexedDB.databases()).length, (await caches.keys()).length,
]"""


def test_nothing_an_episode_leaves_behind_reaches_the_next(env):
    """Cookies, storage, the window's name, held keys and buttons, notes, refs, the clipboard, history."""
    fresh = gym.make("gfcr/Browser-v0", dataset=["mail", "click-test"], num_seeds=2)
    try:
        new_obs, _ = fresh.reset(options={"task_id": "miniwob/click-test/1"})
        new_tab = on_page(fresh, READ_STATE)
    finally:
        fresh.close()
    obs, _ = env.reset(options={"task_id": "mail/1"})
    click(env, obs, "link", "Your weekly deals")  # a note, and one more page in the history
    on_page(env, LEAVE_STATE)

    async def hold(tab):
        await tab.key_down("Shift")
        await tab.mouse_down(5, 5)
        tab.clipboard = "left"

    env.unwrapped.on_page(hold)
    obs, _ = env.reset(options={"task_id": "miniwob/click-test/1"})
    assert obs == new_obs  # no note left over, and the refs are the same
    assert on_page(env, READ_STATE) == new_tab == ["", 0, 0, "", 0, 0]

    async def press_move_paste(tab):
        await tab.page.evaluate(PROBE)
        await tab.press("a")
        await tab.mouse_move(20, 20)
        await tab.press("ControlOrMeta+v")

    env.unwrapped.on_page(press_move_paste)
    # no Shift held, no button down, nothing to paste
    assert on_page(env, "() => [seen, document.activeElement.value]") == [[["a", False], ["move", 0]], "a"]
    button = PageView.parse(obs).find("button", "Click Me!")
    assert env.step(f'click("{button.ref}")')[1] == 1.0  # the left button is up: a click is a click
    paths = []

    async def back_twice(tab):
        for _ in range(2):
            await tab.back()
            paths.append(tab.path)

    env.unwrapped.on_page(back_twice)
    assert not any(path.startswith("/mail") for path in paths), paths  # the history is this episode's


def test_a_crashed_page_truncates_the_episode_and_the_next_reset_recovers(env):
    env.reset(options={"task_id": "miniwob/click-test/0"})
    tab = env.unwrapped._episode.tab
    host = env.unwrapped._episode.host

    async def crash():
        session = await tab.context.new_cdp_session(tab.page)
        try:  # the renderer dies before it answers
            await asyncio.wait_for(session.send("Page.crash"), 2)
        except (TimeoutError, Exception):
            pass

    host.run(crash(), 10)
    obs, reward, terminated, truncated, _ = env.step('click("e5")')
    assert truncated and not terminated and reward == 0.0 and "The browser failed" in obs
    obs, _ = env.reset(options={"task_id": "miniwob/click-test/1"})
    assert env.step(f'click("{PageView.parse(obs).find("button").ref}")')[1] == 1.0


def test_a_killed_browser_is_relaunched_by_the_next_reset(env):
    env.reset(options={"task_id": "miniwob/click-test/0"})
    host = env.unwrapped._episode.host
    launches = host.launches
    for pid in _browser_pids():
        os.kill(pid, signal.SIGKILL)
    obs, reward, terminated, truncated, _ = env.step('click("e5")')
    assert truncated and "The browser failed" in obs
    obs, _ = env.reset(options={"task_id": "miniwob/click-test/1"})
    assert host.launches == launches + 1
    assert env.step(f'click("{PageView.parse(obs).find("button").ref}")')[1] == 1.0


def test_a_missing_browser_is_named_with_what_to_install(monkeypatch):
    monkeypatch.setenv("GFCR_CHROMIUM", "/nonexistent/chrome")
    with pytest.raises(BrowserError, match="no browser at GFCR_CHROMIUM='/nonexistent/chrome'"):
        find_chromium()
    monkeypatch.delenv("GFCR_CHROMIUM")
    monkeypatch.setattr(chromium, "SYSTEM_CHROMIUMS", ("/nonexistent/chromium",))
    with pytest.raises(BrowserError, match="apt-get install chromium.*playwright install chromium"):
        find_chromium(playwright_default="/nonexistent/playwright-chromium")


def _browser_pids() -> list[int]:
    """The Chromium browser processes (not their renderers) started by this Python process."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    mine = {os.getpid()}
    grew = True
    while grew:
        grown = mine | {pid for pid, parent in parents.items() if parent in mine}
        grew, mine = grown != mine, grown
    pids = []
    for pid in mine - {os.getpid()}:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"chrom" in cmdline[0] and not any(arg.startswith(b"--type=") for arg in cmdline):
            pids.append(pid)
    assert pids, "found no browser process to kill"
    return pids
