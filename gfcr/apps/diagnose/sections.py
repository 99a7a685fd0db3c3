"""The criteria section of the other reports: every `gfcr bench` report (results.json and
index.html) and every `gfcr train` out_dir (criteria.json and diagnose/index.html)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gfcr.apps.bench.bench import BenchResult
from gfcr.apps.diagnose.card import card
from gfcr.apps.diagnose.criteria import criteria_by_run
from gfcr.apps.diagnose.data import RunData, load_run
from gfcr.apps.diagnose.diagnose import Diagnosis, diagnose
from gfcr.apps.diagnose.render import criteria_block, write_html
from gfcr.apps.diagnose.reverify import reverify


def bench_criteria(bench: BenchResult, *, seed: int = 0, reverify_repeats: int = 2) -> dict[str, Any]:
    """{"agents": {agent: criteria}, "card": the card of the whole bench} (the suite's fingerprint in it).

    Every episode is re-judged `reverify_repeats` times by its env's verifier (0: not), for the
    verifier agreement and flake rate.
    """
    data = RunData(runs={r.agent: r.trajectories for r in bench.agents}, bench_results={"seed": seed})
    for episode, label in bench.labels.items():
        data.add_label(label, episode)
    rejudged = (
        reverify(
            data.runs,
            repeats=reverify_repeats,
            env_kwargs=data.env_kwargs,
            episode_kwargs=data.episode_kwargs,
        )
        if reverify_repeats
        else None
    )
    per_agent = criteria_by_run(data, rejudged)
    return {"agents": per_agent, "card": card(data, suite_fingerprint=bench.fingerprint or None)}


def bench_criteria_html(section: dict[str, Any]) -> str:
    """The bench report's criteria section: one set of tables per agent, then the card."""
    parts = [criteria_block(found, f"Criteria · {agent}") for agent, found in section["agents"].items()]
    parts.append(criteria_block({"card": section["card"]}, "Card"))
    return "\n".join(parts)


def write_train_report(out_dir: str | Path) -> tuple[Path, Diagnosis]:
    """After `gfcr train`: `OUT/criteria.json` (pathologies, criteria, card) and `OUT/diagnose/`;
    returns the page and the diagnosis."""
    root = Path(out_dir)
    found = diagnose(load_run([root]))
    (root / "criteria.json").write_text(json.dumps(found.to_dict(), indent=2, default=str), encoding="utf-8")
    return write_html(found, root / "diagnose"), found
