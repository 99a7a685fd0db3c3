"""`gfcr compare`: per-task differences between runs or agents, with paired significance.

Each input is a bench report directory (every agent in it is a run) or a trajectory JSONL file
(one run). Episodes are paired by their trajectory id, which is the hash of the episode's env
configuration, task id, seed and sample number (`gfcr.core.episode.EpisodeSpec.id`): two runs of
the same suite with the same seeds hold the same ids. Episodes that infrastructure failed in
either run are left out of the pairs (they are no result of either agent) and counted.

For the difference in pass@1 between run B and run A (the first input, the baseline):

- a paired bootstrap 95% interval: tasks are resampled with replacement (a fixed seed, so the
  interval is reproducible) and the mean per-task difference recomputed (Efron & Tibshirani 1993,
  "An Introduction to the Bootstrap", §16.4; resampling tasks keeps a task's samples together);
- McNemar's exact test over paired episodes (McNemar 1947): of the `b` pairs A solved and B did not
  and the `c` pairs B solved and A did not, under "no difference" each discordant pair goes either
  way with chance 1/2, so p = min(1, 2 · P(X ≤ min(b, c))) with X ~ Binomial(b + c, 1/2). The test
  takes pairs as independent: with k > 1 samples of a task they are not quite (a hard task is hard
  for every sample), so p is then optimistic and the bootstrap, which resamples whole tasks, is the
  one to read.

>>> round(mcnemar_exact(1, 9), 6)  # 2 · (C(10,0) + C(10,1)) / 2^10 = 22 / 1024
0.021484
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from math import comb
from pathlib import Path
from typing import Any

import numpy as np

from gfcr.agents.runner.episode import episode_solved
from gfcr.core import Trajectory, read_jsonl
from gfcr.errors import ConfigError

BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 0
ALPHA = 0.05


@dataclass
class Run:
    """One agent's episodes: by trajectory id, with each episode's env configuration label."""

    name: str  # the agent, prefixed with its input where two inputs hold the same agent
    trajectories: dict[str, Trajectory]
    labels: dict[str, str] = field(default_factory=dict)  # trajectory id -> env configuration
    source: str = ""
    suite: str = ""
    suite_fingerprint: str = ""
    agent: str = ""  # the policy the run is of; `name` when not given
    input: str = ""  # what tells its input (report folder or file) apart from the other inputs

    def __post_init__(self) -> None:
        self.agent = self.agent or self.name

    def label(self, trajectory: Trajectory) -> str:
        return self.labels.get(trajectory.id, trajectory.env_id)

    def leaderboard_row(self) -> dict[str, Any]:
        """This run's own scores over all its episodes (not only those paired with another run)."""
        episodes = list(self.trajectories.values())
        n = max(len(episodes), 1)
        by_task: dict[tuple[str, str], list[bool]] = defaultdict(list)
        for t in episodes:
            by_task[(self.label(t), t.task_id)].append(episode_solved(t))
        return {
            "run": self.name,
            "source": self.source,
            "suite": self.suite,
            "suite_fingerprint": self.suite_fingerprint,
            "episodes": len(episodes),
            "tasks": len(by_task),
            "pass_at_1": _mean([_mean(samples) for samples in by_task.values()]),
            "mean_reward": sum(t.total_reward for t in episodes) / n,
            "failed": sum(t.status == "failed" for t in episodes),
            "mean_tokens_out": sum(t.cost.tokens_out for t in episodes) / n,
            "policy_s_per_episode": sum(t.cost.policy_s for t in episodes) / n,
            "env_s_per_episode": sum(t.cost.env_s for t in episodes) / n,
        }


@dataclass
class TaskDifference:
    """One task whose paired samples scored differently in the two runs."""

    label: str
    task_id: str
    solved_a: int
    solved_b: int
    samples: int
    ids: list[str]  # the paired trajectory ids of the task, for the side-by-side view


