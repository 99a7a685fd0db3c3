"""The `gfcr` command line: list envs and suites, run and bench agents, serve and make models.

gfcr list
gfcr check gfcr/Math-v0
gfcr new-env letter-count
gfcr run gfcr/Math-v0 --agent scripted:oracle -n 100 --out t.jsonl
gfcr bench smoke --agent scripted:oracle --agent scripted:random -k 4 --report reports/smoke
gfcr compare reports/smoke
gfcr diagnose reports/smoke --html reports/smoke-diagnosis
gfcr swe-tasks inflection
gfcr tiny-model runs/tiny-model
gfcr pretrained smollm2-135m runs/smollm2
gfcr train examples/tooluse_tiny_cpu.toml
gfcr serve runs/tiny-model --port 8000
gfcr serve-env gfcr/Math-v0 -e split=AIME2024 --port 8001
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Annotated, Any

import gymnasium as gym
import typer
from rich import box
from rich.console import Console
from rich.logging import RichHandler
from rich.markup import escape
from rich.table import Table

import gfcr
from gfcr.agents import RunnerConfig
from gfcr.apps import model_commands, server_commands
from gfcr.apps.options import Agent, EnvArgs, Force, Imports, Resume, config_options, parse_env_args
from gfcr.apps.terminal import console, exit_on_error
from gfcr.errors import ConfigError
from gfcr.registry import import_modules

app = typer.Typer(help="gfcr: Gymnasium environments for agentic LLM rollouts.", no_args_is_help=True)

# Options shared by `run` and `bench`; the runner's own come from RunnerConfig's declarations.
runner_options = config_options(
    RunnerConfig, param="runner", aliases={"max_episode_tokens": ["--episode-tokens"]}, panel="Runner"
)


@app.callback()
def main(
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log debug messages.")] = False,
) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING,
        format="%(message)s",
        handlers=[RichHandler(console=Console(stderr=True), show_path=False)],
    )


@app.command("list")
def list_command() -> None:
    """List the registered envs and the suites, with their task counts."""
    envs = Table(title="Environments", title_justify="left")
    for column in ("env id", "entry point", "tasks (defaults)"):
        envs.add_column(column)
    for env_id in gfcr.list_envs():
        entry_point = gym.spec(env_id).entry_point
        envs.add_row(env_id, str(entry_point), _count_tasks(env_id))
    suites = Table(title="Suites", title_justify="left")
    for column in ("suite", "version", "tasks", "description"):
        suites.add_column(column)
    for name in gfcr.list_suites():
        suite = gfcr.make_suite(name)
        suites.add_row(name, suite.version, str(len(suite)), suite.description)
    console.print(envs, suites)


@app.command()
def check(
    env_id: Annotated[str, typer.Argument(help="Env id to check, e.g. acme/Reverse-v0 (see `gfcr list`).")],
    env_arg: EnvArgs = None,
    examples: Annotated[int, typer.Option(min=0, help="Seeded random texts sent as actions.")] = 50,
    episodes: Annotated[int, typer.Option(min=1, help="Episodes of the oracle and of random junk.")] = 5,
    seed: Annotated[int, typer.Option(help="Seed of the random texts.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    imports: Imports = None,
) -> None:
    """Check an env against the gfcr env contract, as gfcr checks its own; exit 1 if it breaks it.

    Gymnasium's check_env, seeding and task ids, hostile actions, the step after the end, sync and
    async vector envs, pickling, declared signals, and the oracle (~1.0) and random junk (~0).
    """
    from gfcr.testing import check_contract

    with exit_on_error():
        kwargs = parse_env_args(env_arg or [])
        import_modules(imports or [])
    report = check_contract(env_id, kwargs, examples=examples, seed=seed, episodes=episodes)
    if as_json:
        typer.echo(json.dumps(report.to_dict(), indent=2))
    else:
        table = Table(title=f"gfcr check · {env_id}", title_justify="left", box=box.SIMPLE_HEAD)
        for column in ("check", "result", "seconds", "detail"):
            table.add_column(column, justify="right" if column == "seconds" else "left", overflow="fold")
        colours = {"passed": "green", "failed": "red", "skipped": "yellow"}
        for r in report.results:
            table.add_row(r.name, f"[{colours[r.status]}]{r.status}[/]", f"{r.seconds:.1f}", escape(r.detail))
        console.print(table)
        verdict = "[green]passes[/green]" if report.passed else "[red]breaks[/red]"
        console.print(f"{env_id} {verdict} the env contract")
    if not report.passed:
        raise typer.Exit(1)


@app.command("new-env")
def new_env(
    name: Annotated[str, typer.Argument(help="The env's name, e.g. letter-count (its package and env id).")],
    directory: Annotated[Path, typer.Option("--dir", help="Folder to write the package under.")] = Path("."),
) -> None:
    """Write a plugin package (pyproject entry point, env, tool, oracle, test) that passes `gfcr check`."""
    from gfcr.apps.new_env import write_env_package

    with exit_on_error():
        root, env_id = write_env_package(name, directory)
    console.print(f"wrote {root}: env {env_id}", soft_wrap=True)
    console.print(f"next: pip install -e {root} && gfcr check {env_id}", soft_wrap=True)


@app.command()
@runner_options
def run(
    env_id: Annotated[str, typer.Argument(help="Env id, e.g. gfcr/Math-v0 (see `gfcr list`).")],
    agent: Agent,
    episodes: Annotated[int, typer.Option("-n", "--episodes", min=1, help="Number of episodes.")] = 10,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write trajectories to this .jsonl file.")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the task order and of episode i (seed + i).")] = 0,
    env_arg: EnvArgs = None,
    resume: Resume = False,
    force: Force = False,
    imports: Imports = None,
    *,
    runner: RunnerConfig,
) -> None:
    """Run an agent for N episodes of an env and write the trajectories as JSONL.

    Exits 1 when episodes failed for infrastructure reasons (a dead server, a missing package, an
    env without an oracle): they are listed by reason, and `--resume` runs them again. Stops early
    (exit 2) when the policy, or an env server with no other to take its episodes, fails
    `--max-consecutive-failures` times in a row: `--resume` then finishes the run.
    """
    from gfcr.agents import Runner, episodes_for_env, make_policy

    with exit_on_error():
        _check_out(out, resume=resume, force=force)
        import_modules(imports or [])
        specs = episodes_for_env(env_id, episodes, kwargs=parse_env_args(env_arg or []), seed=seed)
        result = Runner(make_policy(agent), runner).run(
            specs, out, resume=resume, progress=f"{env_id} · {agent}"
        )
    table = Table(title=f"{env_id} · {agent}", title_justify="left")
    for column in ("episodes", "mean reward", "solved", "failed", "resumed", "seconds", "episodes/s"):
        table.add_column(column, justify="right")
    table.add_row(
        str(result.episodes),
        f"{result.mean_reward:.3f}",
        str(result.solved),
        str(result.failed),
        str(result.resumed),
        f"{result.seconds:.2f}",
        f"{(result.episodes - result.resumed) / max(result.seconds, 1e-9):.1f}",
    )
    console.print(table)
    for place, what in result.lost.items():  # env servers or Ray nodes that failed mid-run
        console.print(f"[yellow]lost[/yellow] {escape(place)}: {escape(what)}", soft_wrap=True)
    if out is not None:
        console.print(f"trajectories: {out}", soft_wrap=True)
    _exit_on_failures({agent: result.trajectories})


@app.command()
@runner_options
def bench(
    target: Annotated[
        list[str],
        typer.Argument(
            help="A suite name (see `gfcr list`), a suite file (.toml, docs/suites.md) or env ids."
        ),
    ],
    agent: Annotated[list[str], typer.Option("--agent", "-a", help="Policy spec; repeat to compare agents.")],
    k: Annotated[int, typer.Option("-k", min=1, help="Samples per task (for pass@k and pass^k).")] = 1,
    num_tasks: Annotated[
        int | None, typer.Option(min=1, help="At most this many tasks per suite entry.")
    ] = None,
    report: Annotated[
        Path | None, typer.Option(help="Report directory (default: reports/TARGET-TIME).")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of sample j is seed + j.")] = 0,
    env_arg: EnvArgs = None,
    resume: Resume = False,
    imports: Imports = None,
    *,
    runner: RunnerConfig,
) -> None:
    """Benchmark agents on a suite: pass@1, pass@k, pass^k, reward, tokens, time, failures; and a report."""
    from gfcr.apps.bench.bench import BenchConfig
    from gfcr.apps.bench.bench import bench as run_bench
    from gfcr.apps.bench.metrics import describe_waits
    from gfcr.apps.bench.report import write_report

    with exit_on_error():
        import_modules(imports or [])
        config = BenchConfig(
            tuple(target),
            tuple(agent),
            k,
            num_tasks,
            parse_env_args(env_arg or []),
            report,
            resume,
            seed,
            runner,
        )
        result = run_bench(
            config,
            progress=True,
            on_agent=lambda r: console.print(
                f"{r.agent}: {r.overall.episodes} "
                f"episodes in {r.seconds:.1f} s, pass@1 {r.overall.pass_at_1:.3f}"
            ),
        )
        index = write_report(config, result)
    scores, reasons = _bench_tables(result, max(k, result.k))
    console.print(scores, *([reasons] if reasons.row_count else []))  # no table when all were solved
    for r in result.agents:
        if sum(r.overall.wait_s.values()) >= 0.0005:  # queued (as printed, to the ms): by whom, in all
            console.print(f"{r.agent} waited for: {describe_waits(r.overall.wait_s)}", soft_wrap=True)
        if r.overall.cut_turns:  # answers judged unfinished: the cap, not the agent, may be at fault
            console.print(
                f"[yellow]{escape(r.agent)}: {r.overall.cut_turns} of {r.overall.turns} turns were cut at "
                "--max-tokens[/yellow] (their answers were judged unfinished)",
                soft_wrap=True,
            )
    console.print(
        f"suite {result.suite} v{result.suite_version} · fingerprint {result.fingerprint}", soft_wrap=True
    )
    console.print(f"report: {index}", soft_wrap=True)
    _exit_on_failures({r.agent: r.trajectories for r in result.agents})


@app.command()
def diagnose(
    runs: Annotated[
        list[Path],
        typer.Argument(help="Trajectory .jsonl files, bench report directories or `gfcr train` out_dirs."),
    ],
    as_json: Annotated[
        bool, typer.Option("--json", help='Print {"pathologies": [...], "criteria": {...}} as JSON only.')
    ] = False,
    html: Annotated[
        Path | None, typer.Option("--html", help="Write an HTML page (DIR/index.html, DIR/diagnosis.json).")
    ] = None,
    reverify: Annotated[
        bool,
        typer.Option(
            "--reverify", help="Re-judge every episode with its env's verifier (a second verifier)."
        ),
    ] = False,
    repeats: Annotated[
        int, typer.Option(min=1, help="Verdicts per episode when re-judging (flakiness).")
    ] = 2,
    calibrate: Annotated[
        bool,
        typer.Option(
            "--calibrate",
            help="Judge each task's gold (scripted:oracle) and a junk answer (scripted:random) with "
            "its env's verifier: false negatives and false positives.",
        ),
    ] = False,
    calibrate_tasks: Annotated[
        int, typer.Option(min=1, help="Tasks per env played when calibrating (the first distinct ones).")
    ] = 20,
    judge: Annotated[
        str | None,
        typer.Option(
            help="With --calibrate: also show the gold and junk episodes to this judge (a policy spec: "
            "hf:PATH, vllm:PATH, openai:MODEL@URL) and measure it against the verifier: agreement, "
            "false passes on junk, failures (never scored 0)."
        ),
    ] = None,
    judge_mode: Annotated[
        str, typer.Option(help="How --judge judges: pointwise | listwise | pairwise ([judge.llm] mode).")
    ] = "pointwise",
    judge_max_tokens: Annotated[int, typer.Option(min=1, help="Tokens --judge may write per reply.")] = 512,
    env_arg: EnvArgs = None,
    fail_on: Annotated[
        str | None, typer.Option(help="Exit 1 if a pathology is at least this severe: low | medium | high.")
    ] = None,
) -> None:
    """Diagnose rollout pathologies (zero-variance groups, reward hacking, length inflation, noisy
    signals, wasted compute, stale replay) with the levers that address them, and the criteria report."""
    from gfcr.apps.diagnose import diagnose as run_diagnose
    from gfcr.apps.diagnose import load_run
    from gfcr.apps.diagnose.pathology import RANK
    from gfcr.apps.diagnose.render import print_terminal, write_html
    from gfcr.filter.judge_config import LLMJudgeConfig

    with exit_on_error():
        if fail_on is not None and fail_on not in ("low", "medium", "high"):
            raise ConfigError(f"--fail-on must be low, medium or high, got {fail_on!r}")
        if judge is not None and not calibrate:
            raise ConfigError("--judge is measured on the calibration episodes: add --calibrate")
        term = (
            LLMJudgeConfig(model=judge, mode=judge_mode, max_tokens=judge_max_tokens).build()
            if judge is not None
            else None
        )
        data = load_run(runs, parse_env_args(env_arg or []))
        result = run_diagnose(
            data,
            reverify_repeats=repeats if reverify else 0,
            calibrate_tasks=calibrate_tasks if calibrate else 0,
            judge=term,
            judge_name=f"{judge}, {judge_mode}",
        )
        index = write_html(result, html) if html is not None else None
    if as_json:
        typer.echo(json.dumps(result.to_dict(), default=str))
    else:
        print_terminal(result, console)
        if index is not None:
            console.print(f"diagnosis: {index}", soft_wrap=True)
    if fail_on is not None and any(RANK[p.severity] >= RANK[fail_on] for p in result.pathologies):
        raise typer.Exit(1)


@app.command()
def compare(
    runs: Annotated[
        list[Path],
        typer.Argument(help="Bench report directories (each agent a run) or trajectory .jsonl files."),
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON only.")] = False,
    html: Annotated[
        Path | None, typer.Option("--html", help="Write an HTML view (DIR/index.html, pairs side by side).")
    ] = None,
    show: Annotated[int, typer.Option(min=0, help="Differing tasks listed per comparison.")] = 10,
    agent: Annotated[
        list[str] | None,
        typer.Option("--agent", "-a", help="Compare only this agent's runs; repeat for more."),
    ] = None,
) -> None:
    """Compare runs or agents task by task: an agent held by several inputs against itself (the
    first input as baseline), otherwise every run against the first; paired bootstrap interval and
    McNemar's exact test for the difference in pass@1, per env configuration; a leaderboard."""
    from gfcr.apps.compare import compare_runs, load_runs, to_json

    with exit_on_error():
        loaded = load_runs(runs, agent or ())
        result = compare_runs(loaded)
        index = None
        if html is not None:
            from gfcr.apps.bench.compare_view import write_compare_view

            index = write_compare_view(html, result, loaded)
    if as_json:
        typer.echo(json.dumps(to_json(result), indent=2))
        return
    from gfcr.apps.bench.compare_view import compare_tables

    console.print(*compare_tables(result, show))
    if not result["same_suite"]:
        console.print("[yellow]the runs come from suites with different fingerprints[/yellow]")
    if index is not None:
        console.print(f"comparison: {index}", soft_wrap=True)


