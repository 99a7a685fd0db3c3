#!/usr/bin/env bash
# Download the sdists gfcr/SWE-v0 builds its tasks from (small pure-Python projects that ship their
# own test suites; see gfcr.envs.swe.projects) into the venv's share/gfcr/swe, unless present.
set -euo pipefail
PY=${1:-.venv/bin/python}
read -r dir requirements < <("$PY" -c "
from gfcr.envs.swe.projects import PROJECTS, sdist_dir
missing = [p.requirement for p in PROJECTS.values()
           if not (sdist_dir() / f\"{p.name.replace('-', '_')}-{p.version}.tar.gz\").exists()]
print(sdist_dir(), ' '.join(missing))")
[ -z "$requirements" ] && exit 0
mkdir -p "$dir"
echo "downloading the SWE env's source distributions: $requirements"
"$PY" -m pip download -q --no-deps --no-binary :all: -d "$dir" $requirements
