"""`Runner`: many episodes over many envs at once, with continuous batching of policy calls.

One event loop drives `concurrency` episodes, and resets `prefetch` more ahead so that a freed
slot is refilled at once. Each waits on the policy through a shared `Batcher` (a batch goes out
as soon as every active episode waits, or a straggler has held it up for a tenth of a batch's
time) and steps its env in an env pool off the loop (threads, processes or Ray actors).
Per-episode limits: turns, completion tokens, wall time. A failing, hanging or crashing env or
policy call fails that episode with a recorded reason (retried first when the failure is of a
kind that may pass); the run goes on. But an env server that fails `max_consecutive_failures`
episodes in a row is taken out of service (`Outages`) and its episodes run again on the other
servers; when there is no other, or the policy fails that many batches in a row, the run stops
early with `RunStoppedError` naming it. Trajectories are written to JSONL as they finish
(`TrajectoryWriter`), and `resume=True` skips the episodes a killed or stopped run already wrote.

>>> from gfcr.agents import OraclePolicy, episodes_for_env
>>> runner = Runner(OraclePolicy(), RunnerConfig(concurrency=4))
>>> result = runner.run(episodes_for_env("gfcr/Math-v0", 8, kwargs={"split": "AIME2024"}))
>>> result.episodes, result.solved, result.failed
(8, 8, 0)
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections import Counter, deque
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path

from gfcr.agents.runner.batcher import Batcher
from gfcr.agents.runner.busy import BusyClock
from gfcr.agents.runner.env_pools import NODE_LOST, WORKER_LOST, EnvPool, ProcessEnvPool, ThreadEnvPool
from gfcr.agents.runner.env_servers import EnvServers
from gfcr.agents.runner.episode import Episode, StepResult, episode_solved
from gfcr.agents.runner.outages import Outages
from gfcr.agents.runner.progress import RunProgress
from gfcr.agents.runner.specs import EpisodeSpec, warn_on_step_budgets
from gfcr.agents.runner.writer import TrajectoryWriter
from gfcr.core import Action, Provenance, Trajectory
from gfcr.core.config import setting
from gfcr.core.hooks import Controller, Decision, ReplaySink, SignalReader, branch_id
from gfcr.core.policy import Policy, SamplingParams, check_policy
from gfcr.errors import ConfigError, EpisodeError, RunStoppedError

logger = logging.getLogger(__name__)
# Failures charged to the env server an episode ran on, not to the episode (see `Outages`).
SERVER_FAILURES = ("env timeout", "env error", "env server lost")
POLICY_FAILURES = ("policy error", "policy timeout", "policy unavailable")


@dataclass(frozen=True)
class RunnerConfig:
    """How the runner runs; every limit is per episode unless it says otherwise.

    Each field declares its help text (`gfcr.core.config.setting`): `gfcr run` and `gfcr bench`
    offer every setting as an option and the trainer's `[rollout]` table as a key, with the
    sampling settings flat beside the others (`--max-tokens`, `max_tokens = 256`).

    >>> from gfcr.core.config import from_dict
    >>> from_dict(RunnerConfig, {"concurrency": 8, "max_tokens": 256}).sampling.max_tokens
    256
    """

    concurrency: int = setting(64, "Episodes in flight at once (each waiting on the policy or its env).")
    prefetch: int | None = setting(
        None, "Episodes reset ahead, ready to take a freed slot (default: concurrency / 4)."
    )
    max_batch_size: int | None = setting(None, "Requests per policy batch (default: concurrency).")
    batch_timeout_s: float | None = setting(
        None, "Longest a request waits for stragglers, in seconds (default: adaptive)."
    )
    # n and seed are the runner's: one completion per turn, sampled with the episode's own seed.
    sampling: SamplingParams = setting(
        default_factory=SamplingParams,
        help="How each policy turn samples.",
        flatten=True,
        exclude=("n", "seed"),
    )
    max_turns: int | None = setting(None, "Policy turns per episode before truncation (default: the env's).")
    max_episode_tokens: int | None = setting(None, "Completion tokens per episode before truncation.")
    episode_timeout_s: float | None = setting(None, "Wall seconds before an episode fails.")
    env_timeout_s: float = setting(
        300.0, "Wall seconds for one env reset or step, past which it fails (keep it over twice step_time_s)."
    )
    policy_timeout_s: float = setting(900.0, "Wall seconds for one policy batch.")
    env_workers: str = setting(
        "thread", "Where env steps run: thread, or process (CPU-heavy or crash-prone envs)."
    )
    num_env_workers: int = setting(8, "Env threads or processes (Ray actors with backend ray).")
    backend: str = setting("local", "local, or ray (env workers as Ray actors).")
    retries: int = setting(
        1, "New attempts for an episode whose failure may pass (lost worker, dead server)."
    )
    max_consecutive_failures: int = setting(
        5,
        "Failures in a row of one env server (timeouts, errors) or of the policy (batches) before the "
        "runner stops using it: its episodes go to other servers, or the run stops early (resume it).",
    )
    env_urls: tuple[str, ...] = setting(
        (),
        "Env servers (`gfcr serve-env`) to spread episodes over, round-robin; other envs run here.",
    )
    flush_every: int = setting(32, "Trajectories per JSONL write.")
    flush_interval_s: float = setting(2.0, "Or a JSONL write this often, whichever comes first.")
    progress_interval_s: float = setting(
        30.0, "Seconds between plain progress lines where stderr is no terminal (0: only the last)."
    )

    def __post_init__(self) -> None:
        positive = {
            "concurrency": self.concurrency,
            "num_env_workers": self.num_env_workers,
            "flush_every": self.flush_every,
            "max_consecutive_failures": self.max_consecutive_failures,
            "max_batch_size": self.max_batch_size or 1,
            "max_turns": self.max_turns or 1,
            "max_episode_tokens": self.max_episode_tokens or 1,
        }
        for name, value in positive.items():
            if value < 1:
                raise ConfigError(f"{name} must be >= 1, got {value}")
        if self.progress_interval_s < 0:
            raise ConfigError(f"progress_interval_s must be >= 0, got {self.progress_interval_s}")
        for name in ("env_timeout_s", "policy_timeout_s", "episode_timeout_s"):
            if (value := getattr(self, name)) is not None and value <= 0:
                raise ConfigError(f"{name} must be > 0, got {value}")
        if self.env_workers not in ("thread", "process"):
            raise ConfigError(f"env_workers must be 'thread' or 'process', got {self.env_workers!r}")
        if self.backend not in ("local", "ray"):
            raise ConfigError(f"backend must be 'local' or 'ray', got {self.backend!r}")
        if isinstance(self.env_urls, str):
            raise ConfigError(
                f"env_urls must be a list, got the string {self.env_urls!r}: write [{self.env_urls!r}]"
            )
        if self.env_urls and (self.backend, self.env_workers) != ("local", "thread"):
            raise ConfigError(
                "env_urls sends env calls to servers from threads: use backend 'local', env_workers 'thread' "
                "(the servers are the processes; start them on a cluster with Ray if needed)"
            )
        if self.retries < 0 or (self.batch_timeout_s or 0) < 0 or (self.prefetch or 0) < 0:
            raise ConfigError(
                "retries, batch_timeout_s and prefetch must be >= 0, "
                f"got {self.retries}, {self.batch_timeout_s}, {self.prefetch}"
            )


@dataclass
class RunResult:
    """What a run produced: its trajectories (with those a resumed run found written) and timings."""

    trajectories: list[Trajectory]
    seconds: float = 0.0
    policy_busy_s: float = 0.0  # wall seconds with a policy batch in flight
    env_busy_s: float = 0.0  # wall seconds with an env call in flight (reset, step, a branch's replay)
    policy_batches: int = 0
    resumed: int = 0  # trajectories already in the file, not run again
    lost: dict[str, str] = field(default_factory=dict)  # env servers, Ray nodes lost mid-run -> what happened

    @property
    def episodes(self) -> int:
        return len(self.trajectories)

    @property
    def solved(self) -> int:
        return sum(episode_solved(t) for t in self.trajectories)

    @property
    def failed(self) -> int:
        return sum(t.status == "failed" for t in self.trajectories)

    @property
    def mean_reward(self) -> float:
        return sum(t.total_reward for t in self.trajectories) / max(len(self.trajectories), 1)


@dataclass
class _Work:
    """An episode to run: its spec, the id its trajectory gets, and (for a branch) its prefix."""

    spec: EpisodeSpec
    id: str
    attempt: int = 0
    prefix: Episode | None = None


@dataclass
class _Outcome:
    """An attempt's end: its trajectory, why it failed (None if it did not) and where its env ran."""

    work: _Work
    trajectory: Trajectory
    error: EpisodeError | None
    place: str | None  # the env server, if any (`EnvPool.where`)