@app.command("swe-tasks")
def swe_tasks(
    dataset: Annotated[
        str, typer.Argument(help="all, a project (inflection, parse, cachetools, toolz) or a+b.")
    ] = "all",
    tasks_per_project: Annotated[
        int, typer.Option(min=1, help="Tasks per project (generated once, cached).")
    ] = 10,
    seed: Annotated[int, typer.Option(help="Seed of the mutation order.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the tasks' metadata as JSON lines.")] = False,
) -> None:
    """List gfcr/SWE-v0's tasks with their difficulty, generating (and caching) any not built yet."""
    from gfcr.envs.swe import PROJECTS, project_tasks

    names = list(PROJECTS) if dataset == "all" else dataset.split("+")
    if unknown := [name for name in names if name not in PROJECTS]:
        console.print(f"[red]error:[/red] unknown project {unknown[0]!r}; known: all, {', '.join(PROJECTS)}")
        raise typer.Exit(2)
    refs = ", ".join(PROJECTS[name].ref for name in names)
    table = Table(title=f"gfcr/SWE-v0 tasks · {refs}", title_justify="left", box=box.SIMPLE_HEAD)
    for column in ("task id", "bug in", "function", "operator", "failing tests", "difficulty"):
        table.add_column(column, justify="right" if column == "failing tests" else "left", overflow="fold")
    for name in names:
        with exit_on_error():
            with console.status(f"{PROJECTS[name].ref}: reading or generating tasks") as status:
                tasks = project_tasks(name, "auto", tasks_per_project, seed, lambda text: status.update(text))
        for task in tasks:
            meta = task.metadata
            if as_json:
                typer.echo(
                    json.dumps({"id": task.id, **{k: v for k, v in meta.items() if k != "pass_to_pass"}})
                )
                continue
            bug = meta["bug"]
            table.add_row(
                task.id,
                f"{bug['file']}:{bug['line']}",
                bug["function"] or "-",
                bug["operator"],
                f"{len(meta['fail_to_pass'])} of {len(meta['fail_to_pass']) + len(meta['pass_to_pass'])}",
                meta["difficulty"],
            )
    if not as_json:
        console.print(table)
        console.print(
            "fail / pass: the fail-to-pass tests (the bug breaks them) and pass-to-pass tests (still pass)"
        )


