#!/usr/bin/env bash
# Download the sdists gfcr/SWE-v0 builds its tasks from (small pure-Python projects that ship their
# own test suites; see gfcr.envs.swe.projects) into the venv's share/gfcr/swe, unless present; then
# generate and validate the default tasks once (cached in $GFCR_CACHE_DIR/swe, ~/.cache/gfcr/swe).
set -euo pipefail
PY=${1:-.venv/bin/python}
read -r dir requirements < <("$PY" -c "
from gfcr.envs.swe.projects import PROJECTS, sdist_dir
missing = [p.requirement for p in PROJECTS.values()
           if not (sdist_dir() / f\"{p.name.replace('-', '_')}-{p.version}.tar.gz\").exists()]
print(sdist_dir(), ' '.join(missing))")
if [ -n "$requirements" ]; then
    mkdir -p "$dir"
    echo "downloading the SWE env's source distributions: $requirements"
    "$PY" -m pip download -q --no-deps --no-binary :all: -d "$dir" $requirements
fi
"$PY" -m gfcr swe-tasks >/dev/null \
    || echo "setup_swe: the SWE tasks could not be generated now; gfcr/SWE-v0 generates them on first use" >&2
