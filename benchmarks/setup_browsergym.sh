#!/usr/bin/env bash
# Creates benchmarks/.venv-browsergym (git-ignored): BrowserGym's MiniWoB envs (browsergym-miniwob 0.14.3,
# which pins Playwright 1.44) for benchmarks/browser.py to run beside gfcr/Browser-v0.
#
#   bash benchmarks/setup_browsergym.sh            # from the repository root; PYTHON=... to pick the interpreter
#
# `playwright install` cannot download here, so Playwright 1.44 is pointed at Debian's Chromium: the venv gets
# a browsers folder holding chromium-1117/chrome-linux/chrome (the path Playwright 1.44 looks for) linked to
# /usr/lib/chromium/chromium; benchmarks/browser.py sets PLAYWRIGHT_BROWSERS_PATH to it. The MiniWoB pages
# come from the `miniwob` package of gfcr's own venv (MINIWOB_URL=file://…), the same files gfcr serves.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv-browsergym"
python="${PYTHON:-/root/.pyenv/versions/3.11.7/bin/python}"
[[ -x "$python" ]] || python="$(command -v python3.11 || command -v python3)"
chromium="${CHROMIUM:-/usr/lib/chromium/chromium}"
[[ -x "$chromium" ]] || { echo "no Chromium at $chromium: apt-get install chromium, or set CHROMIUM=" >&2; exit 1; }

"$python" -m venv --clear "$venv"
constraints="$(mktemp)"
trap 'rm -f "$constraints"' EXIT
# `pip freeze` of the venv measured in docs/ (Python 3.11.7, linux x86_64).
cat >"$constraints" <<'PINS'
annotated-doc==0.0.7
annotated-types==0.8.0
anyio==4.16.0
attrs==26.1.0
beautifulsoup4==4.15.0
browsergym-core==0.14.3
browsergym-miniwob==0.14.3
cffi==2.1.1
click==8.5.1
cloudpickle==3.1.3
cryptography==50.0.2
Farama-Notifications==0.0.6
greenlet==3.0.3
gymnasium==1.4.0
h11==0.16.0
httpcore2==2.16.2
httpx2==2.16.2
idna==3.20
jsonschema==4.26.0
jsonschema-specifications==2025.9.1
lxml==5.4.0
markdown-it-py==4.3.0
mcp==2.3.0
mcp-types==2.3.0
mdurl==0.1.2
numpy==2.4.6
opentelemetry-api==1.45.2
pillow==13.0.0
playwright==1.44.0
pycparser==3.12
pydantic==2.14.4
pydantic_core==2.50.5
pyee==11.1.0
Pygments==2.21.0
PyJWT==2.15.1
pyparsing==3.3.3
python-dotenv==1.2.4
python-multipart==0.0.34
referencing==0.37.0
rich==15.0.0
rpds-py==2026.9.1
shellingham==1.5.4
soupsieve==4.1.3
sse-starlette==3.7.0
starlette==1.10.0
truststore==0.10.5
typer==0.29.2
typing-inspection==0.4.5
typing_extensions==4.16.0
uvicorn==0.54.0
PINS

"$venv/bin/pip" install -q -c "$constraints" browsergym-miniwob==0.14.3
browsers="$venv/ms-playwright/chromium-1117/chrome-linux"
mkdir -p "$browsers"
ln -sf "$chromium" "$browsers/chrome"
PLAYWRIGHT_BROWSERS_PATH="$venv/ms-playwright" "$venv/bin/python" - <<'EOF'
from importlib.metadata import version
from playwright.sync_api import sync_playwright
import browsergym.miniwob  # noqa: F401
with sync_playwright() as p:
    browser = p.chromium.launch()
    print("browsergym venv ready: browsergym-miniwob", version("browsergym-miniwob"), "playwright", version("playwright"),
          "driving Chromium", browser.version)
    browser.close()
EOF
