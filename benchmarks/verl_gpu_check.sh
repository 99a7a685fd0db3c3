#!/usr/bin/env bash
# The GPU check of gfcr.integrations.verl: veRL's own PPO trainer (GRPO) with vLLM rollouts, running
# gfcr/ToolUse-v0 episodes through GfcrAgentLoop. For a machine with an NVIDIA GPU (dev machines have none).
#
#   bash benchmarks/verl_gpu_check.sh [OUT_DIR]     # from the repository root; PY=... picks the interpreter
#
# Needs a Python with verl 0.9 and vLLM: .venv-verl (bash scripts/setup_verl.sh) plus
#   .venv-verl/bin/python -m pip install vllm==0.31.0 torch==2.13.0
# (what pip resolves for verl[vllm]==0.9.0 with transformers 5.10.4; on a GPU machine torch 2.13.0 is
# the CUDA build). Set VERL_INSTALL=1 to run both steps here (needs PyPI). Checks, on the gfcr tiny
# model (random weights: rewards near 0 are expected; the check is that the loop runs):
#   1. `verl.trainer.main_ppo` runs 2 GRPO steps with actor_rollout_ref.rollout.name=vllm and the gfcr
#      agent loop, and exits 0;
#   2. its console log shows the agent loop's rewards reached the trainer (critic/score/mean) and both steps;
#   3. the rollout pipeline's per-episode stages ran inside veRL's workers, from a recipe
#      (write_agent_loop_config(path, recipe=...)): its [generate.guidance] plan is in every rollout's
#      prompt (veRL's own rollout dump, trainer.rollout_data_dir) and every rollout records it
#      (gfcr_guided = 1.0, also in the validation metrics val-aux/.../gfcr_guided); its [control]
#      length budget (max_length = 1: stop an episode that goes on after its first turn) is asked after
#      every step, and each rollout records whether it stopped (gfcr_stopped; ToolUse ends at a random
#      model's first plain answer, so few or none stop here: tests/integrations/test_verl.py shows it
#      stopping on CPU).
# Everything it prints is also written to OUT_DIR (default /tmp/gfcr-verl-gpu).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PY:-.venv-verl/bin/python}"
OUT="${1:-${OUT:-/tmp/gfcr-verl-gpu}}"
mkdir -p "$OUT"

if [[ ${VERL_INSTALL:-0} == 1 ]]; then
    bash scripts/setup_verl.sh
    "$PY" -m pip install -q vllm==0.31.0 torch==2.13.0
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/gpu.txt"
"$PY" - <<'PY' | tee -a "$OUT/gpu.txt"
import torch, vllm, verl, transformers
assert torch.cuda.is_available(), "torch sees no CUDA device"
print("verl", verl.__version__, "vllm", vllm.__version__, "torch", torch.__version__,
      "transformers", transformers.__version__, "device", torch.cuda.get_device_name(0))
PY

# The data, the recipe of the per-episode stages, the agent-loop config the Ray workers read, the model.
"$PY" -c 'from gfcr.apps.cli import app; app()' tiny-model "$OUT/tiny-model" 2>&1 | tail -1  # gfcr.apps.cli has no __main__
cat > "$OUT/recipe.toml" <<'TOML'
# the rollout pipeline's stages that act on one episode inside veRL's agent loop
[control]
max_length = 1  # the length budget: stop an episode after any turn once its response is over 1 token

[generate.guidance]
kind = "plan"
plan = "Call the lookup tool, then answer with the code it returns."
TOML
"$PY" - "$OUT" <<'PY'
import sys
from gfcr.integrations import verl as gfcr_verl
out = sys.argv[1]
gfcr_verl.to_parquet(f"{out}/train.parquet", "gfcr/ToolUse-v0", n=64, num_tasks=64)
gfcr_verl.to_parquet(f"{out}/val.parquet", "gfcr/ToolUse-v0", n=8, seed=1, num_tasks=64)
print(gfcr_verl.write_agent_loop_config(f"{out}/agent_loops.yaml", recipe=f"{out}/recipe.toml").read_text())
PY

