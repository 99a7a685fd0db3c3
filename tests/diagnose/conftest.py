"""Trajectory sets for the diagnosis tests: real `Trajectory` objects written as `gfcr run` writes them."""

from __future__ import annotations

import pytest

from gfcr.core import Cost, Provenance, Step, TokenData, Trajectory, write_jsonl


def make_episode(
    task: str,
    reward: float,
    *,
    correct: bool | None = None,
    action: str | None = None,
    truncated: bool = False,
    length: int = 10,
    seconds: float = 0.01,
    env: str = "gfcr/Math-v0",
    version: str = "0",
    signals: dict | None = None,
    status: str = "ok",
) -> Trajectory:
    """One single-turn episode with its signals, token data, cost and provenance."""
    found = {"format_ok": True, "correct": reward >= 1.0 if correct is None else correct, **(signals or {})}
    step = Step(action or f"answer {task} {reward} {length}", "", reward, not truncated, truncated, found)
    return Trajectory(
        env,
        task,
        "?",
        [step] if status == "ok" else [],
        tokens=TokenData([1], [2] * length, [1] * length, [0.0] * length),
        cost=Cost(5, length, seconds, seconds / 2),
        provenance=Provenance("scripted:test", version),
        status=status,
        failure=None if status == "ok" else "env_error: the database went away",
    )


@pytest.fixture
def episode():
    """episode(task, reward, ...) -> a `Trajectory` (see `make_episode`)."""
    return make_episode


@pytest.fixture
def clean() -> list[Trajectory]:
    """Groups of 4 with a reward spread, correct where rewarded, nothing cut off or failed."""
    return [
        make_episode(f"t{i}", float(j % 2), length=8 + j + i % 3, action=f"try {j} on t{i}")
        for i in range(12)
        for j in range(4)
    ]


@pytest.fixture
def write(tmp_path):
    """write(trajectories, name) -> the path of a JSONL file holding them."""

    def write(trajectories: list[Trajectory], name: str = "run") -> str:
        path = tmp_path / f"{name}.jsonl"
        write_jsonl(trajectories, path)
        return str(path)

    return write
