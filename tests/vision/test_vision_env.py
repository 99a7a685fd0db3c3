"""gfcr/Vision-v0: every kind and level solvable by the oracle and not by junk, answers that must not
be paid, the zoom and legend tools, task ids that rebuild their pictures, offline re-judging."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import gfcr
from gfcr.agents import OraclePolicy, RandomPolicy
from gfcr.agents.runner.rollout import rollout
from gfcr.core import Action, ToolCall, read_jsonl, write_jsonl
from gfcr.envs.vision import KINDS, VisionEnv, VisionVerifier, generated_task
from gfcr.envs.vision.maze import MOVES, walk
from gfcr.envs.vision.tasks import picture
from gfcr.errors import ConfigError, UnknownNameError
from gfcr.testing import contract

KIND_LEVELS = [(kind, level) for kind, spec in KINDS.items() for level in range(1, spec.levels + 1)]
SEEDS = 25


def zoom(x: int, y: int, w: int, h: int) -> Action:
    return Action("", (ToolCall("zoom", {"x": x, "y": y, "w": w, "h": h}, id="z"),))


def answer(env: VisionEnv, task_id: str, text: str) -> tuple[float, dict]:
    env.reset(options={"task_id": task_id})
    _, reward, terminated, _, info = env.step(text)
    assert terminated
    return reward, info["signals"]


@pytest.mark.parametrize(("kind", "level"), KIND_LEVELS)
def test_the_oracle_solves_every_kind_and_level_and_junk_does_not(kind, level):
    env = gym.make("gfcr/Vision-v0", kinds=kind, levels=level, num_seeds=SEEDS)
    ids = env.unwrapped.tasks.ids()
    oracle = [rollout(env, OraclePolicy(), env_id="gfcr/Vision-v0", task_id=i).total_reward for i in ids]
    junk = [rollout(env, RandomPolicy(seed=s), env_id="gfcr/Vision-v0", task_id=i, seed=s).total_reward
            for s, i in enumerate(ids)]  # fmt: skip
    assert len(ids) == SEEDS and min(oracle) == 1.0
    assert sum(junk) == 0.0


def test_answers_are_spread_so_that_no_constant_guess_pays():
    """No answer is the gold of more than a third of any level's tasks (a choice between two
    objects is the only exception: chance is 1/2 there), so always saying "1" does not learn."""
    for kind, level in KIND_LEVELS:
        golds = [generated_task(kind, level, seed).gold for seed in range(300)]
        most = max(golds.count(gold) for gold in set(golds)) / len(golds)
        assert most < (0.6 if (kind, level) == ("spatial", 1) else 0.34), (kind, level, most)


@pytest.mark.parametrize(
    "reply",
    [
        "\\boxed{1,2,3,4,5}",  # every count at once
        "\\boxed{1} \\boxed{2} \\boxed{3} \\boxed{4} \\boxed{5}",  # one box each
        "\\boxed{5} or \\boxed{4}",  # hedged
        "\\boxed{" + "9" * 5000 + "}",  # huge
        "\\boxed{10^{100000}}",
        "\\boxed{5 \\text{ or } 4}",
        "\\boxed{\\pm 5}",
        "5",  # no box
        "\\boxed{}",
        "\\boxed{5" * 8,  # unclosed
    ],
)
def test_hedged_listed_huge_and_unboxed_numbers_are_not_paid(reply):
    env = VisionEnv(kinds="count", levels=1)
    task = generated_task("count", 1, 0)
    assert task.gold == "5"
    assert answer(env, task.id, f"\\boxed{{{task.gold}}}")[0] == 1.0
    reward, signals = answer(env, task.id, reply)
    assert reward == 0.0 and not signals["correct"]


def test_repeating_the_right_answer_is_fine_but_more_than_five_boxes_are_not_read():
    env = VisionEnv(kinds="count", levels=1)
    assert answer(env, "vision/count/1/0", "first \\boxed{5}, so \\boxed{5}")[0] == 1.0
    reward, signals = answer(env, "vision/count/1/0", "\\boxed{5}" * 6)
    assert reward == 0.0 and signals["answer_extracted"] and not signals["format_ok"]


def test_choices_by_text_or_letter_but_never_several():
    env = VisionEnv(kinds="spatial", levels=2)
    task = generated_task("spatial", 2, 4)
    choices = task.metadata["choices"]
    letter = "ABCDEFGH"[choices.index(task.gold)]
    wrong = next(c for c in choices if c != task.gold)
    paid = [task.gold, f"the {task.gold.upper()}.", letter, f"({letter})", f"({letter}) {task.gold}"]
    unpaid = [wrong, f"{task.gold} or {wrong}", ", ".join(choices), "ABCDEFGH"[choices.index(wrong)],
              f"({letter}) {wrong}", task.gold.split()[0], "A, B, C, D"]  # fmt: skip
    for reply in paid:
        assert answer(env, task.id, f"\\boxed{{{reply}}}")[0] == 1.0, reply
    for reply in unpaid:
        assert answer(env, task.id, f"\\boxed{{{reply}}}")[0] == 0.0, reply


def test_a_maze_path_is_walked_any_path_to_the_goal_counts_walls_and_edges_do_not():
    env = VisionEnv(kinds="maze", levels=2)
    task = generated_task("maze", 2, 7)
    scene, gold = task.metadata["scene"], task.gold
    back = {"U": "D", "D": "U", "L": "R", "R": "L"}
    detour = gold[:1] + back[gold[0]] + gold  # a step there and back first: longer, still valid
    assert walk(scene, detour) == (True, True)
    assert answer(env, task.id, f"\\boxed{{{detour}}}")[0] == 1.0
    assert answer(env, task.id, f"\\boxed{{{' '.join(gold.lower())}}}")[0] == 1.0  # spaced, lower case
    row, col = scene["start"]
    blocked = next(m for m, (_, _, wall) in MOVES.items() if not scene["cells"][row][col] & wall)
    for reply in ("", blocked + gold, gold + gold[-1:], gold[:-1], "UDLR" * 200, gold + "X"):
        reward, signals = answer(env, task.id, f"\\boxed{{{reply}}}")
        assert reward == 0.0, reply
    assert not answer(env, task.id, f"\\boxed{{{blocked}{gold}}}")[1]["path_valid"]  # through a wall
    assert answer(env, task.id, f"\\boxed{{{gold[:-1]}}}")[1]["path_valid"]  # short of the goal


def test_zoom_shows_the_region_sharper_as_an_image_of_the_tool_message():
    env = VisionEnv(kinds="chart", levels=4)
    obs, info = env.reset(options={"task_id": "vision/chart/4/3"})
    prompt_image = info["messages"][-1].images[0]
    assert prompt_image.size == (256, 256) and obs["image"].shape == (256, 256, 3)
    obs, reward, terminated, truncated, info = env.step(zoom(32, 16, 64, 64))
    (message,) = info["messages"]
    assert message.role == "tool" and message.tool_call_id == "z" and message.name == "zoom"
    (image,) = message.images
    assert image.size == (256, 256) and "4x larger" in message.text == obs["text"]
    # re-rendered at 4x, not upsampled: the same region of a picture drawn 4 times as large
    big, _ = picture(env.task, 1024)
    assert np.array_equal(np.asarray(image.to_pil()), np.asarray(big.crop((128, 64, 384, 320))))
    assert np.array_equal(obs["image"], np.asarray(image.to_pil()))
    assert (reward, terminated, truncated) == (0.0, False, False) and info["signals"]["zoomed"]
    obs, *_, info = env.step(f"\\boxed{{{env.task.gold}}}")
    assert info["signals"]["correct"] and info["signals"]["zoomed"] and not obs["image"].any()


def test_zoom_refuses_regions_outside_the_image_and_keeps_going():
    env = VisionEnv(kinds="count", levels=1)
    env.reset(seed=0)
    for x, y, w, h in ((300, 0, 10, 10), (0, 0, 0, 5), (-50, -50, 52, 52)):
        obs, reward, terminated, _, info = env.step(zoom(x, y, w, h))
        assert obs["text"].startswith("Error:") and "256x256" in obs["text"] or "at least 1" in obs["text"]
        assert not info["signals"]["zoomed"] and not terminated and not info["messages"][0].images
    obs, *_ = env.step(zoom(-10, -10, 30, 30))  # partly outside: clipped to the image
    assert "x=0..20, y=0..20" in obs["text"]


def test_read_legend_names_the_series_of_a_line_plot():
    env = VisionEnv(kinds="chart", levels=3)
    obs, info = env.reset(options={"task_id": "vision/chart/3/0"})
    obs, *_, info = env.step('<tool_call>{"name": "read_legend", "arguments": {}}</tool_call>')
    series = info["messages"][0].text
    assert all(f"line = {name}" in series for name in env.task.metadata["choices"])
    assert info["signals"]["legend_read"] and not obs["image"].any()
    env = VisionEnv(kinds="maze")
    env.reset(seed=0)
    obs, *_ = env.step('<tool_call>{"name": "read_legend", "arguments": {}}</tool_call>')
    assert obs["text"] == "Error: this image has no legend"


def test_a_task_id_rebuilds_the_same_picture_anywhere_and_seeds_pick_tasks():
    task_id = "vision/geometry/3/12345"
    one = VisionEnv(num_seeds=20_000).reset(options={"task_id": task_id})
    two = VisionEnv(kinds="geometry", levels=[3], first_seed=12_000, num_seeds=1000)
    again = two.reset(options={"task_id": task_id})
    assert one[1]["messages"][-1].images == again[1]["messages"][-1].images
    assert np.array_equal(one[0]["image"], again[0]["image"]) and one[0]["text"] == again[0]["text"]
    with pytest.raises(UnknownNameError):
        two.reset(options={"task_id": "vision/geometry/3/5"})  # below first_seed
    with pytest.raises(UnknownNameError):
        two.reset(options={"task_id": "vision/geometry/4/12345"})  # no level 4
    seeded = {VisionEnv().reset(seed=s)[1]["task"].id for s in range(20)}
    assert len({task_id.split("/")[1] for task_id in seeded}) >= 3  # seeds spread over kinds


def test_levels_and_kinds_select_tasks_and_bad_keywords_say_what_is_allowed():
    env = VisionEnv(kinds=["count", "chart"], levels=[4], num_seeds=3)
    assert env.tasks.ids() == ["vision/chart/4/0", "vision/chart/4/1", "vision/chart/4/2"]
    assert VisionEnv(tools=()).max_turns == 1 and VisionEnv().max_turns == 4
    with pytest.raises(UnknownNameError, match="did you mean 'count'"):
        VisionEnv(kinds="cuont")
    with pytest.raises(ConfigError, match="levels go from 1 to 3"):
        VisionEnv(kinds="maze", levels=[5])
    with pytest.raises(UnknownNameError, match="did you mean 'zoom'"):
        VisionEnv(tools=["zom"])
    with pytest.raises(ConfigError, match='path="questions.jsonl"'):
        VisionEnv(dataset="jsonl")


def test_the_verifier_rejudges_saved_trajectories_with_their_images(tmp_path):
    env = gym.make("gfcr/Vision-v0", num_seeds=4)
    ids = env.unwrapped.tasks.ids()[::6]
    trajectories = [rollout(env, policy, env_id="gfcr/Vision-v0", task_id=i, seed=n)
                    for n, i in enumerate(ids) for policy in (OraclePolicy(), RandomPolicy(seed=n))]  # fmt: skip
    write_jsonl(trajectories, tmp_path / "run.jsonl")
    verifier = VisionVerifier()
    for saved in read_jsonl(tmp_path / "run.jsonl"):
        task = env.unwrapped.tasks.get(saved.task_id)
        assert verifier.verify(task, saved).reward == saved.total_reward
        assert saved.messages[0].images[0].size == (256, 256)  # the prompt's picture, read back
    assert len(list((tmp_path / "images").iterdir())) == len(ids)  # each picture stored once


def test_observations_are_checked_on_their_text_and_image_shape():
    vision, text = gym.make("gfcr/Vision-v0"), gym.make("gfcr/ToolUse-v0")
    obs, _ = vision.reset(seed=0)
    assert contract.check_observation(vision, obs) == obs["text"]
    for bad in ({"text": obs["text"]}, {**obs, "image": obs["image"][:10]}, {**obs, "image": obs["image"] * 1.0},
                obs["text"]):  # fmt: skip
        with pytest.raises(contract.ContractViolation):
            contract.check_observation(vision, bad)
    with pytest.raises(contract.ContractViolation, match="must be text"):
        contract.check_observation(text, obs)  # a text env stays as strict as before


def test_vision_is_in_the_smoke_suite_and_passes_the_contract():
    assert any(entry.env_id == "gfcr/Vision-v0" for entry in gfcr.make_suite("smoke").entries)
    report = contract.check_contract("gfcr/Vision-v0", {"num_seeds": 50}, examples=10, episodes=10)
    assert report.passed, report.summary()
