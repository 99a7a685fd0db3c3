"""A diagnosis shown three ways: a rich terminal summary, JSON, and an HTML page (with the
criteria section the bench report and training out_dirs reuse)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jinja2 import Environment
from markupsafe import Markup
from rich import box
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from gfcr.apps.bench.bench import _slug
from gfcr.apps.bench.templates import STYLE
from gfcr.apps.diagnose import templates
from gfcr.apps.diagnose.diagnose import Diagnosis
from gfcr.apps.diagnose.drift import drift_table
from gfcr.apps.diagnose.judge_calibration import judge_table
from gfcr.apps.diagnose.pathology import Pathology
from gfcr.core import read_jsonl
from gfcr.version import __version__

CRITERIA_GROUPS = ("reliability", "coverage", "cost", "reward", "pipeline")  # "reward": judged episodes'

COLOURS = {
    "high": "bold red",
    "medium": "dark_orange",
    "low": "yellow",
    "none": "green",
    "not_measurable": "dim",
}


def show(value: Any) -> str:
    """A value for a table cell: numbers rounded, structures as compact JSON."""
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, dict | list):
        return json.dumps(value, default=str)
    return "—" if value is None else str(value)


def cell(value: Any, links: Mapping[str, str] | None = None) -> Markup:
    """A value for an HTML table cell, as a person reads it: a mapping as a nested table (a list of
    mappings as one table, a row each), other lists comma-separated, scalars as `show` writes them;
    a string found in `links` (a trajectory id) links to its page.

    >>> print(cell(["a1", "b2", 0.25], {"a1": "ep.html#a1"}))
    <a href="ep.html#a1">a1</a>, b2, 0.25
    >>> print(cell({"all_fail": 3}))
    <table class="nested"><tr><td>all_fail</td><td class="text">3</td></tr></table>
    """
    links = links or {}
    if isinstance(value, dict) and value:
        row = Markup('<tr><td>{}</td><td class="text">{}</td></tr>')
        rows = Markup("").join(row.format(k, cell(v, links)) for k, v in value.items())
        return Markup('<table class="nested">{}</table>').format(rows)
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        keys = list(dict.fromkeys(k for v in value for k in v))
        item = Markup('<td class="text">{}</td>')
        head = Markup("").join(Markup("<th>{}</th>").format(k) for k in keys)
        body = Markup("").join(
            Markup("<tr>{}</tr>").format(Markup("").join(item.format(cell(v.get(k), links)) for k in keys))
            for v in value
        )
        return Markup('<table class="nested"><tr>{}</tr>{}</table>').format(head, body)
    if isinstance(value, dict | list) and not value:
        return Markup("—")
    if isinstance(value, list):
        return Markup(", ").join(cell(v, links) for v in value)
    if isinstance(value, str) and value in links:
        return Markup('<a href="{}">{}</a>').format(links[value], value)
    return Markup("{}").format(show(value))


_JINJA = Environment(autoescape=True, trim_blocks=True, lstrip_blocks=True)
_JINJA.filters["show"] = show
_JINJA.filters["cell"] = cell


def headline(p: Pathology) -> str:
    """One line of the strongest evidence of a finding."""
    e = p.evidence
    if "by_run" in e:  # the worst over several runs: each run's own finding is below
        return ", ".join(f"{run} {found}" for run, found in e["by_run"].items())
    if p.severity == "not_measurable":
        return str(e["not_measurable"])
    lines = {
        "zero_variance_groups": lambda: (
            f"{e['zero_variance']}/{e['groups']} groups with zero variance ({e['all_fail']} all-fail, "
            f"{e['all_pass']} all-pass)"
            if "groups" in e
            else f"mean share {e['trend']['mean']:.0%} over steps"
        ),
        "reward_hacking": lambda: _hacking_headline(e),
        "length_inflation": lambda: (
            f"{e.get('truncated_share', e.get('truncated_trend', {}).get('mean', 0)):.0%} truncated"
            + (f", {e['turns_cut_share']:.0%} of turns cut at max_tokens" if e.get("turns_cut_share") else "")
            + (
                f"; length ×{e['length_growth']:.2f} over training, reward {e['reward_gain']:+.3f}"
                if isinstance(e.get("length_growth"), float)
                else ""
            )
        ),
        "noisy_signals": lambda: (
            (f"{e['flaky']}/{e['rejudged']} flaky on re-judging; " if "rejudged" in e else "")
            + _calibration_headline(e["gold_calibration"])
            + f"{e['with_reward_spread']}/{e['identical_action_sets']} identical-action sets with "
            "a reward spread"
        ),
        "wasted_compute": lambda: (
            _wasted_tokens(e.get("wasted_token_share"))
            + f"{e.get('failed', 0)} failed; "
            f"p95/median seconds {e.get('straggler_ratio', 0)}"
            + (
                f"; {e['idle_time']['idle_share']:.0%} of wall time idle"
                if isinstance(e.get("idle_time"), dict)
                else ""
            )
            if "episodes" in e
            else f"mean wasted share {e['trend']['mean']:.0%}"
        ),
        "stale_replay": lambda: (
            f"{e.get('replayed', 0)} replayed, mean lag {e.get('lag_mean', 0)} versions"
            if e.get("replayed")
            else str(e.get("note", "buffer: " + show(e.get("buffer"))))
        ),
        "entropy_collapse": lambda: (
            f"token entropy {e['early_entropy']:.3f} → {e['late_entropy']:.3f} nats "
            f"({e['entropy_drop']:.0%} drop; {e['source']})"
        ),
    }
    return lines[p.name]()


def _hacking_headline(e: dict[str, Any]) -> str:
    if "trend" in e and not e.get("rewarded"):  # a training run's per-step share
        last, mean = e["trend"]["last"], e["trend"]["mean"]
        return f"rewarded-incorrect share {last:.0%} at the last step (mean {mean:.0%})"
    counts = [
        f"{e.get(key, 0)} {label}"
        for key, label in (
            ("rewarded_incorrect", "rewarded-incorrect"),
            ("format_only", "format-only"),
            ("rewarded_truncated", "rewarded-truncated"),
            ("repeated_answer", "constant-answer"),
            ("unbacked_by_reverify", "unbacked on re-judging"),
        )
        if key in e
    ]
    return f"{', '.join(counts)} of {e.get('rewarded', 0)} rewarded"


def _calibration_headline(found: Any) -> str:
    if not isinstance(found, dict) or not found.get("gold_judged"):
        return ""
    return (
        f"gold accepted {found['gold_acceptance']:.0%} of {found['gold_judged']}, junk rejected "
        f"{found['junk_rejection']:.0%} of {found['junk_judged']}; "
    )


def _wasted_tokens(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.0%} of tokens on zero-variance groups; "
    return "tokens on zero-variance groups not measurable (no prompt has two samples); "


def terminal(diagnosis: Diagnosis) -> Group:
    """The rich summary: the pathologies with their levers (each run's alone when there are several),
    then the criteria and the card."""
    title = "gfcr diagnose · " + ", ".join(diagnosis.sources)
    parts: list[Any] = []
    for run, pathologies in (diagnosis.runs or {"": diagnosis.pathologies}).items():
        parts += _pathology_parts(f"{title} · {run}" if run else title, pathologies)
    criteria = Table(title="criteria", title_justify="left", box=box.SIMPLE_HEAD)
    for column in ("criterion", "measure", "value"):
        criteria.add_column(column, overflow="fold")
    for name in CRITERIA_GROUPS:
        for key, value in diagnosis.criteria.get(name, {}).items():
            criteria.add_row(name, key, Text(show(value)))
    parts.append(criteria)
    if "by_run" in diagnosis.criteria:
        parts.append(_by_run_table(diagnosis.criteria["by_run"]))
    if "judge_calibration" in diagnosis.criteria:
        parts.append(judge_table(diagnosis.criteria["judge_calibration"]))
    if "proposals" in diagnosis.criteria:  # [propose]: the generated tasks' drift over training
        drift = diagnosis.criteria["proposals"]
        parts += [drift_table(drift), Text(drift["summary"])]
        parts += [Text(f"  ⚑ {flag}", style="dark_orange") for flag in drift["flags"]]
    card = diagnosis.criteria["card"]
    work = card["work"]
    seeds = show(card["seeds"])
    line = f"card: gfcr {card['gfcr']} · work {work['hash']} ({work['tasks']} tasks) · seeds {seeds}"
    return Group(*parts, Text(line))


def _pathology_parts(title: str, pathologies: list[Pathology]) -> list[Any]:
    """One table of pathologies, then the levers of those found."""
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD)
    for column in ("pathology", "severity", "finding"):
        table.add_column(column, overflow="fold")
    for p in pathologies:
        table.add_row(p.name, Text(p.severity, style=COLOURS[p.severity]), Text(headline(p)))
    parts: list[Any] = [table]
    for p in pathologies:
        if p.found:
            parts.append(Text(f"{p.name} ({p.severity}) — levers:", style="bold"))
            parts += [Text(f"  • {lever}") for lever in p.levers]
    return parts


def _by_run_table(by_run: dict[str, dict[str, Any]]) -> Table:
    """Each run's headline criteria (a bench report's agents apart)."""
    table = Table(title="criteria by run", title_justify="left", box=box.SIMPLE_HEAD)
    for column in (
        "run",
        "pass@1",
        "informative share",
        "failures",
        "verifier agreement",
        "tokens / solved task",
    ):
        table.add_column(column, overflow="fold", justify="left" if column == "run" else "right")
    for run, found in by_run.items():
        per_solved = found["cost"]["per_solved_task"]
        table.add_row(
            run,
            show(found["coverage"]["pass_at_1"]),
            Text(show(found["coverage"]["informative_share"])),
            show(found["reliability"]["infrastructure_failures"]),
            Text(show(found["reliability"]["verifier_agreement"])),
            show(per_solved["tokens"]) if per_solved else "—",
        )
    return table


def print_terminal(diagnosis: Diagnosis, console: Console) -> None:
    console.print(terminal(diagnosis))


def criteria_block(criteria: dict[str, Any], title: str | None = None) -> str:
    """One criteria table set (reliability, coverage, cost, a training run's pipeline, card) as HTML, under
    `title`."""
    template = _JINJA.from_string(templates.CRITERIA)
    return template.render(criteria=criteria, groups=CRITERIA_GROUPS, title=title or "Criteria", links={})


def criteria_html(criteria: dict[str, Any]) -> str:
    """The criteria section (reliability, coverage, cost, card; then each run's alone; then the
    generated tasks' drift of a run with [propose]) as HTML."""
    parts = [criteria_block(criteria)]
    parts += [criteria_block(found, f"Criteria · {run}") for run, found in criteria.get("by_run", {}).items()]
    if "proposals" in criteria:
        parts.append(_JINJA.from_string(templates.PROPOSALS).render(drift=criteria["proposals"], links={}))
    return "\n".join(parts)


def episode_links(sources: list[str], folder: Path) -> dict[str, str]:
    """Trajectory id -> its row in a bench report's episode viewer, relative to `folder`, for the
    bench reports among `sources` (other inputs have no viewer)."""
    links: dict[str, str] = {}
    for source in map(Path, sources):
        if not (source / "results.json").is_file():
            continue
        agents = json.loads((source / "results.json").read_text(encoding="utf-8")).get("agents", {})
        for agent, entry in agents.items():
            path = source / entry.get("trajectories", "")
            if not path.is_file():
                continue
            page = os.path.relpath(source / "episodes" / _slug(agent) / "index.html", folder)
            links |= {t.id: f"{page}#{t.id}" for t in read_jsonl(path)}
    return links


def write_html(diagnosis: Diagnosis, directory: str | Path) -> Path:
    """Write `directory/index.html` (the page) and `directory/diagnosis.json`; returns the page."""
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "diagnosis.json").write_text(
        json.dumps(diagnosis.to_dict(), indent=2, default=str), encoding="utf-8"
    )
    page = _JINJA.from_string(templates.PAGE).render(
        style=STYLE,
        time=datetime.now(UTC).isoformat(timespec="seconds"),
        version=__version__,
        sources=diagnosis.sources,
        runs=diagnosis.runs or {"": diagnosis.pathologies},
        headline=headline,
        links=episode_links(diagnosis.sources, folder),
        criteria_html=criteria_html(diagnosis.criteria),
    )
    index = folder / "index.html"
    index.write_text(page, encoding="utf-8")
    return index
