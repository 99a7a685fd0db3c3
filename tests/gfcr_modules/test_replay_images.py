"""Replay keeps images: rows refer to them by hash, their bytes sit once each in an images/ folder
beside the database (or the configured one), and every way out (sample, draw, rescue, a
checkpoint's state, gfcr diagnose's reader) gives them back."""

from __future__ import annotations

import sqlite3

import pytest
from image_envs import ENV_ID, square

from gfcr.agents import Runner, make_policy
from gfcr.agents.runner.specs import EpisodeSpec, env_config
from gfcr.apps.diagnose.data import read_replay
from gfcr.core import Trajectory
from gfcr.errors import ConfigError
from gfcr.replay import ReplayBuffer, ReplayConfig

TASKS = ("colour-red", "colour-blue")


def episodes(agent: str) -> list[Trajectory]:
    """Episodes of the colour env: the oracle's are correct, the random agent's see two pictures."""
    specs = [EpisodeSpec(env_config(ENV_ID), task) for task in TASKS]
    trajectories = sorted(Runner(make_policy(agent)).run(specs).trajectories, key=lambda t: t.task_id)
    for t in trajectories:
        t.id = f"{agent}/{t.id}"  # a spec's id is the same for every agent: one row each in the buffer
    return trajectories


def test_a_sqlite_buffer_keeps_images_beside_its_file_and_gives_them_back(tmp_path):
    solved, failed = episodes("scripted:oracle"), episodes("scripted:random")
    buffer = ReplayBuffer(tmp_path / "replay.db")
    buffer.store_many([*solved, *failed])
    buffer.close()
    expected = {f"{i.sha256}.png" for t in [*solved, *failed] for i in t.images}
    assert sorted(p.name for p in (tmp_path / "images").iterdir()) == sorted(expected)
    rows = sqlite3.connect(tmp_path / "replay.db").execute("SELECT data FROM replay_trajectories").fetchall()
    assert rows and not any("base64" in data for (data,) in rows)  # rows refer to images by hash
    reopened = ReplayBuffer(tmp_path / "replay.db")
    for t in solved:
        (back,) = reopened.sample(t.task_id)
        assert back.messages == t.messages and back.images == [square(t.task_id[7:])]
        assert back.images[0].to_pil().size == (24, 16)  # the bytes, read from images/
    group, rescued = reopened.rescue([f for f in failed if f.task_id == "colour-red"])
    assert rescued and group[-1].images == [square("red")] and group[-1].signals["replayed"] is True
    by_id = {s.trajectory.id: s.trajectory for s in read_replay(tmp_path / "replay.db")}  # gfcr diagnose's
    assert {i: t.messages for i, t in by_id.items()} == {t.id: t.messages for t in [*solved, *failed]}
    assert any(len(t.images) == 2 for t in by_id.values())  # a wrong answer's second look came back too


def test_a_checkpoint_state_carries_its_images_into_another_buffer():
    source = ReplayBuffer(ReplayConfig(url="sqlite://"))  # an in-memory database: a temporary folder
    source.store_many(episodes("scripted:oracle"))
    copy_ = ReplayBuffer(ReplayConfig(url="sqlite://"))
    copy_.load_state_dict(source.state_dict())
    assert copy_.images is not None and source.images is not None and copy_.images.root != source.images.root
    del source  # its folder goes with it: the copy holds its own images
    for task in TASKS:
        (back,) = copy_.sample(task)
        assert back.images == [square(task[7:])] and back.images[0].to_pil().size == (24, 16)


def test_a_server_database_needs_an_images_folder_for_episodes_with_images(pg_url, tmp_path):
    solved = episodes("scripted:oracle")
    with pytest.raises(ConfigError, match=r"give ReplayConfig\(images=FOLDER\)"):
        ReplayBuffer(ReplayConfig(url=pg_url)).store(solved[0])
    buffer = ReplayBuffer(ReplayConfig(url=pg_url, images=str(tmp_path / "shared-images")))
    buffer.store(solved[0])
    (back,) = buffer.sample(solved[0].task_id)
    assert back.images == solved[0].images and (tmp_path / "shared-images").is_dir()
    buffer.load_state_dict({"rows": []})
    buffer.close()
