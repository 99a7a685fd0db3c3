"""The bench report directory: `results.json`, `index.html` with plots, and a trajectory viewer.

REPORT/results.json                   scores per agent, overall and per env configuration
REPORT/index.html                     summary, plots (inline SVG), tables; no JavaScript
REPORT/trajectories/AGENT.jsonl       every episode (written while the bench ran)
REPORT/episodes/AGENT/index.html      the episodes of an agent, with their outcomes
REPORT/episodes/AGENT/N.html          one episode, turn by turn: actions, tool calls, results, rewards
                                      (and the images of its messages, from trajectories/images/)
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jinja2 import Environment
from markupsafe import Markup

from gfcr.apps.bench import svg, templates
from gfcr.apps.bench.bench import AgentResult, BenchConfig, BenchResult, _slug
from gfcr.apps.bench.metrics import outcome
from gfcr.apps.diagnose.sections import bench_criteria, bench_criteria_html
from gfcr.core import ImageStore, Message, Trajectory, parse_action
from gfcr.core.trajectory import image_store
from gfcr.version import __version__

_JINJA = Environment(autoescape=True, trim_blocks=True, lstrip_blocks=True)
# a tool's parameter schema, indented, its text as written (Jinja's tojson escapes quotes for scripts)
_JINJA.filters["schema"] = lambda value: json.dumps(value, indent=2, ensure_ascii=False)


def write_report(config: BenchConfig, bench: BenchResult) -> Path:
    """Write the report of `bench` into `config.report_dir`; returns the path of index.html."""
    root, suite_name, results = config.report_dir, bench.suite, bench.agents
    root.mkdir(parents=True, exist_ok=True)
    criteria = bench_criteria(bench, seed=config.seed)  # reliability, coverage, cost and the card
    (root / "results.json").write_text(
        json.dumps({**_results_json(config, bench), "criteria": criteria}, indent=2)
    )
    agents = [_agent_view(result) for result in results]
    outcome_names = sorted({o for r in results for o in r.overall.outcomes}, key=lambda o: (o != "solved", o))
    page = _JINJA.from_string(templates.INDEX).render(
        suite=suite_name,
        suite_version=bench.suite_version,
        fingerprint=bench.fingerprint,
        time=datetime.now(UTC).isoformat(timespec="seconds"),
        version=__version__,
        k=max(config.k, bench.k),
        tasks=results[0].overall.tasks if results else 0,
        agents=agents,
        plots=_plots(max(config.k, bench.k), results, outcome_names),
        outcome_names=outcome_names,
        wait_resources=sorted({w for r in results for w in r.overall.wait_s}),
        style=templates.STYLE,
        criteria=bench_criteria_html(criteria),
    )
    index = root / "index.html"
    index.write_text(page, encoding="utf-8")
    for result in results:
        _write_viewer(root / "episodes" / _slug(result.agent), result, bench.labels)
    return index


def image_tags(store: ImageStore, pages: Path) -> Callable[[Message], Markup]:
    """The viewer templates' `shown(m)`: an `<img>` of each image of the message `m`, stored (once)
    in `store` and referred to by its path relative to the pages in `pages` (the report folder
    holds its images, so it reads anywhere); nothing for a message without images.

    >>> import tempfile
    >>> from PIL import Image as PILImage
    >>> from gfcr.core import Image
    >>> root = Path(tempfile.mkdtemp())
    >>> shown = image_tags(ImageStore(root / "images"), root / "pages")
    >>> red = Image.from_pil(PILImage.new("RGB", (2, 2), "red"))
    >>> str(shown(Message("user", ["red?", red]))).startswith('<img class="shown" src="../images/')
    True
    >>> shown(Message("user", "no picture"))
    Markup('')
    """

    def shown(message: Message) -> Markup:
        tags = []
        for image in message.images:
            store.put(image)
            source = Path(os.path.relpath(store.path(image), pages)).as_posix()
            tags.append(
                Markup('<img class="shown" src="{}" alt="image {}">').format(source, image.sha256[:12])
            )
        return Markup("").join(tags)

    return shown


def _results_json(config: BenchConfig, bench: BenchResult) -> dict[str, Any]:
    results = bench.agents
    return {
        "suite": bench.suite,
        "suite_version": bench.suite_version,
        "suite_fingerprint": bench.fingerprint,  # Suite.fingerprint(): equal means the same work
        "time": datetime.now(UTC).isoformat(timespec="seconds"),
        "gfcr_version": __version__,
        "k": max(config.k, bench.k),
        "seed": config.seed,
        "labels": bench.labels,  # episode id -> its env configuration, for `gfcr compare`
        "agents": {
            r.agent: {
                "overall": r.overall.to_dict(),
                "entries": {label: s.to_dict() for label, s in r.entries.items()},
                "trajectories": str(r.trajectories_path.relative_to(config.report_dir)),
                "seconds": r.seconds,
            }
            for r in results
        },
    }


def _agent_view(result: AgentResult) -> dict[str, Any]:
    return {
        "agent": result.agent,
        "slug": _slug(result.agent),
        "overall": result.overall,
        "entries": result.entries,
        "failed": sum(t.status == "failed" for t in result.trajectories),
    }


def _plots(k: int, results: Sequence[AgentResult], outcome_names: list[str]) -> list[str]:
    labels = list(dict.fromkeys(label for r in results for label in r.entries))
    plots = [
        svg.bar_chart(
            "pass@1 by env configuration",
            labels,
            {r.agent: [r.entries[x].pass_at_1 if x in r.entries else 0.0 for x in labels] for r in results},
        )
    ]
    if k > 1:
        ks = list(range(1, k + 1))
        series = {f"{r.agent} pass@k": [r.overall.pass_at.get(j, 0.0) for j in ks] for r in results}
        series |= {f"{r.agent} pass^k": [r.overall.pass_hat.get(j, 0.0) for j in ks] for r in results}
        dashed = [f"{r.agent} pass^k" for r in results]
        plots.append(svg.line_chart("pass@k (solid) and pass^k (dashed)", ks, series, dashed=dashed))
    episodes = max((r.overall.episodes for r in results), default=1)
    plots.append(
        svg.bar_chart(
            "outcomes (episodes)",
            outcome_names,
            {r.agent: [r.overall.outcomes.get(o, 0) for o in outcome_names] for r in results},
            ymax=episodes,
            fmt="{:.0f}",
        )
    )
    plots.append(
        svg.bar_chart(
            "mean seconds per episode",
            ["policy", "env", "env: queued"],
            {
                r.agent: [
                    r.overall.policy_s / max(r.overall.episodes, 1),
                    r.overall.env_s / max(r.overall.episodes, 1),
                    r.overall.wait_s_per_episode,
                ]
                for r in results
            },
            ymax=0.0,
            fmt="{:.3f}",
        )
    )
    return plots


def _write_viewer(folder: Path, result: AgentResult, labels: dict[str, str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    template = _JINJA.from_string(templates.EPISODE)
    shown = image_tags(image_store(result.trajectories_path), folder)  # beside the stored trajectories
    rows = []
    for number, t in enumerate(result.trajectories, 1):
        label = labels.get(t.id.split(".")[0], t.env_id)
        page = template.render(
            t=t,
            agent=result.agent,
            label=label,
            outcome=outcome(t),
            prompt=prompt_messages(t),
            turns=episode_turns(t),
            previous=number - 1 if number > 1 else None,
            next=number + 1 if number < len(result.trajectories) else None,
            style=templates.STYLE,
            shown=shown,
        )
        (folder / f"{number}.html").write_text(page, encoding="utf-8")
        rows.append(
            {
                "number": number,
                "id": t.id,
                "label": label,
                "task": t.task_id,
                "sample": t.provenance.seed,
                "outcome": outcome(t),
                "reward": t.total_reward,
                "turns": len(t.steps),
                "tokens": t.cost.tokens_out,
            }
        )
    page = _JINJA.from_string(templates.EPISODES).render(agent=result.agent, rows=rows, style=templates.STYLE)
    (folder / "index.html").write_text(page, encoding="utf-8")


def prompt_messages(t: Trajectory) -> list[Message]:
    """The messages before the first assistant turn."""
    prompt = []
    for message in t.messages:
        if message.role == "assistant":
            break
        prompt.append(message)
    return prompt


def episode_turns(t: Trajectory) -> list[dict[str, Any]]:
    """Each step with its tool calls and the observation messages that answered it."""
    starts = [i for i, m in enumerate(t.messages) if m.role == "assistant"]
    turns = []
    for number, step in enumerate(t.steps):
        if number < len(starts):
            start = starts[number]
            end = starts[number + 1] if number + 1 < len(starts) else len(t.messages)
            calls = t.messages[start].tool_calls or parse_action(step.action)[0].tool_calls
            observation = t.messages[start + 1 : end]
        else:
            calls, observation = (), [Message("user", step.observation)]
        turns.append({"step": step, "calls": calls, "observation": observation})
    return turns
