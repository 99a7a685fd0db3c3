"""`gfcr bench`: run agents on a suite (a name, a suite file or env ids); score them per env configuration.

Each agent's trajectories go to `REPORT/trajectories/AGENT.jsonl` as they finish, so a killed
bench resumes with `resume=True`; the scores and the report are built from those files.

>>> import tempfile
>>> config = BenchConfig(("gfcr/Math-v0",), ("scripted:oracle",), num_tasks=3, report=tempfile.mkdtemp(),
...                      env_kwargs={"split": "AIME2024"})
>>> [round(result.overall.pass_at_1, 2) for result in bench(config).agents]
[1.0]
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import gymnasium as gym

from gfcr.agents.runner import Runner, RunnerConfig
from gfcr.agents.runner.env_host import EnvConfig
from gfcr.agents.runner.specs import episodes_for_suite
from gfcr.apps.bench.metrics import Scores, score
from gfcr.apps.pretrained import converted_model
from gfcr.core import Trajectory
from gfcr.core.redact import redact
from gfcr.errors import ConfigError, UnknownNameError
from gfcr.registry import list_envs
from gfcr.suites import Suite, SuiteEntry, list_suites, load_suite, make_suite


@dataclass(frozen=True)
class BenchConfig:
    """What to bench: a suite name, a suite file (.toml) or env ids (`target`), agent specs, samples
    per task (`k`; a suite entry's own `k` or `seeds` win for its tasks)."""

    target: tuple[str, ...]
    agents: tuple[str, ...]
    k: int = 1
    num_tasks: int | None = None  # at most this many tasks per suite entry (evenly spread)
    env_kwargs: dict[str, Any] = field(default_factory=dict)  # for env ids given as the target
    report: str | Path | None = None  # report directory (None: reports/TARGET-TIME)
    resume: bool = False
    seed: int = 0
    runner: RunnerConfig = field(default_factory=RunnerConfig)

    def __post_init__(self) -> None:
        if not self.target or not self.agents:
            raise ConfigError("bench needs a suite (or env ids) and at least one --agent")
        if self.k < 1 or (self.num_tasks is not None and self.num_tasks < 1):
            raise ConfigError(f"k and num_tasks must be >= 1, got {self.k} and {self.num_tasks}")

        if self.report is None:  # fixed once, so every part of the report lands in one place
            name = _slug(self.target[0] if len(self.target) == 1 else "envs")
            object.__setattr__(self, "report", Path("reports") / f"{name}-{datetime.now():%Y%m%d-%H%M%S}")

    @property
    def report_dir(self) -> Path:
        return Path(self.report)  # type: ignore[arg-type]  # set in __post_init__


@dataclass
class AgentResult:
    """One agent's bench: scores overall and per env configuration, and where its episodes are."""

    agent: str
    overall: Scores
    entries: dict[str, Scores]
    trajectories: list[Trajectory]
    trajectories_path: Path
    seconds: float
    description: str = ""  # what the agent is (`describe_agent`)


@dataclass
class BenchResult:
    """Every agent's result on the suite; `labels` maps an episode id to its env configuration.

    `k` is the most samples any task got (the bench's -k, or more where a suite entry asks for it);
    `suite_version` and `fingerprint` identify the suite's work (`Suite.fingerprint`).
    """

    suite: str
    agents: list[AgentResult]
    labels: dict[str, str]
    k: int = 1
    suite_version: str = ""
    fingerprint: str = ""


def resolve_suite(
    target: tuple[str, ...], num_tasks: int | None = None, env_kwargs: dict | None = None
) -> Suite:
    """The suite named `target[0]` (a registered name or a .toml suite file), or a suite of the env ids
    in `target`; each entry capped at `num_tasks`."""
    if len(target) == 1 and (target[0].endswith(".toml") or Path(target[0]).is_file()):
        suite = load_suite(target[0])
    elif len(target) == 1 and target[0] in list_suites():
        suite = make_suite(target[0])
    else:
        for env_id in target:
            if env_id not in gym.registry:
                raise UnknownNameError("suite or env id", env_id, list_suites() + list_envs())
        entries = tuple(SuiteEntry(env_id, dict(env_kwargs or {})) for env_id in target)
        suite = Suite(",".join(target), "Env ids given on the command line.", entries)
    if num_tasks is None:
        return suite
    capped = tuple(
        replace(e, tasks=e.tasks[:num_tasks])
        if e.tasks is not None
        else replace(e, num_tasks=min(e.num_tasks or num_tasks, num_tasks))
        for e in suite.entries
    )
    return replace(suite, entries=capped)


def config_label(config: EnvConfig) -> str:
    """`gfcr/Math-v0 dataset=mmath tools=["calculator"]`: an env configuration, readable, with its
    credentials masked (reports are shared: `engine="postgresql://user:***@host/db"`)."""
    kwargs = redact(config.kwargs)
    return " ".join([config.env_id] + [f"{k}={json.dumps(v)}" for k, v in sorted(kwargs.items())])


def bench(
    config: BenchConfig, *, progress: bool = False, on_agent: Callable[[AgentResult], None] | None = None
) -> BenchResult:
    """Run every agent on the suite; returns their results (the report is written by `report.py`)."""
    from gfcr.agents import make_policy

    suite = resolve_suite(config.target, config.num_tasks, config.env_kwargs)
    specs = episodes_for_suite(suite, config.k, seed=config.seed)
    labels = {spec.id: config_label(spec.env) for spec in specs}
    k = max([config.k, *(spec.sample + 1 for spec in specs)])
    results = []
    for number, agent_spec in enumerate(config.agents, 1):
        policy = make_policy(agent_spec)
        description = describe_agent(policy)
        agent = redact(agent_spec)  # as the report names it: a spec's base URL may carry a key
        path = config.report_dir / "trajectories" / f"{_slug(agent)}.jsonl"
        which = f" (agent {number} of {len(config.agents)})" if len(config.agents) > 1 else ""
        run = Runner(policy, config.runner).run(
            specs, path, resume=config.resume, progress=f"{suite.name} · {agent}{which}" if progress else None
        )
        close = getattr(policy, "close", None)
        if callable(close):
            close()
        by_entry: dict[str, dict[str, list[Trajectory]]] = {}
        for trajectory in run.trajectories:
            label = labels[trajectory.id.split(".")[0]]
            by_entry.setdefault(label, {}).setdefault(trajectory.task_id, []).append(trajectory)
        overall = score(
            {(label, task): ts for label, tasks in by_entry.items() for task, ts in tasks.items()}, k
        )
        entries = {label: score(tasks, k) for label, tasks in by_entry.items()}
        result = AgentResult(agent, overall, entries, run.trajectories, path, run.seconds, description)
        results.append(result)
        if on_agent is not None:
            on_agent(result)
    return BenchResult(suite.name, results, labels, k, suite.version, suite.fingerprint())


def describe_agent(policy: object) -> str:
    """What an agent is, for the bench table: the policy's own `description`; for a local model
    (`hf:`), which model (a `gfcr pretrained` one by name), its dtype and device; else "".

    >>> from gfcr.agents import make_policy
    >>> describe_agent(make_policy("scripted:oracle"))
    "gold answers from each task's data: the verifiers' upper bound"
    """
    description = getattr(policy, "description", None)
    if isinstance(description, str):
        return description
    model = getattr(policy, "model", None)
    if not callable(getattr(model, "parameters", None)):
        return ""
    name = str(getattr(policy, "name", ""))
    pretrained = converted_model(name.removeprefix("hf:")) if name.startswith("hf:") else None
    if pretrained is not None:
        what = f"{pretrained.summary}, pretrained"
    else:
        parameters = sum(p.numel() for p in model.parameters())  # type: ignore[union-attr]
        kind = getattr(getattr(model, "config", None), "model_type", type(model).__name__)
        what = f"{kind}, {parameters / 1e6:.1f}M parameters"
    dtype = str(getattr(model, "dtype", "")).removeprefix("torch.")
    return f"{what}, {dtype} on {getattr(policy, 'device', '?')}"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")[:80] or "agent"
