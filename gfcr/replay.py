"""Replay: a persistent buffer of trajectories with their provenance, and AR3PO-style rescue.

Every stored trajectory keeps what off-policy use needs: the policy name and version, when it
was made and stored, the env, the verifier's signals and reward, and the token data with the
behaviour policy's logprobs (the whole `Trajectory` JSON), plus its refresh state: when a trainer
last recomputed its logprobs under its own policy, and that policy's version (`refresh`,
`refresh_of`). Storage goes through SQLAlchemy: a SQLite file by default, any SQLAlchemy URL
otherwise; each `store` is one committed transaction, so a killed process loses nothing that
`store` had returned from. A buffer written before the refresh columns existed opens as it is.

Rules: what is stored (`store_rule`: everything, or only correct work), what is retrieved
(`sample(rule=...)`: correct, recent or diverse; `draw` gives copies marked `replayed`), what is
evicted (`evict`: staleness in policy versions, age, and a cap per task). `rescue` is AR3PO's
response reuse (Zhang et al. 2025, "Improving Sampling Efficiency in RLVR through Adaptive
Rollout and Response Reuse"): a group where every sample failed gets a cached correct response
for the same prompt in place of one failure, so the group carries a signal.

The runner's Replay hook: `Runner(policy, replay=ReplayBuffer(...))` calls `store` on each
finished trajectory.

Images: a row refers to its trajectory's images by hash (as a JSONL line does), and their bytes
are kept once each in an `ImageStore` folder: `images/` beside a SQLite file (shared with the
run's JSONL files there), a temporary folder for an in-memory database, `ReplayConfig.images`
for a server database (PostgreSQL), which needs one to store episodes with images.
"""

from __future__ import annotations

import copy
import shutil
import tempfile
import time
import weakref
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    Float,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    delete,
    func,
    select,
)
from sqlalchemy.engine import Connection
from sqlalchemy.exc import SQLAlchemyError

from gfcr.core import ImageStore, Trajectory, solved
from gfcr.core.policy import version_number
from gfcr.errors import ConfigError, StorageError, UnknownNameError
from gfcr.filter.signals import response_length
from gfcr.storage import database_url, open_database

T = TypeVar("T")
STORE_RULES = ("all", "correct")
SAMPLE_RULES = ("correct", "recent", "diverse")
DIVERSE_POOL = 256  # newest correct candidates a diverse sample chooses among

metadata = MetaData()
table = Table(
    "replay_trajectories",
    metadata,
    Column("id", String(128), primary_key=True),
    Column("env_id", String(255), nullable=False),
    Column("task_id", String(255), nullable=False, index=True),
    Column("policy", String(255), nullable=False),
    Column("policy_version", String(255), nullable=False),
    Column("version_number", Integer, nullable=True),  # policy_version when it is an integer
    Column("created", String(64), nullable=False),  # provenance time (ISO 8601)
    Column("stored_at", Float, nullable=False, index=True),  # Unix seconds
    Column("reward", Float, nullable=False),
    Column("passed", Boolean, nullable=False, index=True),
    Column("signals", JSON, nullable=False),  # the verifier's signals φ of the last step
    Column("length", Integer, nullable=False),
    Column("data", Text, nullable=False),  # the trajectory as JSON (token data, behaviour logprobs)
    # refresh state, NULL until a trainer recomputes the sample's logprobs (added to older buffers)
    Column("refreshed_version", Integer, nullable=True),  # the policy version they were recomputed under
    Column("refreshed_at", Float, nullable=True),  # when (Unix seconds)
)


@dataclass(frozen=True)
class Refresh:
    """When a stored sample's logprobs were last recomputed, and under which policy version."""

    version: int
    at: float  # Unix seconds


def replayed_copy(trajectory: Trajectory) -> Trajectory:
    """A copy of a stored trajectory to train on again, marked with the signal `replayed` (its
    provenance still names the policy that made it, its token data that policy's logprobs)."""
    copied = copy.deepcopy(trajectory)
    if copied.steps:
        copied.steps[-1].signals["replayed"] = True
    return copied


