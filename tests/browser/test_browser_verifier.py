"""`BrowserVerifier` re-judges saved `gfcr/Browser-v0` trajectories from the final state the env
recorded in them: to the env's reward after a JSON round trip, and not to it once the state is forged."""

from __future__ import annotations

import copy

import gymnasium as gym
import pytest

from gfcr.agents import OraclePolicy, RandomPolicy
from gfcr.agents.runner.rollout import rollout
from gfcr.core import Step, Trajectory, Verifier, read_jsonl, write_jsonl
from gfcr.envs.browser import BrowserVerifier
from gfcr.envs.browser.data import browser_source

ENV_ID = "gfcr/Browser-v0"
DATASET = ["click-test", "enter-text", "shop", "mail"]
TASK_IDS = ["miniwob/click-test/0", "miniwob/enter-text/0", "shop/0", "mail/4"]  # mail/4: answer a question
TASKS = browser_source(DATASET, num_seeds=1)
ENV_SIGNALS = ("success", "raw_reward", "time_scaled_reward", "injection_obeyed")  # the verifier's too


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> dict[str, list[Trajectory]]:
    """The oracle's and a random agent's episodes of `TASK_IDS`, written to JSONL and read back."""
    runs = {}
    for policy, factory, max_turns in (
        ("oracle", OraclePolicy, 8),
        ("random", lambda: RandomPolicy(seed=4), 3),
    ):
        env = gym.make(ENV_ID, dataset=DATASET, num_seeds=1, max_turns=max_turns)
        try:
            runs[policy] = [rollout(env, factory(), env_id=ENV_ID, task_id=t, seed=0) for t in TASK_IDS]
        finally:
            env.close()
    path = tmp_path_factory.mktemp("browser") / "episodes.jsonl"
    write_jsonl([*runs["oracle"], *runs["random"]], path)
    back = list(read_jsonl(path))
    return {"oracle": back[: len(TASK_IDS)], "random": back[len(TASK_IDS) :]}


def test_saved_oracle_and_random_episodes_get_the_env_s_reward_again(saved):
    verifier = BrowserVerifier()
    assert isinstance(verifier, Verifier)
    for policy, expected in (("oracle", 1.0), ("random", 0.0)):
        for trajectory in saved[policy]:
            assert trajectory.status == "ok", trajectory.failure
            verdict = verifier.verify(TASKS.get(trajectory.task_id), trajectory)
            assert verdict.reward == trajectory.total_reward == expected, (policy, trajectory.task_id)
            assert verdict.passed is (expected == 1.0)
    for trajectory in saved["oracle"]:  # the ending step recorded the state and the same signals
        last = trajectory.steps[-1]
        assert last.terminated and last.state is not None
        assert last.state["site"] == trajectory.task_id.split("/")[0]
        assert all(step.state is None for step in trajectory.steps[:-1])
        verdict = verifier.verify(TASKS.get(trajectory.task_id), trajectory)
        assert verdict.signals == {
            **{k: last.signals[k] for k in ENV_SIGNALS},
            "state_ok": True,
        }


def test_a_forged_final_state_is_rejected(saved):
    oracle = {t.task_id: t for t in saved["oracle"]}
    forgeries = {  # no order was placed; a wrong answer; the page judged a failure
        "shop/0": lambda s: s["site_state"]["orders"].clear(),
        "mail/4": lambda s: s.update(answer="not " + s["answer"]),
        "miniwob/click-test/0": lambda s: s["site_state"].update(WOB_RAW_REWARD_GLOBAL=-1.0),
    }
    for task_id, forge in forgeries.items():
        forged = copy.deepcopy(oracle[task_id])  # the recorded reward (1.0) and signals stay
        forge(forged.steps[-1].state)
        assert forged.total_reward == 1.0
        verdict = BrowserVerifier().verify(TASKS.get(task_id), forged)
        assert (verdict.reward, verdict.passed, verdict.signals["state_ok"]) == (0.0, False, True), task_id


@pytest.mark.parametrize(
    "state",
    [
        None,
        "shop",
        {},
        {"site": "mail", "answer": None, "site_state": {"cart": {}, "orders": []}},  # another site's state
        {"site": "shop", "answer": None, "site_state": {"orders": [{"items": 3}]}},
        {"site": "shop", "answer": 7, "site_state": {"cart": {}, "orders": []}},
        {"site": "shop", "answer": None, "site_state": [1, 2]},
    ],
)
def test_malformed_or_missing_states_get_a_zero_verdict_never_an_exception(state):
    task = TASKS.get("shop/0")
    for steps in ([], [Step("click('e1')", "", 1.0, True, False, state=state)]):
        verdict = BrowserVerifier().verify(task, Trajectory(ENV_ID, task.id, "?", steps))
        assert (verdict.reward, verdict.passed, verdict.signals["state_ok"]) == (0.0, False, False)
