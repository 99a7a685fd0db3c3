"""Envs used the ways a runner uses them: from an event loop, from many threads, in forked workers."""

from __future__ import annotations

import asyncio
import multiprocessing

import gymnasium as gym

import gfcr  # noqa: F401  (registers the envs)
from gfcr.envs.browser.host import browser_host
from gfcr.envs.browser.snapshot import PageView

ENV_ID = "gfcr/Browser-v0"


def solve_click_test(env, seed: int) -> float:
    obs, _ = env.reset(options={"task_id": f"miniwob/click-test/{seed}"})
    return env.step(f'click("{PageView.parse(obs).find("button").ref}")')[1]


def test_envs_step_inside_a_running_event_loop_and_concurrently_from_its_threads():
    """Playwright's sync API would refuse both; the env drives the browser from its own loop thread."""
    envs = [gym.make(ENV_ID, dataset="click-test", num_seeds=8) for _ in range(4)]

    async def main() -> list[float]:
        first = solve_click_test(envs[0], 0)  # a blocking call made on the event loop itself
        rest = await asyncio.gather(
            *(asyncio.to_thread(solve_click_test, env, i) for i, env in enumerate(envs))
        )
        return [first, *rest]

    try:
        assert asyncio.run(main()) == [1.0] * 5
    finally:
        for env in envs:
            env.close()


def test_each_env_pastes_what_it_copied_though_all_share_one_browser():
    """Headless Chromium has one clipboard for the whole browser; each episode keeps its own."""
    envs = [gym.make(ENV_ID, dataset="copy-paste", num_seeds=8) for _ in range(3)]
    try:
        targets, submits = [], []
        for seed, env in enumerate(envs):
            page = PageView.parse(env.reset(options={"task_id": f"miniwob/copy-paste/{seed}"})[0])
            boxes = page.find_all("textbox")
            source = next(box for box in boxes if box.text)
            targets.append(next(box for box in boxes if not box.text).ref)
            submits.append(page.find("button", "Submit").ref)
            if seed < 2:  # the third env copies nothing
                env.step(f'click("{source.ref}")\npress("ControlOrMeta+a")\npress("ControlOrMeta+c")')
        paste = 'click("{}")\npress("ControlOrMeta+v")'
        obs = envs[2].step(paste.format(targets[2]))[0]  # after the others copied: still nothing
        assert next(b for b in PageView.parse(obs).find_all("textbox") if b.ref == targets[2]).text == ""
        for env, target, submit in zip(envs[:2], targets, submits, strict=False):
            assert env.step(paste.format(target) + f'\nclick("{submit}")')[1] == 1.0
    finally:
        for env in envs:
            env.close()


def _child(queue) -> None:
    env = gym.make(ENV_ID, dataset="click-test", num_seeds=4)
    queue.put(solve_click_test(env, 3))
    env.close()


def test_a_forked_worker_gets_its_own_browser_and_leaves_the_parents_alone():
    env = gym.make(ENV_ID, dataset="click-test", num_seeds=4)
    try:
        assert solve_click_test(env, 1) == 1.0  # the parent's browser and server are running
        launches = browser_host().launches
        context = multiprocessing.get_context("fork")
        queue = context.Queue()
        child = context.Process(target=_child, args=(queue,))
        child.start()
        assert queue.get(timeout=120) == 1.0
        child.join(60)
        assert child.exitcode == 0
        assert solve_click_test(env, 2) == 1.0 and browser_host().launches == launches
    finally:
        env.close()


def test_the_vectorized_runner_drives_browser_episodes_in_threads_and_in_processes():
    from gfcr.agents import OraclePolicy, Runner, RunnerConfig, episodes_for_env

    for workers in ("thread", "process"):
        config = RunnerConfig(concurrency=4, env_workers=workers, num_env_workers=2)
        episodes = episodes_for_env(ENV_ID, 6, kwargs={"dataset": ["apps", "click-test"], "num_seeds": 2})
        result = Runner(OraclePolicy(), config).run(episodes)
        assert (result.episodes, result.solved, result.failed) == (6, 6, 0), workers