@dataclass(frozen=True)
class ReplayConfig:
    """Where the buffer lives and its store and eviction rules."""

    url: str = "runs/replay.db"  # a SQLAlchemy URL, or a path for a SQLite file
    store_rule: str = "all"  # "all" | "correct": what `store` keeps
    success_at: float = 1.0  # a trajectory with at least this reward (`Trajectory.reward`) is correct
    max_per_task: int | None = None  # keep only the newest N per task
    max_age_s: float | None = None  # evict what was stored longer ago than this
    max_staleness: int | None = None  # evict what is more than N policy versions behind
    # folder of the stored trajectories' images (None: images/ beside a SQLite file, a temporary
    # folder for an in-memory one; a server database needs one to store episodes with images)
    images: str | None = None

    def __post_init__(self) -> None:
        if self.store_rule not in STORE_RULES:
            raise UnknownNameError("replay store rule", self.store_rule, STORE_RULES)
        for name in ("max_per_task", "max_age_s", "max_staleness"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ConfigError(f"{name} must be >= 0 (or None), got {value}")


class ReplayBuffer:
    """Trajectories kept across rollouts, persisted through SQLAlchemy.

    >>> from gfcr.core import Provenance, Step
    >>> buffer = ReplayBuffer(ReplayConfig(url="sqlite://"))
    >>> good = Trajectory("e", "q1", "?", [Step("42", "", 1.0, True, False, {"correct": True})],
    ...                   provenance=Provenance("p", "3"))
    >>> bad = Trajectory("e", "q1", "?", [Step("41", "", 0.0, True, False, {"correct": False})])
    >>> buffer.store(good); len(buffer)
    1
    >>> group, rescued = buffer.rescue([bad, copy.deepcopy(bad)])
    >>> rescued, [t.total_reward for t in group], group[-1].provenance.policy_version
    (True, [0.0, 1.0], '3')
    """

    def __init__(self, config: ReplayConfig | str | Path | None = None) -> None:
        if not isinstance(config, ReplayConfig):
            config = ReplayConfig() if config is None else ReplayConfig(url=str(config))
        self.config = config
        self.engine = open_database(config.url, metadata)
        self.images = self._image_store(config)

    def _image_store(self, config: ReplayConfig) -> ImageStore | None:
        """Where stored trajectories' images go (see the module docstring); None: nowhere yet."""
        if config.images is not None:
            return ImageStore(config.images)
        url = database_url(config.url)
        if url in ("sqlite://", "sqlite:///:memory:"):
            folder = tempfile.mkdtemp(prefix="gfcr-replay-images-")
            weakref.finalize(self, shutil.rmtree, folder, True)  # it lives as long as the database
            return ImageStore(folder)
        if url.startswith("sqlite:///"):
            return ImageStore(Path(url.removeprefix("sqlite:///")).parent / "images")
        return None

    # -- store -----------------------------------------------------------------------------------

    def store(self, trajectory: Trajectory) -> None:
        """Keep one finished trajectory (runner hook); committed when this returns."""
        self.store_many([trajectory])

    def store_many(self, trajectories: Iterable[Trajectory]) -> int:
        """Keep trajectories in one transaction; returns how many the store rule kept."""
        rows = [self._row(t) for t in trajectories if self._keeps(t)]
        if rows:

            def replace(conn: Connection) -> None:  # storing an id again replaces it, on any backend
                conn.execute(delete(table).where(table.c.id.in_([row["id"] for row in rows])))
                conn.execute(table.insert(), rows)

            self._write(replace)
        return len(rows)

    def _keeps(self, trajectory: Trajectory) -> bool:
        if trajectory.status != "ok":
            return False  # an infrastructure failure says nothing about the policy
        return self.config.store_rule == "all" or self._passed(trajectory)

    def _passed(self, trajectory: Trajectory) -> bool:
        return solved(trajectory.reward, self.config.success_at)  # the judged reward, as training saw it

    def _row(self, trajectory: Trajectory) -> dict[str, Any]:
        if images := trajectory.images:  # the bytes first: a stored row never refers to a missing image
            if self.images is None:
                raise ConfigError(
                    f"replay buffer {self.config.url!r} is a server database and trajectory {trajectory.id} "
                    "holds images: give ReplayConfig(images=FOLDER), a folder every reader of the buffer sees"
                )
            self.images.put_all(images)
        version = trajectory.provenance.policy_version
        return {
            "id": trajectory.id,
            "env_id": trajectory.env_id,
            "task_id": trajectory.task_id,
            "policy": trajectory.provenance.policy,
            "policy_version": version,
            "version_number": version_number(version),
            "created": trajectory.provenance.time,
            "stored_at": time.time(),
            "reward": trajectory.reward,
            "passed": self._passed(trajectory),
            "signals": dict(trajectory.signals),
            "length": response_length(trajectory),
            "data": trajectory.to_json(),
        }

    # -- retrieve --------------------------------------------------------------------------------

    def sample(
        self, task_id: str, n: int = 1, rule: str = "correct", *, exclude: Collection[str] = ()
    ) -> list[Trajectory]:
        """Up to `n` trajectories of `task_id`: the newest correct ones, the newest of any
        outcome ("recent"), or correct ones far apart from each other ("diverse"); none whose id
        is in `exclude` (e.g. the step's own fresh episodes, stored as they finished)."""
        if rule not in SAMPLE_RULES:
            raise UnknownNameError("replay sample rule", rule, SAMPLE_RULES)
        query = select(table.c.data).where(table.c.task_id == task_id)
        if exclude:
            query = query.where(table.c.id.not_in(list(exclude)))
        if rule != "recent":
            query = query.where(table.c.passed)
        limit = DIVERSE_POOL if rule == "diverse" else n
        query = query.order_by(table.c.stored_at.desc(), table.c.id).limit(limit)
        found = [
            Trajectory.from_json(data, self.images)
            for data in self._read(lambda c: c.execute(query).scalars().all())
        ]
        return _farthest_first(found, n) if rule == "diverse" else found

    def draw(
        self, task_id: str, n: int, rule: str = "correct", *, exclude: Collection[str] = ()
    ) -> list[Trajectory]:
        """`sample`'s trajectories as copies to train on again, each marked `replayed`.

        >>> from gfcr.core import Step
        >>> buffer = ReplayBuffer(ReplayConfig(url="sqlite://"))
        >>> buffer.store(Trajectory("e", "q1", "?", [Step("42", "", 1.0, True, False)], id="a"))
        >>> [t.signals["replayed"] for t in buffer.draw("q1", 2)], buffer.draw("q1", 2, exclude={"a"})
        ([True], [])
        """
        return [replayed_copy(t) for t in self.sample(task_id, n, rule, exclude=exclude)]

    def task_ids(self, *, passed: bool | None = None) -> list[str]:
        """Tasks with stored trajectories (only those with correct ones if `passed=True`)."""
        query = select(table.c.task_id).distinct()
        if passed is not None:
            query = query.where(table.c.passed == passed)
        return sorted(self._read(lambda c: c.execute(query).scalars().all()))

    def __len__(self) -> int:
        return int(self._read(lambda c: c.execute(select(func.count()).select_from(table)).scalar_one()))

    # -- use -------------------------------------------------------------------------------------

    def rescue(self, group: Sequence[Trajectory]) -> tuple[list[Trajectory], bool]:
        """AR3PO response reuse: if every sample of `group` failed and a correct response to its
        task is stored, it replaces the group's last sample (marked with the signal `replayed`;
        its provenance names the older policy, its token data keeps that policy's logprobs: the
        behaviour policy a trainer corrects for)."""
        group = list(group)
        if not group or any(self._passed(t) for t in group):
            return group, False
        cached = self.draw(group[0].task_id, 1, "correct", exclude={t.id for t in group})
        if not cached:
            return group, False
        return [*group[:-1], cached[0]], True

    # -- refresh ---------------------------------------------------------------------------------

    def refresh(self, trajectory_ids: Iterable[str], version: int, *, now: float | None = None) -> int:
        """Record that the stored samples `trajectory_ids` had their logprobs recomputed under policy
        `version` (a trainer's off-policy correction); returns how many rows it updated.

        >>> from gfcr.core import Step
        >>> buffer = ReplayBuffer(ReplayConfig(url="sqlite://"))
        >>> buffer.store(Trajectory("e", "q1", "?", [Step("42", "", 1.0, True, False)], id="a"))
        >>> buffer.refresh_of("a") is None, buffer.refresh(["a"], version=5, now=100.0)
        (True, 1)
        >>> buffer.refresh_of("a")
        Refresh(version=5, at=100.0)
        """
        ids, at = list(trajectory_ids), time.time() if now is None else now
        if not ids:
            return 0
        update = table.update().where(table.c.id.in_(ids))
        return self._write(
            lambda c: c.execute(update.values(refreshed_version=version, refreshed_at=at)).rowcount
        )

    def refresh_of(self, trajectory_id: str) -> Refresh | None:
        """The refresh state of a stored sample (None: never recomputed, or not stored)."""
        query = select(table.c.refreshed_version, table.c.refreshed_at).where(table.c.id == trajectory_id)
        row = self._read(lambda c: c.execute(query).first())
        if row is None or row.refreshed_version is None:
            return None
        return Refresh(int(row.refreshed_version), float(row.refreshed_at))

    # -- evict -----------------------------------------------------------------------------------

    def evict(self, *, current_version: int | None = None, now: float | None = None) -> int:
        """Apply the eviction rules; returns how many trajectories were removed. Staleness counts
        policy versions: what the policy that made a sample is behind `current_version` (a
        recomputed logprob does not make its tokens any fresher). Samples whose version is not a
        number are evicted by age and the cap per task only.

        >>> from gfcr.core import Provenance, Step
        >>> buffer = ReplayBuffer(ReplayConfig(url="sqlite://", max_staleness=2))
        >>> for v in range(5):
        ...     buffer.store(Trajectory("e", "q", "?", [Step("a", "", 1.0, True, False)], id=str(v),
        ...                             provenance=Provenance("p", str(v))))
        >>> buffer.evict(current_version=5), sorted(t.id for t in buffer.sample("q", 9))  # lags 5..1
        (3, ['3', '4'])
        """
        config, now = self.config, time.time() if now is None else now
        conditions = []
        if config.max_staleness is not None and current_version is not None:
            conditions.append(table.c.version_number < current_version - config.max_staleness)
        if config.max_age_s is not None:
            conditions.append(table.c.stored_at < now - config.max_age_s)

        def run(conn: Connection) -> int:
            removed = sum(conn.execute(delete(table).where(c)).rowcount for c in conditions)
            if config.max_per_task is not None:
                rank = func.row_number().over(
                    partition_by=table.c.task_id, order_by=(table.c.stored_at.desc(), table.c.id)
                )
                ranked = select(table.c.id, rank.label("rank")).subquery()
                old = select(ranked.c.id).where(ranked.c.rank > config.max_per_task)
                removed += conn.execute(delete(table).where(table.c.id.in_(old))).rowcount
            return removed

        return self._write(run)

    # -- state -----------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """Every stored row, provenance and storage times included, as plain data (a checkpoint's
        part): a buffer that loads it samples, rescues and evicts as this one would. Rows refer to
        images by hash; `images` names the folder holding them (copied by `load_state_dict`).

        >>> from gfcr.core import Step
        >>> buffer = ReplayBuffer(ReplayConfig(url="sqlite://"))
        >>> buffer.store(Trajectory("e", "q1", "?", [Step("42", "", 1.0, True, False)]))
        >>> copy_ = ReplayBuffer(ReplayConfig(url="sqlite://"))
        >>> copy_.load_state_dict(buffer.state_dict())
        >>> [t.id for t in copy_.sample("q1")] == [t.id for t in buffer.sample("q1")]
        True
        """
        query = select(table).order_by(table.c.stored_at, table.c.id)
        rows = self._read(lambda c: c.execute(query).mappings().all())
        # str(): SQLAlchemy's column names are a str subclass; the state holds plain data only
        rows_data = [{str(k): v for k, v in row.items()} for row in rows]
        return {"rows": rows_data, "images": str(self.images.root) if self.images else None}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Hold exactly the rows of `state` (what was stored is replaced), in one transaction; the
        images of another buffer's state are copied from its folder into this one's."""
        rows = [dict(row) for row in state["rows"]]
        if state.get("images") and self.images is not None:
            source = ImageStore(state["images"])
            for row in rows:  # each image read from the state's folder only where this one lacks it
                self.images.put_all(Trajectory.from_json(row["data"], source).images)

        def replace(conn: Connection) -> None:
            conn.execute(delete(table))
            if rows:
                conn.execute(table.insert(), rows)

        self._write(replace)

    def close(self) -> None:
        self.engine.dispose()

    def _write(self, work: Callable[[Connection], T]) -> T:
        try:
            with self.engine.begin() as conn:
                return work(conn)
        except SQLAlchemyError as e:
            raise StorageError(f"replay buffer {self.config.url!r}: write failed: {e}") from e

    def _read(self, work: Callable[[Connection], T]) -> T:
        try:
            with self.engine.connect() as conn:
                return work(conn)
        except SQLAlchemyError as e:
            raise StorageError(f"replay buffer {self.config.url!r}: read failed: {e}") from e


def _farthest_first(candidates: list[Trajectory], n: int) -> list[Trajectory]:
    """Greedy max-min diversity by Jaccard distance of the responses' word sets."""
    if len(candidates) <= n:
        return candidates
    words = [set(" ".join(s.action for s in t.steps).split()) for t in candidates]

    def distance(i: int, j: int) -> float:
        union = words[i] | words[j]
        return 1.0 - len(words[i] & words[j]) / len(union) if union else 0.0

    chosen = [0]  # the newest first
    nearest = [distance(0, j) for j in range(len(candidates))]
    while len(chosen) < n:
        best = max((j for j in range(len(candidates)) if j not in chosen), key=lambda j: nearest[j])
        chosen.append(best)
        nearest = [min(nearest[j], distance(best, j)) for j in range(len(candidates))]
    return [candidates[i] for i in chosen]
