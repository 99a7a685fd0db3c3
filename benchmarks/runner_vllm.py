"""On a GPU: tokens/s of `vllm:` through the gfcr runner ÷ vLLM's own `generate` on the same prompts.

    python benchmarks/runner_vllm.py --json OUT.json [--model DIR] [--episodes 256] [--max-tokens 256]

Without `--model`, a random Qwen2-style model is written first (`gfcr tiny-model`, head size 64,
which vLLM's attention kernels support; `--hidden-size`/`--layers` set its size). The same
`VLLMPolicy` (one `vllm.LLM`) serves both sides:
- vLLM alone: one `LLM.generate` call over every episode's prompt ids, with the sampling settings
  the policy itself would send (`VLLMPolicy.sampling_params`);
- the runner: `Runner(policy, concurrency=episodes)` over the same single-turn `gfcr/Math-v0`
  episodes (so the same prompts, seeds and settings), token-in-token-out on.
Each side runs once to warm up, then `--repeats` times; the best run of each is reported (the
random model rarely samples its end token, so both generate close to max_tokens per prompt).
Goal: ratio ≥ 0.9.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import gymnasium as gym

from gfcr.agents import Runner, RunnerConfig, SamplingParams, episodes_for_env
from gfcr.agents.policies.tiny_model import write_tiny_model
from gfcr.agents.policies.vllm import VLLMPolicy
from gfcr.agents.runner.episode import Episode


def vllm_alone(policy: VLLMPolicy, specs, sampling: SamplingParams) -> tuple[float, int]:
    """Seconds and tokens of one `LLM.generate` call over the episodes' first prompts."""
    from vllm.inputs import TokensPrompt

    env = gym.make("gfcr/Math-v0", **specs[0].env.kwargs)
    requests = []
    for spec in specs:
        episode = Episode(
            policy, spec.env.env_id, env.reset(seed=spec.seed, options={"task_id": spec.task_id})
        )
        requests.append(episode.request(replace(sampling, seed=spec.seed)))
    prompts = [TokensPrompt(prompt_token_ids=list(r.prompt_ids)) for r in requests]
    params = [policy.sampling_params(r, len(r.prompt_ids)) for r in requests]
    started = time.perf_counter()
    outputs = policy.llm.generate(prompts, params, use_tqdm=False)
    seconds = time.perf_counter() - started
    return seconds, sum(len(o.outputs[0].token_ids) for o in outputs)


def through_runner(policy: VLLMPolicy, specs, sampling: SamplingParams) -> tuple[float, int]:
    result = Runner(policy, RunnerConfig(concurrency=len(specs), sampling=sampling)).run(specs)
    assert result.failed == 0, [t.failure for t in result.trajectories if t.failure][:3]
    return result.seconds, sum(t.cost.tokens_out for t in result.trajectories)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, help="model directory (default: a random model written here)")
    parser.add_argument("--hidden-size", type=int, default=1024)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--episodes", type=int, default=256)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    model = args.model or write_tiny_model(
        tempfile.mkdtemp(),
        vocab_size=4096,
        hidden_size=args.hidden_size,
        num_layers=args.layers,
        num_heads=args.hidden_size // 64,
    )
    policy = VLLMPolicy(model, gpu_memory_utilization=0.5)
    specs = episodes_for_env("gfcr/Math-v0", args.episodes)
    sampling = SamplingParams(temperature=1.0, max_tokens=args.max_tokens)
    runs: dict[str, list[dict]] = {"vllm_generate": [], "runner": []}
    for name, measure in (("vllm_generate", vllm_alone), ("runner", through_runner)):
        measure(policy, specs[: min(32, len(specs))], sampling)  # warm-up
        for _ in range(args.repeats):
            seconds, tokens = measure(policy, specs, sampling)
            runs[name].append({"seconds": seconds, "tokens": tokens, "tokens_per_s": tokens / seconds})
    best = {name: max(r["tokens_per_s"] for r in rs) for name, rs in runs.items()}
    result = {
        "model": str(model),
        "episodes": args.episodes,
        "max_tokens": args.max_tokens,
        "runs": runs,
        "vllm_generate_tokens_per_s": best["vllm_generate"],
        "runner_tokens_per_s": best["runner"],
        "ratio": best["runner"] / best["vllm_generate"],
    }
    print("| vLLM generate | runner | runner ÷ vLLM |\n|---|---|---|")
    print(f"| {best['vllm_generate']:,.0f} tok/s | {best['runner']:,.0f} tok/s | {result['ratio']:.3f} |")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