class Runner:
    """Runs episodes of `policy`; GFCR hooks: `controller` (Control), `filters`, `replay`."""

    def __init__(
        self,
        policy: Policy,
        config: RunnerConfig | None = None,
        *,
        controller: Controller | None = None,
        filters: Sequence[SignalReader] = (),
        replay: ReplaySink | None = None,
    ) -> None:
        check_policy(policy)  # once, here: not one traceback per episode
        self.policy = policy
        self.config = config or RunnerConfig()
        self.controller = controller or Controller()
        self.filters = tuple(filters)
        self.replay = replay

    def run(
        self,
        episodes: Iterable[EpisodeSpec],
        out: str | Path | None = None,
        *,
        resume: bool = False,
        progress: str | None = None,
        on_episode: Callable[[Trajectory], None] | None = None,
    ) -> RunResult:
        """Run `episodes` to their end; see `arun`."""
        return asyncio.run(self.arun(episodes, out, resume=resume, progress=progress, on_episode=on_episode))

    async def arun(
        self,
        episodes: Iterable[EpisodeSpec],
        out: str | Path | None = None,
        *,
        resume: bool = False,
        progress: str | None = None,
        on_episode: Callable[[Trajectory], None] | None = None,
    ) -> RunResult:
        """Run `episodes`; write trajectories to `out` (JSONL) as they finish.

        `resume=True` keeps `out` and skips the episodes it holds; `progress` is the description
        of a live progress bar (none if None); `on_episode` sees every finished trajectory.
        Raises `RunStoppedError` when an env server with no other to take its place, or the
        policy, fails `max_consecutive_failures` times in a row (what was written stays).
        """
        specs = self.controller.schedule(list(episodes))
        warn_on_step_budgets(specs, self.config.env_timeout_s)
        writer = (
            TrajectoryWriter(
                out,
                resume=resume,
                flush_every=self.config.flush_every,
                flush_interval_s=self.config.flush_interval_s,
            )
            if out is not None
            else None
        )
        wanted = {spec.id for spec in specs}
        previous = [t for t in writer.previous if t.id.split(".")[0] in wanted] if writer else []
        done_ids = writer.done if writer else set()
        queue = deque(_Work(spec, spec.id) for spec in specs if spec.id not in done_ids)
        result = RunResult(list(previous), resumed=len(previous))
        started = time.perf_counter()
        run = _Run(self, queue, self._make_pool())
        total = len(queue) + len(previous)
        interval_s = self.config.progress_interval_s
        with (
            RunProgress(progress, total, interval_s=interval_s)
            if progress is not None
            else nullcontext() as bar
        ):
            for trajectory in previous:
                if bar is not None:
                    bar.advance(trajectory, resumed=True)
            await self._collect(run, result, writer, bar, on_episode)
        result.seconds = time.perf_counter() - started
        result.policy_busy_s, result.policy_batches = run.batcher.clock.busy_s, run.batcher.batches
        result.env_busy_s = run.env_clock.busy_s
        result.lost = {**run.lost, **run.pool.lost}
        if run.stopped is not None:
            done = len(result.trajectories)
            kept = f", in {out}" if out is not None else ""
            raise RunStoppedError(
                f"the run stopped early: {run.stopped}. {done} of {total} episodes are done{kept}; "
                f"fix the cause, then run again with resume=True (--resume) to finish the other "
                f"{total - done}"
            )
        return result

    async def _collect(
        self,
        run: _Run,
        result: RunResult,
        writer: TrajectoryWriter | None,
        bar: RunProgress | None,
        on_episode: Callable[[Trajectory], None] | None,
    ) -> None:
        """Take each trajectory as it finishes: result, file, Replay, progress bar, callback."""
        try:
            async for trajectory in run.trajectories():
                result.trajectories.append(trajectory)
                if writer is not None:
                    writer.add(trajectory)
                if self.replay is not None and trajectory.status == "ok":
                    self.replay.store(trajectory)
                if bar is not None:
                    bar.advance(trajectory)
                if on_episode is not None:
                    on_episode(trajectory)
        finally:
            if writer is not None:
                writer.flush()
            await run.close()

    def _make_pool(self) -> EnvPool:
        config = self.config
        if config.backend == "ray":
            from gfcr.agents.runner.ray_backend import RayEnvPool

            return RayEnvPool(config.num_env_workers, config.env_timeout_s)
        if config.env_workers == "process":
            return ProcessEnvPool(config.num_env_workers, config.env_timeout_s)
        servers = EnvServers.discover(config.env_urls) if config.env_urls else None
        return ThreadEnvPool(config.num_env_workers, config.env_timeout_s, servers)


