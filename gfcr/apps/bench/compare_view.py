# ruff: noqa: E501  (HTML template lines)
"""The views of `gfcr compare`: the terminal's tables, and the HTML view — leaderboard, comparisons,
per-env breakdown, and each differing task's paired trajectories side by side (the bench report's
style and turn layout).

DIR/index.html         leaderboard, each run against the baseline, per env, tasks that differ
DIR/compare.json       the same as `gfcr compare --json`
DIR/pairs/N.html       one task's paired episodes: run A and run B turn by turn, side by side
DIR/images/            the images those pages show (copied from the runs' images/ folders)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jinja2 import Environment
from rich import box
from rich.table import Table

from gfcr.apps.bench import templates
from gfcr.apps.bench.metrics import outcome
from gfcr.apps.bench.report import episode_turns, image_tags, prompt_messages
from gfcr.apps.compare import Run, to_json
from gfcr.core import ImageStore

_JINJA = Environment(autoescape=True, trim_blocks=True, lstrip_blocks=True)
MAX_PAIR_PAGES = 500  # a view of thousands of differing tasks is not read; the JSON has them all

STYLE = (
    templates.STYLE
    + """
.pair { display: grid; grid-template-columns: 1fr 1fr; gap: 1rem; }
.pair > div { min-width: 0; }
.significant { font-weight: 600; }
"""
)

INDEX = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>gfcr compare</title><style>{{ style }}</style></head>
<body>
<h1>gfcr compare</h1>
<p>baseline: {{ result.baseline }}{% if not result.same_suite %} · <strong>the runs come from suites with different fingerprints</strong>{% endif %} · data: <a href="compare.json">compare.json</a></p>
<h2>Leaderboard</h2>
<table id="leaderboard"><tr><th>#</th><th>run</th><th>episodes</th><th>tasks</th><th>pass@1</th><th>mean reward</th><th>failed</th>
<th>tokens out / ep</th><th>policy s / ep</th><th>env s / ep</th><th>suite</th><th>fingerprint</th></tr>
{% for row in result.leaderboard %}<tr><td>{{ loop.index }}</td><td class="text">{{ row.run }}</td><td>{{ row.episodes }}</td><td>{{ row.tasks }}</td>
<td>{{ "%.3f"|format(row.pass_at_1) }}</td><td>{{ "%.3f"|format(row.mean_reward) }}</td><td>{{ row.failed }}</td>
<td>{{ "%.0f"|format(row.mean_tokens_out) }}</td><td>{{ "%.3f"|format(row.policy_s_per_episode) }}</td>
<td>{{ "%.3f"|format(row.env_s_per_episode) }}</td><td class="text">{{ row.suite }}</td><td class="text"><code>{{ row.suite_fingerprint[:12] }}</code></td></tr>
{% endfor %}</table>
{% for c in comparisons %}
<h2>{{ c.b }} vs {{ c.a }}</h2>
<table class="comparison"><tr><th>paired tasks</th><th>paired episodes</th><th>left out (failed)</th><th>pass@1 {{ c.a }}</th>
<th>pass@1 {{ c.b }}</th><th>difference</th><th>95% bootstrap interval</th><th>only {{ c.a }} solved</th><th>only {{ c.b }} solved</th><th>McNemar p</th></tr>
<tr class="{{ 'significant' if c.significant else '' }}"><td>{{ c.paired_tasks }}</td><td>{{ c.paired_episodes }}</td><td>{{ c.left_out_failed }}</td>
<td>{{ "%.3f"|format(c.pass_at_1_a) }}</td><td>{{ "%.3f"|format(c.pass_at_1_b) }}</td><td>{{ "%+.3f"|format(c.difference) }}</td>
<td>[{{ "%+.3f"|format(c.ci95[0]) }}, {{ "%+.3f"|format(c.ci95[1]) }}]</td><td>{{ c.b_only_a }}</td><td>{{ c.c_only_b }}</td>
<td>{{ "%.4g"|format(c.p_value) }}{% if c.significant %} (significant){% endif %}</td></tr></table>
{% if c.unpaired[0] or c.unpaired[1] %}<p>unpaired episodes (held by one run only): {{ c.unpaired[0] }} of {{ c.a }}, {{ c.unpaired[1] }} of {{ c.b }}</p>{% endif %}
<h3>By env configuration</h3>
<table class="by-env"><tr><th>env configuration</th><th>tasks</th><th>pass@1 {{ c.a }}</th><th>pass@1 {{ c.b }}</th><th>difference</th>
<th>only {{ c.a }}</th><th>only {{ c.b }}</th><th>McNemar p</th></tr>
{% for label, e in c.by_env.items() %}<tr><td>{{ label }}</td><td>{{ e.tasks }}</td><td>{{ "%.3f"|format(e.pass_at_1_a) }}</td>
<td>{{ "%.3f"|format(e.pass_at_1_b) }}</td><td>{{ "%+.3f"|format(e.difference) }}</td><td>{{ e.b_only_a }}</td><td>{{ e.c_only_b }}</td>
<td>{{ "%.4g"|format(e.p_value) }}</td></tr>
{% endfor %}</table>
<h3>Tasks that differ ({{ c.tasks|length }})</h3>
<table class="tasks"><tr><th>env configuration</th><th>task</th><th>{{ c.a }} solved</th><th>{{ c.b }} solved</th><th>side by side</th></tr>
{% for d in c.rows %}<tr><td>{{ d.label }}</td><td class="text">{{ d.task_id }}</td><td>{{ d.solved_a }} / {{ d.samples }}</td>
<td>{{ d.solved_b }} / {{ d.samples }}</td><td>{% if d.page %}<a href="pairs/{{ d.page }}.html">view</a>{% endif %}</td></tr>
{% endfor %}</table>
{% endfor %}
</body></html>
"""

