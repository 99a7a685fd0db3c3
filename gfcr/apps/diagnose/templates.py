# ruff: noqa: E501  (HTML template lines)
"""The diagnosis page and the criteria section (Jinja2, autoescaped), in the bench report's style."""

CRITERIA = """<section class="criteria">
<h2>{{ title|default("Criteria") }}</h2>
{% for name in groups if name in criteria %}<h3>{{ name }}</h3>
<table class="criteria" id="criteria-{{ name }}">{% for key, value in criteria[name].items() %}
<tr><td>{{ key }}</td><td class="text">{{ value|cell(links) }}</td></tr>{% endfor %}</table>
{% endfor %}{% if criteria.note %}<p>{{ criteria.note }}</p>{% endif %}
{% if criteria.card %}<h3>reproducibility card</h3>
<table id="card">{% for key, value in criteria.card.items() %}<tr><td>{{ key }}</td><td class="text">{{ value|cell(links) }}</td></tr>{% endfor %}</table>{% endif %}
</section>
"""

PROPOSALS = """<section class="proposals" id="proposals">
<h2>Generated tasks · {{ drift.window }} round(s) a row</h2>
<p>{{ drift.summary }}</p>
{% if drift.flags %}<ul>{% for flag in drift.flags %}<li class="medium">{{ flag }}</li>{% endfor %}</ul>{% endif %}
{{ drift.rows|cell(links) }}
<p>claimed agreement: {{ drift.claimed_agreement_note }}</p>
</section>
"""

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>gfcr diagnose</title><style>{{ style }}
.high { color: #aa3377; font-weight: 600; } .medium { color: #cc6611; } .low { color: #997700; } .none { color: #228833; }
.not_measurable { color: #777; } th.text { text-align: left; }</style></head>
<body>
<h1>gfcr diagnose</h1>
<p>{{ time }} · gfcr {{ version }} · {% for s in sources %}<code>{{ s }}</code>{% if not loop.last %}, {% endif %}{% endfor %}</p>
{% for run, pathologies in runs.items() %}{% set prefix = run ~ "-" if run else "" %}
<h2>Pathologies{% if run %} · {{ run }}{% endif %}</h2>
<table id="{{ prefix }}pathologies"><tr><th>pathology</th><th class="text">severity</th><th class="text">finding</th></tr>
{% for p in pathologies %}<tr><td><a href="#{{ prefix }}{{ p.name }}">{{ p.name }}</a></td><td class="text {{ p.severity }}">{{ p.severity }}</td><td class="text">{{ headline(p) }}</td></tr>
{% endfor %}</table>
{% for p in pathologies %}<section class="pathology" id="{{ prefix }}{{ p.name }}">
<h3>{{ p.name }} · <span class="{{ p.severity }}">{{ p.severity }}</span></h3>
{% if p.levers %}<p><b>levers</b></p><ul>{% for lever in p.levers %}<li>{{ lever }}</li>{% endfor %}</ul>{% endif %}
<table class="evidence">{% for key, value in p.evidence.items() %}<tr><td>{{ key }}</td><td class="text">{{ value|cell(links) }}</td></tr>{% endfor %}</table>
</section>{% endfor %}{% endfor %}
{{ criteria_html|safe }}
</body></html>
"""
