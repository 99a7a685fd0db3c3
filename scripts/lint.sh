#!/usr/bin/env bash
# The static checks `make test` runs before the tests: ruff over every Python file, and mypy over
# the library as the one `gfcr` namespace that pyproject's package-dir mapping installs.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
python=${PYTHON:-$root/.venv/bin/python}

"$python" -m ruff check gfcr envs agents trainers sandboxes tests benchmarks examples

# mypy has no package-dir mapping: it checks a tree of links laid out as the installed package
# (gfcr/envs -> envs/, ...), kept in .mypy_tree/ so that its cache stays valid between runs.
tree=$root/.mypy_tree
rm -rf "$tree" && mkdir -p "$tree/gfcr"
for entry in gfcr/*; do ln -s "$root/$entry" "$tree/gfcr/"; done
for folder in envs agents trainers sandboxes; do ln -s "$root/$folder" "$tree/gfcr/$folder"; done
cd "$tree" && "$python" -m mypy --config-file "$root/pyproject.toml" --cache-dir "$root/.mypy_cache" -p gfcr