class _Run:
    """The state of one `arun`: the work queue, the env pool, the batcher and live episodes."""

    def __init__(self, runner: Runner, queue: deque[_Work], pool: EnvPool) -> None:
        self.runner, self.config, self.queue, self.pool = runner, runner.config, queue, pool
        # Where live episodes are: starting (reset, branch replay) -> ready for a slot -> active, that is
        # holding one of the `concurrency` slots and either waiting on the policy or stepping the env.
        self.starting = self.ready_for_slot = self.active = self.stepping = 0
        self.slots = asyncio.Semaphore(self.config.concurrency)
        prefetch = self.config.concurrency // 4 if self.config.prefetch is None else self.config.prefetch
        self.max_live = self.config.concurrency + prefetch
        self.batcher = Batcher(
            runner.policy,
            max_batch_size=self.config.max_batch_size or self.config.concurrency,
            batch_timeout_s=self.config.batch_timeout_s,
            timeout_s=self.config.policy_timeout_s,
            ready=self._all_waiting,
        )
        self.env_clock = BusyClock()  # env calls in flight: resets, steps, branches' replays
        self.outages: Outages[_Outcome] = Outages(self.config.max_consecutive_failures)
        self.lost: dict[str, str] = {}  # env servers taken out of service -> why
        self.stopped: str | None = None  # why the run stopped early
        # Each attempt has its own key in the pool: a hung call of an earlier one finishing late
        # must not take the env of the episode's next attempt.
        self._attempts = itertools.count()

    async def trajectories(self) -> AsyncIterator[Trajectory]:
        """Run the queue, `concurrency` at a time (and `prefetch` more resetting ahead); yield each
        trajectory as its episode ends, until all are done or the run stops early (`stopped`)."""
        running: set[asyncio.Task[_Outcome]] = set()
        try:
            while self.stopped is None and (self.queue or running or self.outages.held):
                if not (self.queue or running):  # only failures held by their servers are left
                    for outcome in self.outages.release():
                        for trajectory in self._settle(outcome):
                            yield trajectory
                    continue
                while self.queue and len(running) < self.max_live:
                    self.starting += 1
                    running.add(asyncio.create_task(self._attempt(self.queue.popleft())))
                finished, running = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                for task in finished:
                    for trajectory in self._finish(task.result()):
                        yield trajectory
        finally:  # stopped early: the episodes still in flight are dropped, never written
            for task in running:
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)

    def _finish(self, outcome: _Outcome) -> list[Trajectory]:
        """Charge a failure to the env server it happened on, or credit a success to it; then settle."""
        error, place = outcome.error, outcome.place
        if place is None or (error is not None and error.reason not in SERVER_FAILURES):
            return self._settle(outcome)
        if error is None:  # what the server held back were failures of their own episodes
            return [t for held in (*self.outages.succeed(place), outcome) for t in self._settle(held)]
        moved = self.outages.fail(place, outcome)
        if moved is None:
            return []
        in_a_row = f"{self.outages.limit} failures in a row (last: {_headline(error)})"
        if place not in self.lost:
            self.pool.exclude(place)
            self.lost[place] = f"out of service after {in_a_row}"
            logger.warning("env server %s is %s", place, self.lost[place])
        for held in moved:
            if not self.pool.can_run(held.work.spec.env):
                env_id = held.work.spec.env.env_id
                return self._stop(f"env server {place} had {in_a_row}, and no other server serves {env_id}")
            self.queue.appendleft(held.work)  # the server's failure, not the episode's: run it elsewhere
        return []

    def _settle(self, outcome: _Outcome) -> list[Trajectory]:
        """The trajectory to yield, or the attempt run again (a failure that may pass), or the run stopped."""
        work, error = outcome.work, outcome.error
        if error is None:
            return [outcome.trajectory]
        failed = self.batcher.failed_in_a_row
        if error.reason in POLICY_FAILURES and failed >= self.config.max_consecutive_failures:
            policy = self.runner.policy.name
            return self._stop(f"policy {policy} failed {failed} batches in a row (last: {_headline(error)})")
        if error.reason in (WORKER_LOST, NODE_LOST):  # not its own failure: run it again
            self.queue.appendleft(work)
        elif error.retryable and work.attempt < self.config.retries:
            logger.info("retrying episode %s after %s", work.id, error)
            self.queue.appendleft(replace(work, attempt=work.attempt + 1))
        else:
            return [outcome.trajectory]
        return []

    def _stop(self, reason: str) -> list[Trajectory]:
        if self.stopped is None:
            logger.error("stopping the run: %s", reason)
            self.stopped = reason
        return []

    def _all_waiting(self) -> bool:
        """No active episode is stepping its env, and no free slot is about to be taken: send the batch.

        Episodes resetting ahead (prefetch) while every slot is taken do not hold the batch back.
        """
        free = self.active < self.config.concurrency
        refilling = free and (self.ready_for_slot or self.starting or self.queue)
        return self.stepping == 0 and not refilling

    async def close(self) -> None:
        await self.batcher.close()
        await self.pool.close()

    async def _attempt(self, work: _Work) -> _Outcome:
        """One attempt at an episode; failures come back as a failed trajectory and the error."""
        spec = work.spec
        key = f"{work.id}#{next(self._attempts)}"  # the attempt's envs in the pool
        policy = self.runner.policy
        holder = [
            Trajectory(
                spec.env.env_id,
                spec.task_id or "",
                "",
                id=work.id,
                provenance=Provenance(policy.name, policy.version, spec.seed),
            )
        ]
        error: EpisodeError | None = None
        started = time.perf_counter()
        try:
            await self._episode(work, key, holder, started)
        except TimeoutError:
            error = EpisodeError("episode timeout", f"over {self.config.episode_timeout_s} s of wall time")
        except EpisodeError as e:
            error = e
        finally:  # an env that failed or may still be busy in a hung call is not reused
            place = self.pool.where(key)
            await self.pool.release(key, reuse=error is None)
            self.batcher.poke()
        if error is not None:
            holder[0].status, holder[0].failure = "failed", str(error)
        begun = work.prefix.started if work.prefix is not None else started  # a branch: its prefix too
        holder[0].cost.wall_s = time.perf_counter() - begun
        return _Outcome(work, holder[0], error, place)

    async def _episode(self, work: _Work, key: str, holder: list[Trajectory], started: float) -> None:
        """Reset (ahead of time, if prefetched), take a slot, then play the episode to its end.

        The reset (and a branch's replay of its prefix) counts as env seconds, as in `rollout`.
        """
        spec = work.spec
        try:
            with self.env_clock:
                reset = await self.pool.reset(key, spec.env, spec.seed, spec.reset_options())
            if work.prefix is not None:  # a branch plays a copy: a retried attempt starts it unplayed
                episode = work.prefix.branch(work.id)
            else:
                episode = Episode(
                    self.runner.policy,
                    spec.env.env_id,
                    reset,
                    seed=spec.seed,
                    trajectory_id=work.id,
                    started=started,
                )
            holder[0] = episode.trajectory
            for action in episode.actions:  # a branch: bring the fresh env to the prefix's state
                with self.env_clock:
                    await self.pool.step(key, action)
            episode.trajectory.cost.env_s += time.perf_counter() - started
        finally:
            self.starting -= 1
        self.ready_for_slot += 1
        try:
            await self.slots.acquire()
        finally:
            self.ready_for_slot -= 1
        self.active += 1
        try:
            async with asyncio.timeout(self.config.episode_timeout_s):
                await self._play(work, key, episode)
        finally:
            self.active -= 1
            self.slots.release()
            self.batcher.poke()

    async def _play(self, work: _Work, key: str, episode: Episode) -> None:
        config = self.config
        sampling = work.spec.sampling_params(config.sampling)  # Control may set it per episode
        if sampling.seed is None:
            sampling = replace(sampling, seed=work.spec.seed)
        while not episode.done:
            turn_sampling = sampling
            if config.max_episode_tokens is not None:
                budget = config.max_episode_tokens - episode.completion_tokens
                turn_sampling = replace(sampling, max_tokens=max(1, min(sampling.max_tokens, budget)))
            # charged its share of the batch, so the episodes' policy seconds sum to the policy's
            completions, policy_s = await self.batcher.submit_timed(episode.request(turn_sampling))
            completion = completions[0]
            if completion.finish_reason == "interrupted":  # new weights were pushed: the turn goes on
                episode.interrupted(completion, policy_s=policy_s)
                continue
            started = time.perf_counter()
            result = await self._step(key, episode.action(completion))
            episode.record(completion, result, policy_s=policy_s, env_s=time.perf_counter() - started)
            self._after_step(work, episode)

    def _after_step(self, work: _Work, episode: Episode) -> None:
        """Filter signals, runner limits, then Control's decision (branches inside the turn just
        taken even when it ended the episode)."""
        trajectory, config = episode.trajectory, self.config
        for reader in self.runner.filters:
            try:
                reader.on_step(trajectory, trajectory.steps[-1])
            except Exception as e:  # a filter's bug fails this episode, not the run
                raise EpisodeError("filter error", f"{type(reader).__name__}: {type(e).__name__}: {e}") from e
        over_turns = config.max_turns is not None and len(trajectory.steps) >= config.max_turns
        over_tokens = (
            config.max_episode_tokens is not None and episode.completion_tokens >= config.max_episode_tokens
        )
        if not episode.done and (over_turns or over_tokens):
            episode.truncate()
        decision = self.runner.controller.after_step(trajectory)
        self.queue.extendleft(self._branches(work, episode, decision))
        if decision.stop and not episode.done:
            episode.truncate()

    def _branches(self, work: _Work, episode: Episode, decision: Decision) -> list[_Work]:
        """The branches Control asked for: inside the turn just taken, then after it (none after
        the last). All are made before any is queued: a bad offset fails the episode, no child."""
        turn, numbers = len(episode.trajectory.steps), Counter[int]()
        branches = []
        for offset in decision.branch_tokens:
            child = branch_id(work.id, turn, numbers[offset], offset)
            numbers[offset] += 1
            branches.append(_Work(work.spec, child, prefix=episode.branch_tokens(child, offset)))
        for number in range(0 if episode.done else decision.branches):
            child = branch_id(work.id, turn, number)
            branches.append(_Work(work.spec, child, prefix=episode.branch(child)))
        return branches

    async def _step(self, key: str, action: str | Action) -> StepResult:
        self.stepping += 1
        try:
            with self.env_clock:
                return await self.pool.step(key, action)
        finally:
            self.stepping -= 1
            self.batcher.poke()


def _headline(error: EpisodeError) -> str:
    """An error's first line (a failure record carries a traceback after it)."""
    return str(error).splitlines()[0]