def _bench_tables(result: Any, k: int) -> tuple[Table, Table]:
    """The scores of each agent, and its episodes not solved by reason (a BenchResult's)."""
    described = [f"{r.agent} — {r.description}" for r in result.agents if r.description]
    scores = Table(title=f"gfcr bench · {result.suite} · k={k}", title_justify="left", box=box.SIMPLE_HEAD,
                   caption="\n".join(described) or None, caption_justify="left")  # fmt: skip
    per_k = [f"pass@{k}", f"pass^{k}"] if k > 1 else []  # with k=1 both equal pass@1
    seconds = ["policy s/ep", "env s/ep", "wait s/ep"]  # wait: the part of env s queued for shared resources
    columns = ["agent", "episodes", "pass@1", *per_k, "reward", "tok/ep", *seconds]
    widest = max((len(r.agent) for r in result.agents), default=5)
    scores.add_column("agent", min_width=min(widest, 30), overflow="fold")
    for column in columns[1:]:
        scores.add_column(column, justify="right")
    reasons = Table(title="episodes not solved, by reason", title_justify="left", box=box.SIMPLE_HEAD)
    for column in ("agent", "reason", "episodes"):
        reasons.add_column(column, justify="right" if column == "episodes" else "left")
    for r in result.agents:
        s = r.overall
        values = [s.pass_at_1, *([s.pass_at.get(k, 0), s.pass_hat.get(k, 0)] if k > 1 else []), s.mean_reward]
        per_episode = [s.policy_s / max(s.episodes, 1), s.env_s / max(s.episodes, 1), s.wait_s_per_episode]
        scores.add_row(r.agent, str(s.episodes), *(f"{v:.3f}" for v in values), f"{s.mean_tokens_out:.0f}",
                       *(f"{v:.3f}" for v in per_episode))  # fmt: skip
        for outcome, count in s.outcomes.items():
            if outcome != "solved":
                reasons.add_row(r.agent, outcome, str(count))
    return scores, reasons


