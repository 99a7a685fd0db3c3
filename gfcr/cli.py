"""The `gfcr` command line: list envs and suites, run agents in envs.

    gfcr list
    gfcr run gfcr/Math-v0 --agent scripted:oracle -n 100 --out t.jsonl
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Annotated, Any

import gymnasium as gym
import typer
from rich.console import Console
from rich.logging import RichHandler
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

import gfcr
from gfcr.errors import ConfigError, GfcrError

app = typer.Typer(help="gfcr: Gymnasium environments for agentic LLM rollouts.", no_args_is_help=True)
console = Console()


@app.callback()
def main(verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log debug messages.")] = False) -> None:
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
    for column in ("suite", "tasks", "description"):
        suites.add_column(column)
    for name in gfcr.list_suites():
        suite = gfcr.make_suite(name)
        suites.add_row(name, str(len(suite)), suite.description)
    console.print(envs, suites)


@app.command()
def run(
    env_id: Annotated[str, typer.Argument(help="Env id, e.g. gfcr/Math-v0 (see `gfcr list`).")],
    agent: Annotated[str, typer.Option("--agent", "-a", help="Policy spec, e.g. scripted:oracle.")],
    episodes: Annotated[int, typer.Option("-n", "--episodes", min=1, help="Number of episodes.")] = 10,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write trajectories to this .jsonl file.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the task order and of episode i (seed + i).")] = 0,
    env_arg: Annotated[
        list[str] | None,
        typer.Option("--env-arg", "-e", help="Env keyword KEY=VALUE (VALUE parsed as JSON if it can be)."),
    ] = None,
) -> None:
    """Run an agent for N episodes of an env and write the trajectories as JSONL."""
    from gfcr.agents import make_policy
    from gfcr.agents.rollout import run as run_episodes

    try:
        env_kwargs = _parse_env_args(env_arg or [])
        policy = make_policy(agent)
        with _progress() as progress:
            bar = progress.add_task(f"{env_id} · {agent}", total=episodes)
            summary = run_episodes(
                env_id, policy, episodes, out, seed=seed, env_kwargs=env_kwargs,
                on_episode=lambda _: progress.advance(bar),
            )  # fmt: skip
    except GfcrError as e:
        console.print(f"[red]error:[/red] {e}")
        raise typer.Exit(2) from e
    table = Table(title=f"{env_id} · {agent}", title_justify="left")
    for column in ("episodes", "mean reward", "solved", "failed", "seconds", "episodes/s"):
        table.add_column(column, justify="right")
    table.add_row(
        str(summary.episodes), f"{summary.mean_reward:.3f}", str(summary.solved), str(summary.failed),
        f"{summary.seconds:.2f}", f"{summary.episodes / max(summary.seconds, 1e-9):.1f}",
    )  # fmt: skip
    console.print(table)
    if out is not None:
        console.print(f"trajectories: {out}")


def _count_tasks(env_id: str) -> str:
    try:
        return str(len(gym.make(env_id).unwrapped.tasks))
    except Exception as e:  # a plugin that cannot be built must not hide the others
        return f"[red]unavailable: {e}[/red]"


def _parse_env_args(pairs: list[str]) -> dict[str, Any]:
    kwargs: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"--env-arg expects KEY=VALUE, got {pair!r} (e.g. --env-arg dataset=champ)")
        try:
            kwargs[key] = json.loads(value)
        except json.JSONDecodeError:
            kwargs[key] = value
    return kwargs


def _progress() -> Progress:
    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=console, transient=True,
    )  # fmt: skip
