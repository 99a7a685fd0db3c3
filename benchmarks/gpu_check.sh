#!/usr/bin/env bash
# The GPU checks of gfcr's vllm: backend, for a machine with an NVIDIA GPU (the dev machines and CI have none).
#
#   bash benchmarks/gpu_check.sh [OUT_DIR]        # from the repository root; PY=... picks the interpreter
#
# Needs a Python with vllm (it brings torch with CUDA and transformers) and gfcr's own dependencies, e.g.
#   python -m pip install -e '.[gpu,dev]'  (or, where vllm is already installed: pip install --no-deps -e .)
# Runs: the vLLM tests (skipped elsewhere) and the token-in-token-out test on both backends, then
# benchmarks/runner_vllm.py (runner tokens/s ÷ vLLM generate tokens/s; goal >= 0.9). Everything it prints
# is also written to OUT_DIR (default /tmp/gfcr-gpu): gpu.txt, pytest.txt, runner_vllm.{txt,json}.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PY:-.venv/bin/python}"
[[ -x "$PY" ]] || PY="$(command -v python3)"
OUT="${1:-${OUT:-/tmp/gfcr-gpu}}"
mkdir -p "$OUT"

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/gpu.txt"
"$PY" - <<'PY' | tee -a "$OUT/gpu.txt"
import torch, vllm
assert torch.cuda.is_available(), "torch sees no CUDA device"
print("vllm", vllm.__version__, "torch", torch.__version__, "device", torch.cuda.get_device_name(0))
PY
# -rs lists skips with their reasons: on a GPU machine nothing here may be skipped.
"$PY" -m pytest -q -rs -p no:cacheprovider tests/agents/test_vllm.py tests/agents/test_tito.py 2>&1 | tee "$OUT/pytest.txt"
"$PY" benchmarks/runner_vllm.py --json "$OUT/runner_vllm.json" 2>&1 | tee "$OUT/runner_vllm.txt"
