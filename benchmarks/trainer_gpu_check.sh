#!/usr/bin/env bash
# The GPU checks of the bundled trainer's vLLM path, for a machine with an NVIDIA GPU (dev machines have none).
#
#   bash benchmarks/trainer_gpu_check.sh [OUT_DIR]     # from the repository root; PY=... picks the interpreter
#
# Needs a Python with vllm (it brings torch with CUDA and transformers) and gfcr installed with the train
# extra, e.g. `python -m pip install -e '.[gpu,train,dev]'`. About two minutes on one GPU. Checks:
#   1. sync_weights: after loading perturbed weights into the vLLM engine, vLLM's logprobs of its own greedy
#      tokens match the perturbed transformers model's (and did not before the sync);
#   2. `gfcr train` with rollout.backend = "vllm" runs SFT + RL steps end to end (weights synced each step)
#      and writes metrics and a checkpoint; bf16 autocast is on where the GPU supports it;
#   3. the same with [async] max_staleness = 1: rollouts overlap updates, no trained token over one version old.
# Everything it prints is also written to OUT_DIR (default /tmp/gfcr-trainer-gpu).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PY:-.venv/bin/python}"
[[ -x "$PY" ]] || PY="$(command -v python3)"
OUT="${1:-${OUT:-/tmp/gfcr-trainer-gpu}}"
mkdir -p "$OUT"
export VLLM_ENABLE_V1_MULTIPROCESSING=0  # the engine in this process: what the trainer uses

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/gpu.txt"
"$PY" -m gfcr.apps.cli tiny-model "$OUT/tiny-model" 2>&1 | tail -1

"$PY" - "$OUT/tiny-model" <<'PY' 2>&1 | tee "$OUT/sync_weights.txt"
import sys

import torch
from transformers import AutoModelForCausalLM

from gfcr.core.policy import Request, SamplingParams
from gfcr.agents.policies.vllm import VLLMPolicy, sync_weights
from gfcr.core import Message

path = sys.argv[1]
policy = VLLMPolicy(path, gpu_memory_utilization=0.2, enforce_eager=True, dtype="float32")
model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).cuda().eval()
torch.manual_seed(0)
with torch.no_grad():
    for p in model.parameters():
        p.add_(torch.randn_like(p) * 0.5)  # far enough from the original weights to tell them apart
request = Request((Message("user", "What is 2+2?"),), sampling=SamplingParams(temperature=0.0, max_tokens=16))


def gap() -> float:
    """Largest |vLLM logprob - transformers logprob| over vLLM's greedy tokens."""
    out = policy.generate([request])[0]
    ids = torch.tensor([list(out.prompt_ids) + list(out.completion_ids)], device="cuda")
    with torch.no_grad():
        logits = model(ids).logits[0, len(out.prompt_ids) - 1 : -1].float()
    hf = torch.log_softmax(logits, -1).gather(1, ids[0, len(out.prompt_ids):, None]).squeeze(1)
    return float((hf.cpu() - torch.tensor(out.logprobs)).abs().max())


before = gap()
sync_weights(policy, model.named_parameters(), version="1")
after = gap()
print(f"logprob gap to the perturbed model: before sync {before:.4f}, after sync {after:.4f}")
assert before > 0.1, "perturbation too small to test the sync"
assert after < 1e-2, "vLLM does not generate with the synced weights"
assert policy.version == "1"
print("sync_weights OK")
PY

"$PY" -m gfcr.apps.cli train examples/tooluse_tiny_cpu.toml \
  --set model.path="'$OUT/tiny-model'" --set out_dir="'$OUT/run'" --set rollout.backend='"vllm"' \
  --set 'rollout.vllm_options={gpu_memory_utilization=0.2, enforce_eager=true}' \
  --set steps=4 --set sft.steps=3 --set sft.episodes=64 --set log.eval_every=0 --set checkpoint_every=2 --set threads=0 \
  --no-resume 2>&1 | tee "$OUT/train.txt"
"$PY" - "$OUT/run" <<'PY' 2>&1 | tee -a "$OUT/train.txt"
import json, sys
from pathlib import Path
run = Path(sys.argv[1])
steps = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
assert [s["step"] for s in steps] == list(range(1, 8)), [s["step"] for s in steps]
assert all("rollout/reward_mean" in s for s in steps[3:]), "RL steps must log rollouts"
assert (run / "checkpoints" / "step-000007" / "state.pt").exists()
print("vLLM training run OK:", {k: round(v, 3) for k, v in steps[-1].items() if isinstance(v, float)})
PY

# 3. asynchronous training on the vLLM engine: rollouts run one version ahead of the updates while
#    sync_weights pushes each step's weights under the engine's lock; every trained token names the
#    version that sampled it, none more than one behind.
"$PY" -m gfcr.apps.cli train examples/tooluse_tiny_cpu.toml \
  --set model.path="'$OUT/tiny-model'" --set out_dir="'$OUT/run-async'" --set rollout.backend='"vllm"' \
  --set 'rollout.vllm_options={gpu_memory_utilization=0.2, enforce_eager=true}' \
  --set steps=6 --set sft.steps=0 --set log.eval_every=0 --set checkpoint_every=0 --set threads=0 \
  --set async.max_staleness=1 --no-resume 2>&1 | tee "$OUT/train_async.txt"
"$PY" - "$OUT/run-async" <<'PY' 2>&1 | tee -a "$OUT/train_async.txt"
import json, sys
from pathlib import Path
steps = [json.loads(line) for line in (Path(sys.argv[1]) / "metrics.jsonl").read_text().splitlines()]
assert [s["step"] for s in steps] == list(range(1, 7)), [s["step"] for s in steps]
assert all(s["async/staleness_max"] <= 1 for s in steps), [s["async/staleness_max"] for s in steps]
assert all("async/wait_s" in s for s in steps)
print("vLLM async run OK:", [(s["step"], s["async/staleness_max"], round(s["async/wait_s"], 2)) for s in steps])
PY
