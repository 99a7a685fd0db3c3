# ruff: noqa: E501  (HTML template lines)
"""The bench report's HTML templates (Jinja2, autoescaped: model output is never markup)."""

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 1100px; color: #222; padding: 0 1rem; }
table { border-collapse: collapse; margin: .5rem 0 1.5rem; }
th, td { border: 1px solid #ccc; padding: .25rem .5rem; text-align: right; vertical-align: top; }
th:first-child, td:first-child, td.text { text-align: left; }
th { background: #f3f3f3; }
pre { white-space: pre-wrap; word-break: break-word; background: #f7f7f7; padding: .5rem; margin: .25rem 0; }
.turn { border-left: 4px solid #4477aa; padding-left: .75rem; margin: 1rem 0; }
.role { font-weight: 600; }
.tool { border-left: 4px solid #228833; padding-left: .5rem; }
.solved { color: #228833; } .failed, .unsolved, .truncated { color: #aa3377; }
svg .title { font-weight: 600; font-size: 13px; } svg .tick { font-size: 11px; fill: #444; }
svg .value { font-size: 10px; fill: #222; }
table.nested { margin: 0; } table.nested td, table.nested th { border-color: #e3e3e3; padding: .1rem .35rem; text-align: left; }
nav a { margin-right: 1rem; }
img.shown { display: block; max-width: 100%; border: 1px solid #ccc; margin: .25rem 0; }
"""

INDEX = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>gfcr bench · {{ suite }}</title><style>{{ style }}</style></head>
<body>
<h1>gfcr bench · {{ suite }}</h1>
<p>{{ time }} · gfcr {{ version }} · k = {{ k }} · {{ tasks }} tasks · results: <a href="results.json">results.json</a></p>
{% if fingerprint %}<p id="suite">suite {{ suite }} version {{ suite_version }} · fingerprint <code>{{ fingerprint }}</code></p>{% endif %}
<h2>Summary</h2>
<table id="summary">
<tr><th>agent</th><th>episodes</th><th>pass@1</th><th>pass@{{ k }}</th><th>pass^{{ k }}</th><th>mean reward</th>
<th>tokens in / ep</th><th>tokens out / ep</th><th>policy s, total</th><th>env s, total</th><th>failed</th><th>episodes</th>
<th>policy s / ep</th><th>env s / ep</th><th>wait s / ep</th></tr>
{% for a in agents %}<tr>
<td>{{ a.agent }}</td><td>{{ a.overall.episodes }}</td><td>{{ "%.3f"|format(a.overall.pass_at_1) }}</td>
<td>{{ "%.3f"|format(a.overall.pass_at.get(k, 0)) }}</td><td>{{ "%.3f"|format(a.overall.pass_hat.get(k, 0)) }}</td>
<td>{{ "%.3f"|format(a.overall.mean_reward) }}</td><td>{{ "%.0f"|format(a.overall.mean_tokens_in) }}</td>
<td>{{ "%.0f"|format(a.overall.mean_tokens_out) }}</td><td>{{ "%.2f"|format(a.overall.policy_s) }}</td>
<td>{{ "%.2f"|format(a.overall.env_s) }}</td><td>{{ a.failed }}</td>
<td><a href="episodes/{{ a.slug }}/index.html">read episodes</a></td>
<td>{{ "%.3f"|format(a.overall.policy_s / [a.overall.episodes, 1]|max) }}</td><td>{{ "%.3f"|format(a.overall.env_s / [a.overall.episodes, 1]|max) }}</td>
<td>{{ "%.3f"|format(a.overall.wait_s_per_episode) }}</td></tr>
{% endfor %}</table>
{% if wait_resources %}<h2>Waiting for shared resources</h2>
<p>Seconds the episodes queued (part of env s) for env servers, sandboxes, LLM judges and users, in all and per episode.</p>
<table id="waiting"><tr><th>agent</th>{% for w in wait_resources %}<th>{{ w }} s</th><th>{{ w }} s / ep</th>{% endfor %}</tr>
{% for a in agents %}<tr><td>{{ a.agent }}</td>{% for w in wait_resources %}<td>{{ "%.3f"|format(a.overall.wait_s.get(w, 0)) }}</td>
<td>{{ "%.3f"|format(a.overall.wait_s.get(w, 0) / [a.overall.episodes, 1]|max) }}</td>{% endfor %}</tr>
{% endfor %}</table>{% endif %}
<h2>Plots</h2>
{% for plot in plots %}<figure>{{ plot|safe }}</figure>{% endfor %}
<h2>By env configuration</h2>
{% for a in agents %}<h3>{{ a.agent }}</h3>
<table class="entries"><tr><th>env configuration</th><th>tasks</th><th>episodes</th><th>pass@1</th><th>pass@{{ k }}</th>
<th>pass^{{ k }}</th><th>mean reward</th><th>tokens out / ep</th><th>outcomes</th></tr>
{% for label, s in a.entries.items() %}<tr><td>{{ label }}</td><td>{{ s.tasks }}</td><td>{{ s.episodes }}</td>
<td>{{ "%.3f"|format(s.pass_at_1) }}</td><td>{{ "%.3f"|format(s.pass_at.get(k, 0)) }}</td>
<td>{{ "%.3f"|format(s.pass_hat.get(k, 0)) }}</td><td>{{ "%.3f"|format(s.mean_reward) }}</td>
<td>{{ "%.0f"|format(s.mean_tokens_out) }}</td>
<td class="text">{% for o, n in s.outcomes.items() %}{{ o }}: {{ n }}{% if not loop.last %}, {% endif %}{% endfor %}</td></tr>
{% endfor %}</table>{% endfor %}
<h2>Outcomes and failures by reason</h2>
<table id="outcomes"><tr><th>agent</th>{% for o in outcome_names %}<th>{{ o }}</th>{% endfor %}</tr>
{% for a in agents %}<tr><td>{{ a.agent }}</td>{% for o in outcome_names %}<td>{{ a.overall.outcomes.get(o, 0) }}</td>{% endfor %}</tr>
{% endfor %}</table>
{{ criteria|safe }}
</body></html>
"""

EPISODES = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{ agent }} · episodes</title><style>{{ style }}</style></head>
<body><nav><a href="../../index.html">← report</a></nav>
<h1>{{ agent }}: {{ rows|length }} episodes</h1>
<table id="episodes"><tr><th>#</th><th>env configuration</th><th>task</th><th>sample</th><th>outcome</th><th>reward</th>
<th>turns</th><th>tokens out</th></tr>
{% for r in rows %}<tr id="{{ r.id }}"><td><a href="{{ r.number }}.html">{{ r.number }}</a></td><td class="text">{{ r.label }}</td>
<td class="text">{{ r.task }}</td><td>{{ r.sample }}</td><td class="{{ r.outcome }} text">{{ r.outcome }}</td>
<td>{{ "%.2f"|format(r.reward) }}</td><td>{{ r.turns }}</td><td>{{ r.tokens }}</td></tr>
{% endfor %}</table></body></html>
"""

EPISODE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{ t.task_id }} · {{ agent }}</title><style>{{ style }}</style></head>
<body><nav><a href="index.html">← episodes</a>{% if previous %}<a href="{{ previous }}.html">← previous</a>{% endif %}
{% if next %}<a href="{{ next }}.html">next →</a>{% endif %}</nav>
<h1>{{ t.task_id }}</h1>
<table id="facts">
<tr><td>agent</td><td class="text">{{ agent }} ({{ t.provenance.policy_version }})</td></tr>
<tr><td>env configuration</td><td class="text">{{ label }}</td></tr>
<tr><td>outcome</td><td class="text {{ outcome }}">{{ outcome }}</td></tr>
<tr><td>total reward</td><td class="text">{{ "%.3f"|format(t.total_reward) }}</td></tr>
{% if t.failure %}<tr><td>failure</td><td class="text"><pre>{{ t.failure }}</pre></td></tr>{% endif %}
<tr><td>cost</td><td class="text">{{ t.cost.tokens_in }} tokens in, {{ t.cost.tokens_out }} out;
policy {{ "%.3f"|format(t.cost.policy_s) }} s, env {{ "%.3f"|format(t.cost.env_s) }} s{% for w, seconds in t.cost.wait_s.items() %}{% if loop.first %} (queued: {% endif %}{{ w }} {{ "%.3f"|format(seconds) }} s{% if loop.last %}){% else %}, {% endif %}{% endfor %}</td></tr>
{% if t.tokens %}<tr><td>token data</td><td class="text">{{ t.tokens.prompt_ids|length }} prompt ids,
{{ t.tokens.completion_ids|length }} completion ids ({{ t.tokens.loss_mask|sum }} with loss)</td></tr>{% endif %}
<tr><td>trajectory id</td><td class="text">{{ t.id }}</td></tr>
</table>
<h2>Prompt</h2>
{% for m in prompt %}<details class="message"{% if m.role == "system" or m.text|length < 2000 %} open{% endif %}><summary class="role">{{ m.role }}
({{ m.text|length }} characters)</summary><pre>{{ m.text }}</pre>{{ shown(m) }}</details>{% endfor %}
<h2>Tools offered</h2>
{% for tool in t.tools %}{% set f = tool.function or tool %}<details class="tool spec" open><summary><code>{{ f.name }}</code> — {{ f.description }}</summary>
<pre>{{ f.parameters|schema }}</pre></details>{% else %}<p id="no-tools">none: the model was offered no tools (or the trajectory predates their recording)</p>{% endfor %}
{% for turn in turns %}<section class="turn" id="turn-{{ loop.index }}">
<h2>Turn {{ loop.index }}</h2>
<div class="message"><span class="role">assistant</span><pre>{{ turn.step.action }}</pre></div>
{% for call in turn.calls %}<div class="tool call"><span class="role">tool call</span> <code>{{ call.name }}</code><pre>{{ call.arguments|tojson }}</pre></div>{% endfor %}
{% for m in turn.observation %}<div class="message {{ 'tool' if m.role == 'tool' else '' }}"><span class="role">{{ m.role }}{% if m.name %} · {{ m.name }}{% endif %}</span><pre>{{ m.text }}</pre>{{ shown(m) }}</div>{% endfor %}
<p class="reward">reward {{ "%.3f"|format(turn.step.reward) }}{% if turn.step.terminated %} · terminated{% endif %}{% if turn.step.truncated %} · truncated{% endif %}{% if turn.step.finish_reason == "length" %} · <span class="truncated cut">cut at max_tokens</span>{% endif %}
· signals: {% for key, value in turn.step.signals.items() %}{{ key }}={{ value }}{% if not loop.last %}, {% endif %}{% endfor %}</p>
</section>{% endfor %}
</body></html>
"""
