#!/usr/bin/env bash
# Creates benchmarks/.venv-trl (git-ignored): TRL, the peer of benchmarks/trainer.py, in its own venv so
# that its pins never touch the project's. CPU torch (pinned like the project's: a plain `torch` pulls a
# multi-GB CUDA build), the same transformers major as the project, and gfcr itself (no deps beyond its
# own) so the benchmark can build the same prompts and rewards from gfcr/ToolUse-v0.
#
#   bash benchmarks/setup_trl.sh            # from the repository root; PYTHON=... to pick the interpreter
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv-trl"
python="${PYTHON:-/root/.pyenv/versions/3.11.7/bin/python}"
[[ -x "$python" ]] || python="$(command -v python3.11 || command -v python3)"

"$python" -m venv --clear "$venv"
"$venv/bin/pip" install -q --upgrade pip
"$venv/bin/pip" install -q "torch==2.13.0" "trl==1.16.0" "transformers>=5,<6" "datasets" "tokenizers" "jinja2"
"$venv/bin/pip" install -q -e "$here/.."   # gfcr: the task (prompts, tools, reward) and the tiny model
"$venv/bin/python" -c "import trl, torch, transformers; print('trl', trl.__version__, 'torch', torch.__version__, 'transformers', transformers.__version__)"
