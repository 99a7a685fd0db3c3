"""Memory and time of the update's token logprobs: gfcr's `token_logprobs` against autograd's
log-softmax and gather over every position (what most trainers do), and against gfcr's chunked
`SelectedLogprob` over every position (what `token_logprobs` did before it asked the model for
the logits of the loss positions alone, 2026-12-07).

One forward and backward pass of a (batch x length) micro-batch of random ids through a causal
LM (full weights, or `gfcr train`'s LoRA adapters on the attention projections with
`--lora-rank`), the first `--prompt` positions of each row prompt (loss mask 0), the rest
sampled tokens, each variant in its own process; reported: the peak resident memory the pass
added over the loaded model (`ru_maxrss` after, minus the resident size before), the fastest of
`--repeats` passes in seconds, and the size of one (batch, length, vocab) float32 tensor for scale.

    .venv/bin/python benchmarks/logprob_memory.py --model runs/smollm2 --batch 8 --length 300
    .venv/bin/python benchmarks/logprob_memory.py --model runs/smollm2 --batch 8 --length 180 --prompt 140 \
        --lora-rank 16
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

VARIANTS = ("autograd log-softmax", "gfcr chunked, every position", "gfcr token_logprobs")


def resident_mb() -> float:
    """The process's resident memory now, in MB (Linux)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * resource.getpagesize() / 2**20


def measure(
    model_path: str, variant: str, batch: int, length: int, prompt: int, lora_rank: int, repeats: int
) -> dict[str, float]:
    """`repeats` forward and backward passes of `variant` in this process: the added peak MB and
    the fastest pass's seconds."""
    import torch
    from transformers import AutoModelForCausalLM

    from gfcr.trainers.batching import MicroBatch, SelectedLogprob, token_logprobs

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32)
    if lora_rank:
        from peft import LoraConfig, get_peft_model

        targets = ["q_proj", "k_proj", "v_proj", "o_proj"]  # [model] lora_targets' default
        model = get_peft_model(
            model, LoraConfig(r=lora_rank, lora_alpha=2 * lora_rank, target_modules=targets)
        )
    ids = torch.randint(0, model.config.vocab_size, (batch, length))
    loss_mask = torch.zeros(batch, length - 1)
    loss_mask[:, max(0, prompt - 1) :] = 1.0  # position t predicts token t+1
    micro = MicroBatch(
        ids, torch.ones_like(ids), loss_mask, *(torch.zeros(batch, length - 1) for _ in range(3))
    )
    before = resident_mb()
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        if variant == "gfcr token_logprobs":
            logprobs = token_logprobs(model, micro)
        elif variant == "gfcr chunked, every position":
            logits = model(input_ids=ids, attention_mask=micro.attention_mask).logits
            logprobs = SelectedLogprob.apply(logits, ids[:, 1:])
        else:
            logits = model(input_ids=ids, attention_mask=micro.attention_mask).logits[:, :-1]
            logprobs = torch.log_softmax(logits.float(), dim=-1).gather(-1, ids[:, 1:, None]).squeeze(-1)
        (logprobs * loss_mask).sum().backward()
        seconds.append(time.perf_counter() - start)
        del logprobs
        model.zero_grad(set_to_none=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux
    return {"added_peak_mb": peak - before, "seconds": min(seconds)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="runs/smollm2")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--length", type=int, default=300)
    parser.add_argument("--prompt", type=int, default=0, help="leading prompt tokens of each row (no loss)")
    parser.add_argument("--lora-rank", type=int, default=0, help="> 0: LoRA adapters, as gfcr train's")
    parser.add_argument("--repeats", type=int, default=3, help="passes per variant; the fastest is reported")
    parser.add_argument("--variant", choices=VARIANTS, help=argparse.SUPPRESS)  # one measurement
    args = parser.parse_args()
    if args.variant:
        sizes = (args.batch, args.length, args.prompt, args.lora_rank, args.repeats)
        print(json.dumps(measure(args.model, args.variant, *sizes)))
        return
    from transformers import AutoConfig

    vocab = AutoConfig.from_pretrained(args.model).vocab_size
    one = args.batch * args.length * vocab * 4 / 2**20
    weights = f"LoRA r{args.lora_rank}" if args.lora_rank else "full weights"
    shape = f"{args.batch} x {args.length} tokens ({args.prompt} of them prompt), {weights}"
    print(f"{args.model}: {shape}, vocab {vocab}: (B, L, V) float32 {one:.0f} MB")
    print("| variant | added peak MB | in (B, L, V) tensors | seconds |\n|---|---|---|---|")
    for variant in VARIANTS:
        command = [sys.executable, __file__, "--model", args.model, "--batch", str(args.batch)]
        command += ["--length", str(args.length), "--prompt", str(args.prompt)]
        command += ["--lora-rank", str(args.lora_rank), "--repeats", str(args.repeats), "--variant", variant]
        result = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
        peak = result["added_peak_mb"]
        print(f"| {variant} | {peak:.0f} | {peak / one:.1f} | {result['seconds']:.1f} |")


if __name__ == "__main__":
    main()
