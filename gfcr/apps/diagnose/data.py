"""What `gfcr diagnose` reads: trajectory files, bench reports and training out_dirs, as `RunData`.

- `FILE.jsonl` (from `gfcr run`, `gfcr bench` or any writer of `gfcr.core.write_jsonl`): one run;
- a bench report directory (`results.json` + `trajectories/AGENT.jsonl`): one run per agent;
- a training out_dir (`metrics.jsonl`, with `config.json`, `replay.db` and `proposals.db` where
  the run has them): the per-step metrics, the config, the replay buffer's stored trajectories,
  and the provenance of the tasks its policy proposed (`[propose]`).

Groups are the trajectories of one run sharing an env and a task id (the samples of a prompt).

>>> import tempfile
>>> from gfcr.core import Trajectory, write_jsonl
>>> path = tempfile.mkdtemp() + "/run.jsonl"
>>> _ = write_jsonl([Trajectory("e", "a", "?"), Trajectory("e", "a", "?")], path)
>>> data = load_run([path])
>>> list(data.runs), [len(g) for g in data.groups().values()]
(['run'], [2])
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gfcr.core import Trajectory, read_jsonl
from gfcr.errors import DataError
from gfcr.proposals import ProvenanceRecord, ProvenanceStore

GroupKey = tuple[str, str, str]  # (run, env id, task id)


@dataclass
class StoredSample:
    """A trajectory kept in a replay buffer, with when it was stored (Unix seconds)."""

    trajectory: Trajectory
    stored_at: float


@dataclass
class RunData:
    """Everything diagnosed: trajectories by run, a training run's metrics, config and replay."""

    sources: list[str] = field(default_factory=list)
    runs: dict[str, list[Trajectory]] = field(default_factory=dict)
    metrics: list[dict[str, Any]] = field(default_factory=list)  # one dict per logged training step
    train_config: dict[str, Any] | None = None
    bench_results: dict[str, Any] | None = None
    replay: list[StoredSample] | None = None  # None: the input has no replay buffer
    proposals: list[ProvenanceRecord] | None = None  # None: the input has no proposals.db
    # env id -> the gym.make keyword sets it ran with (a suite may run one env with several)
    env_kwargs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # episode id -> the gym.make keywords it ran with, where the input records them (bench reports)
    episode_kwargs: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def trajectories(self) -> list[Trajectory]:
        return [t for run in self.runs.values() for t in run]

    @property
    def ok(self) -> list[Trajectory]:
        """The episodes that ran to their end (infrastructure failures left out)."""
        return [t for t in self.trajectories if t.status == "ok"]

    @property
    def training(self) -> bool:
        """Whether this is a training run (per-step metrics or a trainer config), whose levers are
        trainer settings; otherwise an evaluation (bench reports, trajectory files)."""
        return bool(self.metrics) or self.train_config is not None

    def only(self, run: str) -> RunData:
        """This input with the trajectories of `run` alone (one agent of a bench report)."""
        return replace(self, runs={run: self.runs[run]})

    def groups(self, min_size: int = 1) -> dict[GroupKey, list[Trajectory]]:
        """The samples of each prompt, per run (failed episodes left out), of at least `min_size`."""
        groups: dict[GroupKey, list[Trajectory]] = {}
        for run, trajectories in self.runs.items():
            for t in trajectories:
                if t.status == "ok":
                    groups.setdefault((run, t.env_id, t.task_id), []).append(t)
        return {key: g for key, g in groups.items() if len(g) >= min_size}

    def add_label(self, label: str, episode: str | None = None) -> None:
        """Record an env configuration the input ran (a bench's `config_label`), and which episode
        ran with it when that is known."""
        env_id, kwargs = parse_label(label)
        if kwargs not in self.env_kwargs.setdefault(env_id, []):
            self.env_kwargs[env_id].append(kwargs)
        if episode is not None:
            self.episode_kwargs[episode] = kwargs

    def steps(self, key: str) -> list[tuple[int, float]]:
        """(step, value) of a metric over the training steps that logged it."""
        return [(int(m["step"]), float(m[key])) for m in self.metrics if isinstance(m.get(key), int | float)]


