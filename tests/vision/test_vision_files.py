"""gfcr/Vision-v0 on a user's own images: a JSONL of questions beside image files, checked alike."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
from PIL import Image as PILImage
from PIL import ImageDraw

import gfcr  # noqa: F401  (registers the envs)
from gfcr.agents import OraclePolicy
from gfcr.agents.runner.rollout import rollout
from gfcr.core import Action, Image, ToolCall
from gfcr.errors import DataError
from gfcr.testing import contract


def dots(count: int) -> PILImage.Image:
    picture = PILImage.new("RGB", (96, 64), "white")
    draw = ImageDraw.Draw(picture)
    for i in range(count):
        draw.ellipse((8 + 28 * i, 24, 24 + 28 * i, 40), fill=(20, 20, 200))
    return picture


@pytest.fixture
def questions(tmp_path):
    (tmp_path / "pictures").mkdir()
    dots(3).save(tmp_path / "pictures" / "dots.png")
    PILImage.new("RGB", (40, 40), (220, 30, 30)).save(tmp_path / "pictures" / "red.jpg", quality=95)
    rows = [
        {"image": "pictures/dots.png", "question": "How many dots?", "answer": 3, "legend": "blue: dots"},
        {
            "image": "pictures/red.jpg",
            "question": "What colour?",
            "answer": "red",
            "choices": ["green", "red"],
        },
        {"id": "word", "image": "pictures/red.jpg", "question": "Name the shape.", "answer": "a square"},
    ]
    path = tmp_path / "questions.jsonl"
    path.write_text("\n".join(json.dumps(row) for row in rows) + "\n")
    return path


def test_each_line_is_a_task_whose_image_is_shown_as_it_is(questions):
    env = gym.make("gfcr/Vision-v0", dataset="jsonl", path=str(questions))
    assert env.unwrapped.tasks.ids() == ["questions/1", "questions/2", "questions/word"]
    obs, info = env.reset(options={"task_id": "questions/2"})
    (shown,) = info["messages"][-1].images
    assert shown == Image.from_file(questions.parent / "pictures" / "red.jpg")  # the file's own bytes
    assert "Options: (A) green (B) red" in obs["text"] and "The image is 40x40 pixels" in obs["text"]
    assert obs["image"].shape == (256, 256, 3) and tuple(obs["image"][128, 128]) == pytest.approx(
        (220, 30, 30), abs=3
    )
    kinds = [env.unwrapped.tasks.get(i).metadata["answer_kind"] for i in env.unwrapped.tasks.ids()]
    assert kinds == ["number", "choice", "text"]


def test_answers_are_checked_as_generated_ones_are(questions):
    env = gym.make("gfcr/Vision-v0", dataset="jsonl", path=str(questions))
    ids = env.unwrapped.tasks.ids()
    assert [rollout(env, OraclePolicy(), env_id="gfcr/Vision-v0", task_id=i).total_reward for i in ids] == [
        1.0
    ] * 3
    cases = {
        "questions/1": {
            "\\boxed{3 dots}": 1.0,
            "\\boxed{3.0}": 1.0,
            "\\boxed{2}": 0.0,
            "\\boxed{1, 2, 3}": 0.0,
        },
        "questions/2": {
            "\\boxed{B}": 1.0,
            "\\boxed{Red}": 1.0,
            "\\boxed{A}": 0.0,
            "\\boxed{green or red}": 0.0,
        },
        "questions/word": {"\\boxed{Square}": 1.0, "\\boxed{a circle}": 0.0, "\\boxed{}": 0.0},
    }
    for task_id, replies in cases.items():
        for reply, reward in replies.items():
            env.reset(options={"task_id": task_id})
            assert env.step(reply)[1] == reward, (task_id, reply)


def test_zoom_upsamples_a_region_of_the_image_and_the_legend_is_the_lines(questions):
    env = gym.make("gfcr/Vision-v0", dataset="jsonl", path=str(questions))
    env.reset(options={"task_id": "questions/1"})
    obs, *_, info = env.step(Action("", (ToolCall("zoom", {"x": 0, "y": 16, "w": 32, "h": 32}),)))
    (image,) = info["messages"][0].images
    assert image.size == (256, 256) and "8x larger" in obs["text"]
    expected = dots(3).crop((0, 16, 32, 48)).resize((256, 256), PILImage.Resampling.LANCZOS)
    assert np.array_equal(np.asarray(image.to_pil()), np.asarray(expected))
    obs, *_ = env.step('<tool_call>{"name": "read_legend", "arguments": {}}</tool_call>')
    assert obs["text"] == "blue: dots"


def test_a_user_image_set_passes_the_contract(questions):
    report = contract.check_contract(
        "gfcr/Vision-v0", {"dataset": "jsonl", "path": str(questions)}, examples=10
    )
    assert report.passed, report.summary()


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ({"image": "missing.png", "question": "?", "answer": "1"}, "image 'missing.png' not found"),
        ({"image": "pictures/red.jpg", "answer": "1"}, "missing \\['question'\\]"),
        (
            {"image": "pictures/red.jpg", "question": "?", "answer": "red", "choices": ["blue"]},
            "not one of the choices",
        ),
        (
            {"image": "pictures/red.jpg", "question": "?", "answer": "RRD", "answer_kind": "path"},
            "answer_kind must be",
        ),
    ],
)
def test_a_bad_line_is_named_with_what_to_fix(questions, line, message):
    questions.write_text(questions.read_text() + json.dumps(line) + "\n")
    with pytest.raises(DataError, match=f"questions.jsonl, line 4: .*{message}"):
        gym.make("gfcr/Vision-v0", dataset="jsonl", path=str(questions))