PAIR = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{ task_id }} · {{ a }} vs {{ b }}</title><style>{{ style }}</style></head>
<body><nav><a href="../index.html">← comparison</a></nav>
<h1>{{ task_id }}</h1>
<p>{{ label }}</p>
<h2>Prompt</h2>
{% for m in prompt %}<details class="message"{% if m.text|length < 2000 %} open{% endif %}><summary class="role">{{ m.role }}
({{ m.text|length }} characters)</summary><pre>{{ m.text }}</pre>{{ shown(m) }}</details>{% endfor %}
{% for sample in samples %}
<h2>Sample {{ loop.index }}</h2>
<div class="pair">
{% for side in sample %}<div><h3>{{ side.run }}: <span class="{{ side.outcome }}">{{ side.outcome }}</span>, reward {{ "%.3f"|format(side.t.total_reward) }}</h3>
{% if side.t.failure %}<pre>{{ side.t.failure }}</pre>{% endif %}
{% for turn in side.turns %}<section class="turn"><h4>Turn {{ loop.index }}</h4>
<div class="message"><span class="role">assistant</span><pre>{{ turn.step.action }}</pre></div>
{% for call in turn.calls %}<div class="tool call"><span class="role">tool call</span> <code>{{ call.name }}</code><pre>{{ call.arguments|tojson }}</pre></div>{% endfor %}
{% for m in turn.observation %}<div class="message {{ 'tool' if m.role == 'tool' else '' }}"><span class="role">{{ m.role }}{% if m.name %} · {{ m.name }}{% endif %}</span><pre>{{ m.text }}</pre>{{ shown(m) }}</div>{% endfor %}
<p class="reward">reward {{ "%.3f"|format(turn.step.reward) }}</p></section>{% endfor %}
</div>{% endfor %}
</div>{% endfor %}
</body></html>
"""


def write_compare_view(folder: str | Path, result: dict[str, Any], runs: list[Run]) -> Path:
    """Write the comparison `result` (from `compare_runs`) of `runs` into `folder`; returns index.html."""
    root = Path(folder)
    (root / "pairs").mkdir(parents=True, exist_ok=True)
    (root / "compare.json").write_text(json.dumps(to_json(result), indent=2), encoding="utf-8")
    by_name = {run.name: run for run in runs}
    pair_template = _JINJA.from_string(PAIR)
    shown = image_tags(ImageStore(root / "images"), root / "pairs")
    pages = 0
    comparisons = []
    for c in result["comparisons"]:
        rows = []
        for d in c.tasks:
            page = None
            if pages < MAX_PAIR_PAGES:
                pages += 1
                page = pages
                context = _pair_context(by_name[c.a], by_name[c.b], d)
                html = pair_template.render(**context, style=STYLE, shown=shown)
                (root / "pairs" / f"{page}.html").write_text(html, encoding="utf-8")
            rows.append({**vars(d), "page": page})
        comparisons.append({**vars(c), "significant": c.significant, "rows": rows})
    index = root / "index.html"
    page_html = _JINJA.from_string(INDEX).render(result=result, comparisons=comparisons, style=STYLE)
    index.write_text(page_html, encoding="utf-8")
    return index


def _pair_context(a: Run, b: Run, difference: Any) -> dict[str, Any]:
    samples = []
    for trajectory_id in difference.ids:
        sides = []
        for run in (a, b):
            t = run.trajectories[trajectory_id]
            sides.append({"run": run.name, "t": t, "outcome": outcome(t), "turns": episode_turns(t)})
        samples.append(sides)
    first = a.trajectories[difference.ids[0]]
    return {
        "a": a.name,
        "b": b.name,
        "task_id": difference.task_id,
        "label": difference.label,
        "prompt": prompt_messages(first),
        "samples": samples,
    }


def compare_tables(result: dict[str, Any], show: int) -> list[Table]:
    """The leaderboard, then each comparison with its per-env rows and its most different tasks."""
    board = Table(title="leaderboard", title_justify="left", box=box.SIMPLE_HEAD)
    for column in ("#", "run", "episodes", "tasks", "pass@1", "reward", "failed", "tok/ep", "policy s/ep"):
        board.add_column(column, justify="left" if column == "run" else "right", overflow="fold")
    for rank, row in enumerate(result["leaderboard"], 1):
        board.add_row(str(rank), row["run"], str(row["episodes"]), str(row["tasks"]),
                      f"{row['pass_at_1']:.3f}", f"{row['mean_reward']:.3f}", str(row["failed"]),
                      f"{row['mean_tokens_out']:.0f}", f"{row['policy_s_per_episode']:.3f}")  # fmt: skip
    tables = [board]
    for c in result["comparisons"]:
        verdict = "significant" if c.significant else "not significant"
        title = (
            f"{c.b} vs {c.a}: pass@1 {c.pass_at_1_b:.3f} vs {c.pass_at_1_a:.3f}, "
            f"difference {c.difference:+.3f} "
            f"(95% CI [{c.ci95[0]:+.3f}, {c.ci95[1]:+.3f}]), McNemar p = {c.p_value:.4g}, {verdict}; "
            f"{c.paired_episodes} paired episodes over {c.paired_tasks} tasks"
            + (f", {c.left_out_failed} left out (failed)" if c.left_out_failed else "")
            + (f"; unpaired: {c.unpaired[0]} of {c.a}, {c.unpaired[1]} of {c.b}" if any(c.unpaired) else "")
        )
        envs = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD)
        for column in ("env configuration", "tasks", f"pass@1 {c.a}", f"pass@1 {c.b}", "difference", "p"):
            envs.add_column(
                column, justify="left" if column == "env configuration" else "right", overflow="fold"
            )
        for label, e in c.by_env.items():
            envs.add_row(label, str(e["tasks"]), f"{e['pass_at_1_a']:.3f}", f"{e['pass_at_1_b']:.3f}",
                         f"{e['difference']:+.3f}", f"{e['p_value']:.4g}")  # fmt: skip
        tables.append(envs)
        if c.tasks and show:
            tasks = Table(
                title=f"tasks that differ ({len(c.tasks)})", title_justify="left", box=box.SIMPLE_HEAD
            )
            for column in ("env configuration", "task", f"{c.a} solved", f"{c.b} solved"):
                tasks.add_column(column, overflow="fold")
            for d in c.tasks[:show]:
                tasks.add_row(d.label, d.task_id, f"{d.solved_a}/{d.samples}", f"{d.solved_b}/{d.samples}")
            tables.append(tasks)
    return tables