def load_run(paths: Sequence[str | Path], env_kwargs: dict[str, Any] | None = None) -> RunData:
    """Read every input in `paths` into one `RunData`; an input of no known kind is an error.

    `env_kwargs` are the gym.make keywords of env ids whose inputs do not record them (trajectory
    files from `gfcr run -e ...`): bench reports and training runs record their own.
    """
    data = RunData()
    for raw in paths:
        path = Path(raw)
        data.sources.append(str(path))
        if path.is_file():
            _add_run(data, path.stem, path)
        elif (path / "results.json").is_file() and (path / "trajectories").is_dir():
            _load_bench(data, path)
        elif (path / "metrics.jsonl").is_file():
            _load_training(data, path)
        else:
            raise DataError(
                f"{path}: not a trajectory file, bench report or training out_dir; give a .jsonl from "
                "`gfcr run`/`gfcr bench`, a report directory (results.json + trajectories/) or a "
                "`gfcr train` out_dir (metrics.jsonl)"
            )
    if env_kwargs:
        for env_id in {t.env_id for t in data.trajectories}:
            data.env_kwargs.setdefault(env_id, [dict(env_kwargs)])
    return data


def _add_run(data: RunData, name: str, path: Path) -> None:
    unique = name
    while unique in data.runs:  # two inputs with one file name stay two runs
        unique += "'"
    data.runs[unique] = list(read_jsonl(path))


def _load_bench(data: RunData, root: Path) -> None:
    results = json.loads((root / "results.json").read_text(encoding="utf-8"))
    data.bench_results = results
    labels = {label for agent in results.get("agents", {}).values() for label in agent.get("entries", {})}
    for label in sorted(labels):
        data.add_label(label)
    for episode, label in results.get("labels", {}).items():
        data.add_label(label, episode)
    for agent, entry in results.get("agents", {}).items():
        path = root / entry.get("trajectories", "")
        if path.is_file():
            _add_run(data, agent, path)
    known = {str(root / e.get("trajectories", "")) for e in results.get("agents", {}).values()}
    for path in sorted((root / "trajectories").glob("*.jsonl")):  # files results.json does not name
        if str(path) not in known:
            _add_run(data, path.stem, path)


def _load_training(data: RunData, root: Path) -> None:
    try:
        from gfcr.trainers.logging import read_metrics  # only a training out_dir needs the trainer
    except ImportError as e:
        raise DataError(
            f"{root} is a training out_dir; reading it needs the trainer's extra: pip install -e "
            f"'.[hf,train]' ({e})"
        ) from e
    data.metrics = read_metrics(root)
    if (root / "config.json").is_file():
        data.train_config = json.loads((root / "config.json").read_text(encoding="utf-8"))
        env = data.train_config.get("env", {})
        data.env_kwargs.setdefault(env.get("id", ""), [env.get("kwargs", {})])
    if (root / "replay.db").is_file():
        data.replay = read_replay(root / "replay.db")
    if (root / "proposals.db").is_file():
        store = ProvenanceStore(root / "proposals.db")
        try:
            data.proposals = store.records()
        finally:
            store.close()
    for path in sorted(root.glob("*.jsonl")):
        if path.name not in ("metrics.jsonl", "sft_data.jsonl"):  # e.g. rollouts a user saved there
            _add_run(data, path.stem, path)


def parse_label(label: str) -> tuple[str, dict[str, Any]]:
    """The env id and keywords of a bench report's env configuration label (`config_label`).

    >>> parse_label('gfcr/Math-v0 split="AIME2024" tools=["calculator", "python"]')
    ('gfcr/Math-v0', {'split': 'AIME2024', 'tools': ['calculator', 'python']})
    """
    env_id, *pairs = re.split(r" (?=[A-Za-z_]\w*=)", label)
    kwargs = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        try:
            kwargs[key] = json.loads(value)
        except json.JSONDecodeError:
            kwargs[key] = value
    return env_id, kwargs


def read_replay(path: Path) -> list[StoredSample]:
    """The trajectories a replay buffer file holds, with their storage times."""
    from gfcr.replay import ReplayBuffer, ReplayConfig

    buffer = ReplayBuffer(ReplayConfig(url=str(path)))
    try:
        rows = buffer.state_dict()["rows"]
    finally:
        buffer.close()
    # images by hash, read from the images/ folder beside the file when a criterion looks at one
    return [
        StoredSample(Trajectory.from_json(row["data"], buffer.images), float(row["stored_at"]))
        for row in rows
    ]