@dataclass
class Comparison:
    """Run `b` against run `a` over their paired episodes."""

    a: str
    b: str
    paired_tasks: int
    paired_episodes: int
    left_out_failed: int  # pairs with an infrastructure failure in either run
    unpaired: tuple[int, int]  # episodes of a, of b, that the other run does not hold
    pass_at_1_a: float
    pass_at_1_b: float
    difference: float  # pass@1 of b minus pass@1 of a
    ci95: tuple[float, float]  # paired bootstrap interval of `difference`
    b_only_a: int  # pairs solved by a and not b (McNemar's b)
    c_only_b: int  # pairs solved by b and not a (McNemar's c)
    p_value: float  # McNemar's exact test
    by_env: dict[str, dict[str, Any]]
    tasks: list[TaskDifference]

    @property
    def significant(self) -> bool:
        """p < 0.05 and the interval excludes 0: the runs differ beyond chance."""
        return self.p_value < ALPHA and not (self.ci95[0] <= 0.0 <= self.ci95[1])

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {
            "significant": self.significant,
            "ci95": list(self.ci95),
            "unpaired": list(self.unpaired),
        }


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for `b` and `c` discordant pairs (1.0 when there are none).

    >>> mcnemar_exact(0, 0), mcnemar_exact(5, 5), round(mcnemar_exact(0, 10), 5)
    (1.0, 1.0, 0.00195)
    """
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(comb(n, i) for i in range(min(b, c) + 1)) / 2**n  # P(X <= min(b, c)), X ~ Bin(n, 1/2)
    return min(1.0, 2.0 * tail)


def bootstrap_ci(
    differences: Sequence[float], *, resamples: int = BOOTSTRAP_RESAMPLES
) -> tuple[float, float]:
    """The 95% percentile interval of the mean of `differences` (one per task), resampling tasks.

    >>> bootstrap_ci([0.0] * 20)
    (0.0, 0.0)
    """
    if not differences:
        return (0.0, 0.0)
    values = np.asarray(differences, dtype=float)  # (T,)
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    means = values[rng.integers(0, len(values), size=(resamples, len(values)))].mean(axis=1)  # (R,)
    low, high = np.quantile(means, [ALPHA / 2, 1 - ALPHA / 2])
    return (float(low), float(high))


def compare(a: Run, b: Run) -> Comparison:
    """Pair the episodes of `a` and `b` by trajectory id and compare their pass@1."""
    common = [i for i in a.trajectories if i in b.trajectories]
    if not common:
        raise ConfigError(
            f"{a.name} and {b.name} have no episode in common: compare runs of the same suite or env with "
            "the same seeds (episodes pair by env configuration, task, seed and sample)"
        )
    pairs = [(a.trajectories[i], b.trajectories[i]) for i in common]
    usable = [(x, y) for x, y in pairs if x.status != "failed" and y.status != "failed"]
    by_task: dict[tuple[str, str], list[tuple[Trajectory, Trajectory]]] = defaultdict(list)
    for x, y in usable:
        by_task[(a.label(x), x.task_id)].append((x, y))
    overall = _scores(list(by_task.items()))
    by_label: dict[str, list] = defaultdict(list)
    for (label, task_id), samples in by_task.items():
        by_label[label].append(((label, task_id), samples))
    return Comparison(
        a.name,
        b.name,
        paired_tasks=len(by_task),
        paired_episodes=len(usable),
        left_out_failed=len(pairs) - len(usable),
        unpaired=(len(a.trajectories) - len(common), len(b.trajectories) - len(common)),
        pass_at_1_a=overall["pass_at_1_a"],
        pass_at_1_b=overall["pass_at_1_b"],
        difference=overall["difference"],
        ci95=bootstrap_ci(overall["per_task"]),
        b_only_a=overall["b"],
        c_only_b=overall["c"],
        p_value=mcnemar_exact(overall["b"], overall["c"]),
        by_env={label: _env_row(items) for label, items in sorted(by_label.items())},
        tasks=_differences(by_task),
    )


def _scores(items: list[tuple[tuple[str, str], list[tuple[Trajectory, Trajectory]]]]) -> dict[str, Any]:
    """Per-task pass@1 of each side, their mean difference and McNemar's discordant counts."""
    rate_a = [_mean([episode_solved(x) for x, _ in samples]) for _, samples in items]
    rate_b = [_mean([episode_solved(y) for _, y in samples]) for _, samples in items]
    pairs = [(episode_solved(x), episode_solved(y)) for _, samples in items for x, y in samples]
    return {
        "pass_at_1_a": _mean(rate_a),
        "pass_at_1_b": _mean(rate_b),
        "difference": _mean(rate_b) - _mean(rate_a),
        "per_task": [rb - ra for ra, rb in zip(rate_a, rate_b, strict=True)],
        "b": sum(x and not y for x, y in pairs),
        "c": sum(y and not x for x, y in pairs),
    }


