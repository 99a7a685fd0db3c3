"""Memory of the update's token logprobs: gfcr's chunked `SelectedLogprob` against autograd's
log-softmax and gather (what the trainer did before, and what most trainers do).

One forward and backward pass of a (batch x length) micro-batch of random ids through a causal
LM, each variant in its own process; reported: the peak resident memory the pass added over the
loaded model (`ru_maxrss` after, minus the resident size before), the pass's seconds, and the size
of one (batch, length, vocab) float32 tensor for scale.

    .venv/bin/python benchmarks/logprob_memory.py --model runs/smollm2 --batch 8 --length 300
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

VARIANTS = ("autograd log-softmax", "gfcr chunked")


def resident_mb() -> float:
    """The process's resident memory now, in MB (Linux)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * resource.getpagesize() / 2**20


def measure(model_path: str, variant: str, batch: int, length: int) -> dict[str, float]:
    """One forward and backward pass of `variant` in this process: added peak MB and seconds."""
    import torch
    from transformers import AutoModelForCausalLM

    from gfcr.trainers.batching import MicroBatch, token_logprobs

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32)
    ids = torch.randint(0, model.config.vocab_size, (batch, length))
    micro = MicroBatch(ids, torch.ones_like(ids), *(torch.zeros(batch, length - 1) for _ in range(4)))
    before = resident_mb()
    start = time.perf_counter()
    if variant == "gfcr chunked":
        logprobs = token_logprobs(model, micro)
    else:
        logits = model(input_ids=ids, attention_mask=micro.attention_mask).logits[:, :-1]
        logprobs = torch.log_softmax(logits.float(), dim=-1).gather(-1, ids[:, 1:, None]).squeeze(-1)
    logprobs.sum().backward()
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux
    return {"added_peak_mb": peak - before, "seconds": seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="runs/smollm2")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--length", type=int, default=300)
    parser.add_argument("--variant", choices=VARIANTS, help=argparse.SUPPRESS)  # one measurement
    args = parser.parse_args()
    if args.variant:
        print(json.dumps(measure(args.model, args.variant, args.batch, args.length)))
        return
    from transformers import AutoConfig

    vocab = AutoConfig.from_pretrained(args.model).vocab_size
    one = args.batch * args.length * vocab * 4 / 2**20
    print(f"{args.model}: {args.batch} x {args.length} tokens, vocab {vocab}: (B, L, V) float32 {one:.0f} MB")
    print("| variant | added peak MB | in (B, L, V) tensors | seconds |\n|---|---|---|---|")
    for variant in VARIANTS:
        command = [sys.executable, __file__, "--model", args.model, "--batch", str(args.batch)]
        command += ["--length", str(args.length), "--variant", variant]
        result = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
        peak = result["added_peak_mb"]
        print(f"| {variant} | {peak:.0f} | {peak / one:.1f} | {result['seconds']:.1f} |")


if __name__ == "__main__":
    main()
