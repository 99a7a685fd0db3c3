#!/usr/bin/env bash
# The GPU checks of gfcr's vllm: backend, for a machine with an NVIDIA GPU (the dev machines and CI have none).
#
#   bash benchmarks/gpu_check.sh [OUT_DIR]        # from the repository root; PY=... picks the interpreter
#
# Needs a Python with vllm (it brings torch with CUDA and transformers) and gfcr's own dependencies, e.g.
#   python -m pip install -e '.[gpu,dev]'  (or, where vllm is already installed: pip install --no-deps -e .)
# Runs: the vLLM tests (skipped elsewhere; a vision-language model given images among them) and the
# token-in-token-out test on both backends, a tree
# rollout that must hit vLLM's prefix cache (its children continue their parents' prefixes), then
# benchmarks/runner_vllm.py (runner tokens/s ÷ vLLM generate tokens/s; goal >= 0.9). Everything it prints
# is also written to OUT_DIR (default /tmp/gfcr-gpu): gpu.txt, pytest.txt, prefix_cache.txt,
# runner_vllm.{txt,json}.
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
# One tree step (2 prompts x 8 samples: 2 roots a prompt, each branched at its middle into 3
# children) on the tiny model: vLLM's counters (kept only with disable_log_stats=False) must show
# prefix cache hits, since VLLMPolicy turns enable_prefix_caching on.
"$PY" - <<'PY' 2>&1 | tee "$OUT/prefix_cache.txt"
import tempfile

from vllm.v1.metrics.reader import Counter

from gfcr.agents import RunnerConfig, episodes_for_env
from gfcr.agents.policies.tiny_model import write_tiny_model
from gfcr.agents.policies.vllm import VLLMPolicy
from gfcr.core import SamplingParams
from gfcr.trainers.config import PipelineConfig
from gfcr.trainers.pipeline import RolloutPipeline

model = write_tiny_model(tempfile.mkdtemp(), vocab_size=400, corpus_tasks=20)
policy = VLLMPolicy(model, disable_log_stats=False, enforce_eager=True, gpu_memory_utilization=0.3)
kwargs = {"dataset": "reasoning_gym", "generators": ["chain_sum"], "size": 20, "answer_format": "plain"}
tasks = episodes_for_env("gfcr/Math-v0", 20, kwargs=kwargs)
tree = PipelineConfig.from_dict({"generate": {"tree": {"segments": 2, "children": 3}}})
runner = RunnerConfig(concurrency=16, sampling=SamplingParams(temperature=1.0, max_tokens=48))
pipeline = RolloutPipeline.from_config(policy, tasks, tree, prompts_per_step=2, group_size=8, runner=runner)
batch = pipeline.step()
counters = {m.name: m.value for m in policy.llm.get_metrics() if isinstance(m, Counter)}
hits, queries = counters["vllm:prefix_cache_hits"], counters["vllm:prefix_cache_queries"]
print(f"tree step: {len(batch.generated)} episodes; prefix cache hits: {hits} of {queries} prompt tokens")
assert hits > 0, "a tree rollout reused nothing from vLLM's prefix cache: is enable_prefix_caching on?"
PY
"$PY" benchmarks/runner_vllm.py --json "$OUT/runner_vllm.json" 2>&1 | tee "$OUT/runner_vllm.txt"