def _env_row(items: list) -> dict[str, Any]:
    scores = _scores(items)
    return {
        "tasks": len(items),
        "pass_at_1_a": scores["pass_at_1_a"],
        "pass_at_1_b": scores["pass_at_1_b"],
        "difference": scores["difference"],
        "b_only_a": scores["b"],
        "c_only_b": scores["c"],
        "p_value": mcnemar_exact(scores["b"], scores["c"]),
    }


def _differences(by_task: dict[tuple[str, str], list[tuple[Trajectory, Trajectory]]]) -> list[TaskDifference]:
    """Tasks whose samples scored differently, the largest differences first."""
    found = []
    for (label, task_id), samples in by_task.items():
        solved_a = sum(episode_solved(x) for x, _ in samples)
        solved_b = sum(episode_solved(y) for _, y in samples)
        if any(episode_solved(x) != episode_solved(y) for x, y in samples):
            found.append(
                TaskDifference(label, task_id, solved_a, solved_b, len(samples), [x.id for x, _ in samples])
            )
    return sorted(found, key=lambda d: (-abs(d.solved_b - d.solved_a), d.label, d.task_id))


def load_runs(paths: Iterable[str | Path], agents: Sequence[str] = ()) -> list[Run]:
    """The runs in bench report directories (one per agent) and trajectory JSONL files (one each).

    A run is named by its agent; where two inputs hold the same agent (the same model under two
    settings) each is named by its input too: the folder's or file's name, with as many parent
    folders as it takes to tell the inputs apart (`t0.7:hf:m`, `a/report:hf:m`). `agents`, when
    given, keeps only the runs of those agents.

    >>> _input_names([Path("runs/t0.7"), Path("runs/t0.9"), Path("a/report"), Path("b/report")])
    ['t0.7', 't0.9', 'a/report', 'b/report']
    """
    inputs = [Path(path) for path in paths]
    resolved = [path.resolve() for path in inputs]
    repeated = sorted({str(p) for p, r in zip(inputs, resolved, strict=True) if resolved.count(r) > 1})
    if repeated:
        raise ConfigError(f"{', '.join(repeated)} given more than once: give each input once")
    runs: list[Run] = []
    for path, input_name in zip(inputs, _input_names(resolved), strict=True):
        if path.is_dir():
            found = _report_runs(path)
        elif path.is_file():
            found = [_jsonl_run(path)]
        else:
            raise ConfigError(
                f"{path} does not exist: give a bench report directory or a trajectory .jsonl file"
            )
        for run in found:
            run.input = input_name
        runs += found
    if agents:
        runs = _pick(runs, agents)
    held = [run.agent for run in runs]
    for run in runs:
        if held.count(run.agent) > 1:
            run.name = f"{run.input}:{run.agent}"
    return runs


def _input_names(paths: Sequence[Path]) -> list[str]:
    """Each input's shortest trailing path (its name, then parent folders) that no other input ends in."""

    def tail(path: Path, depth: int) -> str:
        return "/".join(path.parts[-depth:])

    names = []
    for i, path in enumerate(paths):
        others = [other for j, other in enumerate(paths) if j != i]
        depth = next(
            (d for d in range(1, len(path.parts)) if all(tail(path, d) != tail(o, d) for o in others)),
            len(path.parts),
        )
        names.append(tail(path, depth))
    return names