def _check_out(out: Path | None, *, resume: bool, force: bool) -> None:
    """Refuse an --out that would lose data or cannot be written, before anything runs."""
    if out is None:
        if resume:
            raise ConfigError("--resume needs --out FILE.jsonl (the file to resume)")
        return
    if out.is_dir():
        raise ConfigError(f"--out {out} is a directory; give a file, e.g. {out / 'run.jsonl'}")
    if out.exists() and not (resume or force):
        raise ConfigError(f"--out {out} exists: --resume to continue it, --force to overwrite it")


def _exit_on_failures(trajectories: dict[str, list[Any]]) -> None:
    """List infrastructure failures by reason with the first message of each, then exit 1."""
    table = Table(
        title="failed episodes (infrastructure, not results)", title_justify="left", box=box.SIMPLE_HEAD
    )
    for column in ("agent", "reason", "episodes", "first message"):
        table.add_column(column, justify="right" if column == "episodes" else "left", overflow="fold")
    for agent, group in trajectories.items():
        by_reason: dict[str, list[str]] = {}
        for t in group:
            if t.status == "failed":
                failure = t.failure or "failed"
                by_reason.setdefault(failure.split(":", 1)[0], []).append(failure.splitlines()[0])
        for reason, messages in sorted(by_reason.items(), key=lambda item: -len(item[1])):
            table.add_row(agent, reason, str(len(messages)), messages[0][:200])
    if table.row_count:
        console.print(table)
        console.print(
            "[red]some episodes failed for infrastructure reasons[/red]: fix the cause, then --resume"
        )
        raise typer.Exit(1)


def _count_tasks(env_id: str) -> str:
    try:
        return str(len(gym.make(env_id).unwrapped.tasks))  # type: ignore[attr-defined]
    except Exception as e:  # a plugin that cannot be built must not hide the others
        return f"[red]unavailable: {e}[/red]"


# Commands with modules of their own: making, training and serving models, serving envs.
app.command("tiny-model")(model_commands.tiny_model)
app.command()(model_commands.pretrained)
app.command()(model_commands.train)
app.command()(server_commands.serve)
app.command("serve-env")(server_commands.serve_env)
