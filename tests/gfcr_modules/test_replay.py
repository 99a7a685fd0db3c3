"""Replay: store and retrieve rules, eviction, AR3PO rescue, the runner hook, and durability
across a process killed with SIGKILL."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from gfcr.agents import OraclePolicy, Runner, episodes_for_env
from gfcr.core import Provenance, Step, TokenData, Trajectory
from gfcr.errors import ConfigError, StorageError, UnknownNameError
from gfcr.replay import Refresh, ReplayBuffer, ReplayConfig


def attempt(task: str, answer: str, reward: float, version: str = "1") -> Trajectory:
    t = Trajectory(
        "e",
        task,
        "?",
        [Step(answer, "", reward, True, False, {"correct": reward >= 1})],
        provenance=Provenance("p", version),
    )
    t.tokens = TokenData([1, 2], [3, 4], [1, 1], [-0.5, -0.25])
    return t


def test_store_keeps_provenance_and_old_logprobs(tmp_path: Path):
    buffer = ReplayBuffer(tmp_path / "replay.db")
    original = attempt("q", "42", 1.0, version="7")
    buffer.store(original)
    (back,) = buffer.sample("q", 5, "recent")
    assert (
        back == original and back.tokens.logprobs == [-0.5, -0.25] and back.provenance.policy_version == "7"
    )
    buffer.store(original)  # storing the same id again replaces it
    assert len(buffer) == 1


def test_store_and_sample_rules(tmp_path: Path):
    buffer = ReplayBuffer(ReplayConfig(url=str(tmp_path / "r.db"), store_rule="correct"))
    kept = buffer.store_many(
        [
            attempt("q", "a b c", 1.0),
            attempt("q", "wrong", 0.0),
            attempt("q", "a b d", 1.0),
            attempt("q", "x y z", 1.0),
        ]
    )
    assert kept == 3 and buffer.task_ids(passed=True) == ["q"]
    assert [t.total_reward for t in buffer.sample("q", 10, "recent")] == [1.0] * 3
    diverse = buffer.sample("q", 2, "diverse")
    words = [set(t.steps[0].action.split()) for t in diverse]
    assert not words[0] & words[1]  # the two most different answers
    with pytest.raises(UnknownNameError):
        buffer.sample("q", 1, "best")
    failed = attempt("q", "crash", 1.0)
    failed.status = "failed"
    assert buffer.store_many([failed]) == 0


def test_eviction_by_staleness_age_and_capacity(tmp_path: Path):
    buffer = ReplayBuffer(
        ReplayConfig(url=str(tmp_path / "r.db"), max_staleness=2, max_age_s=100.0, max_per_task=2)
    )
    buffer.store_many([attempt("q", str(v), 1.0, version=str(v)) for v in range(6)])
    buffer.store(attempt("other", "1", 1.0, version="latest"))  # not a number: never stale
    removed = buffer.evict(current_version=5)
    assert removed == 4  # versions 0, 1, 2 are more than 2 behind 5; then q keeps its newest 2
    assert len(buffer.sample("q", 10, "recent")) == 2 and len(buffer) == 3
    assert buffer.evict(now=time.time() + 1000) == 3
    with pytest.raises(ConfigError):
        ReplayConfig(max_per_task=-1)


def test_rescue_injects_a_cached_correct_response_only_into_all_wrong_groups(tmp_path: Path):
    buffer = ReplayBuffer(tmp_path / "r.db")
    wrong = [attempt("q", "1", 0.0, version="9") for _ in range(4)]
    assert buffer.rescue(wrong) == (wrong, False)  # nothing cached yet
    buffer.store(attempt("q", "42", 1.0, version="3"))
    group, rescued = buffer.rescue(wrong)
    assert rescued and len(group) == 4 and group[:3] == wrong[:3]
    assert group[-1].total_reward == 1.0 and group[-1].signals["replayed"] is True
    assert group[-1].provenance.policy_version == "3"
    mixed = [*wrong[:3], attempt("q", "42", 1.0)]
    assert buffer.rescue(mixed) == (mixed, False)


def test_draw_leaves_out_the_excluded_ids_and_marks_copies_replayed(tmp_path: Path):
    """The keep stage draws old samples beside the step's own episodes, which the runner stored as
    they finished: those are excluded, and what is drawn is a marked copy (the stored row is not)."""
    buffer = ReplayBuffer(tmp_path / "r.db")
    old, fresh = attempt("q", "1", 1.0, version="1"), attempt("q", "2", 1.0, version="4")
    buffer.store_many([old, fresh])
    (drawn,) = buffer.draw("q", 5, "recent", exclude={fresh.id})
    assert drawn.id == old.id and drawn.signals["replayed"] is True
    assert "replayed" not in buffer.sample("q", 5, "recent")[-1].signals


def test_refresh_state_is_recorded_per_sample_and_kept_in_the_state_dict(tmp_path: Path):
    buffer = ReplayBuffer(tmp_path / "r.db")
    a, b = attempt("q", "1", 1.0), attempt("q", "2", 0.0)
    buffer.store_many([a, b])
    assert buffer.refresh([a.id, "not-stored"], version=7, now=123.0) == 1
    assert buffer.refresh_of(a.id) == Refresh(7, 123.0) and buffer.refresh_of(b.id) is None
    copy_ = ReplayBuffer(tmp_path / "copy.db")
    copy_.load_state_dict(buffer.state_dict())
    assert copy_.refresh_of(a.id) == Refresh(7, 123.0)


def test_a_buffer_written_before_the_refresh_columns_opens_and_works(tmp_path: Path):
    """Backward compatibility: a replay.db of the earlier schema (no refresh columns) opens; its
    rows read as before, then refresh, store and evict work on it."""
    path = tmp_path / "old.db"
    old = attempt("q", "42", 1.0, version="2")
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE TABLE replay_trajectories (id VARCHAR(128) PRIMARY KEY, env_id VARCHAR(255) NOT NULL, "
            "task_id VARCHAR(255) NOT NULL, policy VARCHAR(255) NOT NULL, policy_version VARCHAR(255) "
            "NOT NULL, version_number INTEGER, created VARCHAR(64) NOT NULL, stored_at FLOAT NOT NULL, "
            "reward FLOAT NOT NULL, passed BOOLEAN NOT NULL, signals JSON NOT NULL, length INTEGER NOT "
            "NULL, data TEXT NOT NULL)"
        )
        db.execute(
            "INSERT INTO replay_trajectories VALUES (?, 'e', 'q', 'p', '2', 2, 't', 1.0, 1.0, 1, '{}', 2, ?)",
            (old.id, old.to_json()),
        )
    buffer = ReplayBuffer(ReplayConfig(url=str(path), max_staleness=1))
    assert buffer.sample("q") == [old] and buffer.refresh_of(old.id) is None
    buffer.refresh([old.id], version=3)
    buffer.store(attempt("q", "7", 1.0, version="5"))
    assert buffer.refresh_of(old.id).version == 3 and len(buffer) == 2
    assert buffer.evict(current_version=5) == 1  # version 2 is 3 behind


def test_a_missing_column_that_cannot_be_null_is_a_clear_error(tmp_path: Path):
    path = tmp_path / "odd.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE replay_trajectories (id VARCHAR(128) PRIMARY KEY)")
    with pytest.raises(StorageError, match=r"lacks the columns \['env_id'.* start a new database"):
        ReplayBuffer(path)


def test_runner_stores_every_finished_trajectory(tmp_path: Path):
    buffer = ReplayBuffer(tmp_path / "r.db")
    result = Runner(OraclePolicy(), replay=buffer).run(
        episodes_for_env("gfcr/Math-v0", 4, kwargs={"split": "AIME2024"})
    )
    assert len(buffer) == 4
    assert {t.task_id for t in result.trajectories} == set(buffer.task_ids(passed=True))


def test_a_buffer_loaded_from_its_state_dict_samples_rescues_and_evicts_the_same(
    tmp_path: Path, through_checkpoint
):
    config = ReplayConfig(url=str(tmp_path / "a.db"), max_staleness=2, max_per_task=3)
    original = ReplayBuffer(config)
    for version in range(5):
        original.store_many(
            [
                attempt(f"q{k}", f"answer {k} {version} {i}", float(i % 2), str(version))
                for k in range(3)
                for i in range(2)
            ]
        )
    loaded = ReplayBuffer(ReplayConfig(url=str(tmp_path / "b.db"), max_staleness=2, max_per_task=3))
    loaded.store(attempt("junk", "not in the state", 1.0))
    loaded.load_state_dict(through_checkpoint(original.state_dict()))
    assert len(loaded) == len(original) == 30
    assert loaded.task_ids() == original.task_ids() == ["q0", "q1", "q2"]  # the junk is gone
    for task_id in original.task_ids():
        for rule in ("correct", "recent", "diverse"):
            assert loaded.sample(task_id, 4, rule) == original.sample(task_id, 4, rule), (task_id, rule)
        wrong = [attempt(task_id, "wrong", 0.0) for _ in range(2)]
        assert loaded.rescue(wrong) == original.rescue(wrong)
    assert loaded.evict(current_version=5) == original.evict(current_version=5) > 0
    assert loaded.state_dict() == original.state_dict()


WRITER = textwrap.dedent(
    """
    import sys
    from gfcr.core import Step, Trajectory
    from gfcr.replay import ReplayBuffer
    buffer = ReplayBuffer(sys.argv[1])
    i = 0
    while True:
        t = Trajectory("e", f"q{i % 7}", "?", [Step("x" * 2000, "", 1.0, True, False)], id=f"t{i}")
        buffer.store(t)
        print(t.id, flush=True)  # printed only after the commit returned
        i += 1
    """
)


def test_a_process_killed_mid_write_loses_nothing_it_committed(tmp_path: Path):
    db = tmp_path / "replay.db"
    process = subprocess.Popen([sys.executable, "-c", WRITER, str(db)], stdout=subprocess.PIPE, text=True)
    committed = []
    assert process.stdout is not None
    while len(committed) < 150:
        committed.append(process.stdout.readline().strip())
    os.kill(process.pid, signal.SIGKILL)
    committed += [line.strip() for line in process.stdout if line.strip()]  # printed before the kill
    process.wait()
    assert process.returncode == -signal.SIGKILL
    buffer = ReplayBuffer(db)
    stored = {t.id for task in buffer.task_ids() for t in buffer.sample(task, 10_000, "recent")}
    assert set(committed) <= stored and len(stored) - len(committed) <= 1


def test_the_buffer_and_the_skill_library_run_on_postgresql(pg_url):
    """Any SQLAlchemy URL works: the same rules on a real PostgreSQL server (window functions, JSON)."""
    from gfcr.skills import SkillLibrary
    from gfcr.workloads import KINDS, ShopTools

    buffer = ReplayBuffer(ReplayConfig(url=pg_url, max_per_task=2, max_staleness=1))
    buffer.store_many([attempt("q", str(v), float(v % 2), version=str(v)) for v in range(5)])
    assert [t.steps[0].action for t in buffer.sample("q", 5, "correct")] == ["3", "1"]
    group, rescued = buffer.rescue([attempt("q", "x", 0.0)] * 3)
    assert rescued and group[-1].total_reward == 1.0 and group[-1].signals["replayed"] is True
    assert buffer.evict(current_version=4) == 3 and len(buffer) == 2  # stale 0-2, then the cap
    (kept, *_) = buffer.sample("q", 5, "recent")
    assert buffer.refresh([kept.id], version=4) == 1 and buffer.refresh_of(kept.id).version == 4
    buffer.close()
    family = ShopTools(seed=0)
    task = family.tasks(1)[0]
    library = SkillLibrary(pg_url)
    (skill,) = library.extract(family.episode(task, KINDS[task.metadata["kind"]][1]))
    library.record(skill.id, True)
    library.close()
    assert SkillLibrary(pg_url).get(skill.id).successes == 1