def _pick(runs: list[Run], agents: Sequence[str]) -> list[Run]:
    """The runs of `agents`, or a ConfigError naming an agent no input holds and those that exist."""
    held = {run.agent for run in runs}
    missing = [agent for agent in agents if agent not in held]
    if missing:
        raise ConfigError(
            f"no input holds agent {', '.join(missing)}: the inputs hold {', '.join(sorted(held))}; "
            "pick with --agent NAME"
        )
    return [run for run in runs if run.agent in agents]


def _report_runs(folder: Path) -> list[Run]:
    results_path = folder / "results.json"
    if not results_path.is_file():
        raise ConfigError(
            f"{folder} is not a bench report (no results.json): give a report directory or a .jsonl"
        )
    results = json.loads(results_path.read_text())
    labels = results.get("labels", {})
    runs = []
    for agent, entry in results.get("agents", {}).items():
        trajectories = _by_id(read_jsonl(folder / entry["trajectories"]))
        runs.append(
            Run(
                agent,
                trajectories,
                labels,
                str(folder),
                results.get("suite", ""),
                results.get("suite_fingerprint", ""),
            )
        )
    if not runs:
        raise ConfigError(f"{results_path} lists no agents")
    return runs


def _jsonl_run(path: Path) -> Run:
    trajectories = _by_id(read_jsonl(path))
    if not trajectories:
        raise ConfigError(f"{path} holds no trajectories")
    policies = {t.provenance.policy for t in trajectories.values()}
    name = policies.pop() if len(policies) == 1 else path.stem
    return Run(name, trajectories, {}, str(path))


def _by_id(trajectories: Iterable[Trajectory]) -> dict[str, Trajectory]:
    """Trajectories by id; branches of an episode (ids with a '.') are not samples of their own."""
    return {t.id: t for t in trajectories if "." not in t.id}


def _mean(values: Sequence[float]) -> float:
    return float(sum(values)) / len(values) if values else 0.0


def compare_runs(runs: Sequence[Run]) -> dict[str, Any]:
    """The leaderboard of `runs` (best pass@1 first) and the comparisons `pairings` picks.

    >>> from gfcr.core import Step
    >>> def run(name, rewards):
    ...     steps = [[Step("a", "o", r, True, False)] for r in rewards]
    ...     episodes = [Trajectory("e", f"t{i}", "", s, id=str(i)) for i, s in enumerate(steps)]
    ...     return Run(name, {t.id: t for t in episodes})
    >>> result = compare_runs([run("a", [0] * 10), run("b", [1] * 9 + [0])])
    >>> [row["run"] for row in result["leaderboard"]], result["comparisons"][0].p_value < 0.05
    (['b', 'a'], True)
    """
    if len(runs) < 1:
        raise ConfigError("compare needs at least one run")
    board = sorted((run.leaderboard_row() for run in runs), key=lambda row: -row["pass_at_1"])
    fingerprints = {run.suite_fingerprint for run in runs if run.suite_fingerprint}
    pairs, by_agent = pairings(runs)
    return {
        "leaderboard": board,
        "same_suite": len(fingerprints) <= 1,
        "baseline": runs[0].input if by_agent else runs[0].name,
        "by_agent": by_agent,
        "comparisons": [compare(a, b) for a, b in pairs],
    }


def pairings(runs: Sequence[Run]) -> tuple[list[tuple[Run, Run]], bool]:
    """Which runs are compared, and whether agent by agent.

    Where an agent is in more than one input (one report's agents against another's, one model under
    two settings) each run is compared with the same agent's run in the first input holding it;
    agents held once are on the leaderboard only. Otherwise every run is compared with the first.
    """
    by_agent: dict[str, list[Run]] = defaultdict(list)
    for run in runs:
        by_agent[run.agent].append(run)
    if any(len(group) > 1 for group in by_agent.values()):
        return [(group[0], other) for group in by_agent.values() for other in group[1:]], True
    return [(runs[0], other) for other in runs[1:]], False


def to_json(result: dict[str, Any]) -> dict[str, Any]:
    """`compare_runs`'s result as JSON data (what `gfcr compare --json` prints)."""
    return {**result, "comparisons": [c.to_dict() for c in result["comparisons"]]}