# Two GRPO steps: 8 prompts x 4 samples, multi-turn responses up to 128 tokens, sdpa (no flash-attn needed).
"$PY" -m verl.trainer.main_ppo \
  algorithm.adv_estimator=grpo \
  data.train_files="$OUT/train.parquet" data.val_files="$OUT/val.parquet" \
  data.train_batch_size=8 data.max_prompt_length=1024 data.max_response_length=128 \
  actor_rollout_ref.model.path="$OUT/tiny-model" \
  actor_rollout_ref.model.use_remove_padding=False \
  +actor_rollout_ref.model.override_config.attn_implementation=sdpa \
  actor_rollout_ref.actor.optim.lr=1e-4 \
  actor_rollout_ref.actor.ppo_mini_batch_size=8 \
  actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8 \
  actor_rollout_ref.actor.use_kl_loss=False \
  actor_rollout_ref.rollout.name=vllm \
  actor_rollout_ref.rollout.n=4 \
  actor_rollout_ref.rollout.gpu_memory_utilization=0.3 \
  actor_rollout_ref.rollout.enforce_eager=True \
  actor_rollout_ref.rollout.tensor_model_parallel_size=1 \
  actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8 \
  actor_rollout_ref.rollout.agent.num_workers=1 \
  actor_rollout_ref.rollout.agent.agent_loop_config_path="$OUT/agent_loops.yaml" \
  actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=8 \
  trainer.n_gpus_per_node=1 trainer.nnodes=1 trainer.total_training_steps=2 \
  trainer.logger='[console]' trainer.val_before_train=True trainer.test_freq=-1 trainer.save_freq=-1 \
  trainer.project_name=gfcr trainer.experiment_name=verl-gpu-check \
  trainer.rollout_data_dir="$OUT/rollouts" \
  trainer.default_local_dir="$OUT/checkpoints" 2>&1 | tee "$OUT/main_ppo.txt"

grep -q "critic/score/mean" "$OUT/main_ppo.txt" || { echo "no critic/score/mean in the log: rewards did not reach the trainer" >&2; exit 1; }
grep -q "^step:2 - " "$OUT/main_ppo.txt" || { echo "main_ppo did not log step 2" >&2; exit 1; }
grep -q "val-aux/.*gfcr_guided" "$OUT/main_ppo.txt" || { echo "no gfcr_guided in the validation metrics" >&2; exit 1; }
# The recipe's stages in veRL's own dump of the training rollouts (one JSON line per rollout and step).
"$PY" - "$OUT" <<'PY' | tee "$OUT/stages.txt"
import json, sys, tomllib
from pathlib import Path
out = Path(sys.argv[1])
plan = tomllib.loads((out / "recipe.toml").read_text())["generate"]["guidance"]["plan"]
rows = [json.loads(line) for dump in sorted((out / "rollouts").glob("*.jsonl")) for line in dump.open()]
assert {row["step"] for row in rows} == {1, 2}, f"expected the rollouts of steps 1 and 2, got {sorted({r['step'] for r in rows})}"
unguided = [row["input"][-200:] for row in rows if plan not in row["input"] or row.get("gfcr_guided") != 1.0]
assert not unguided, f"{len(unguided)} of {len(rows)} rollouts lack the recipe's plan: {unguided[:2]}"
stopped = [row["gfcr_stopped"] for row in rows]
assert set(stopped) <= {0.0, 1.0} and len(stopped) == len(rows), "a rollout without gfcr_stopped"
print(f"recipe stages: {len(rows)} rollouts over 2 steps, every prompt guided by the plan; "
      f"{int(sum(stopped))} stopped by the length budget after a turn that did not end the episode")
PY
echo "veRL + vLLM + GfcrAgentLoop OK: $(grep -o 'critic/score/mean:[^ ]*' "$OUT/main_ppo.txt" | tail -1)"
