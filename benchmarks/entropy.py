"""What token entropy and semantic entropy cost per training step, measured.

    .venv/bin/python benchmarks/entropy.py [--steps 20] [--model runs/smollm2 | --model ""]

A step here is G = 8 prompts × K = 8 samples of up to T tokens, as the method recipes sample.

1. Token entropy, exact (`hf:`): the HF policy takes softmax → entr → sum of the (B, V) scores at
   every generated token. Timed alone on SmolLM2's vocabulary (V = 49,152) for B = 8 rows over
   T = 32 tokens, against a real `HFPolicy.generate` of the same shape with SmolLM2-135M (which
   includes it): the share of generation it takes.
2. Token entropy, estimated (`vllm:`, `openai:`): `topk_entropy` over 20 logprobs per token, for
   the G·K·T = 64 × 256 tokens of a step; and `mean_token_entropy` (the `generate/entropy_mean`
   metric) over those 64 trajectories.
3. Semantic entropy: `semantic_entropy` of each of the 8 groups of a step, on MATH-500 tasks of
   mmath with 8 answers each (the gold, equivalent rewrites, wrong numbers and closed forms,
   a non-answer), against the env's own verification of the same 64 answers (`check_answer`).
   Median of `--steps` steps (the equivalence caches warm after the first, as in training, where
   the same golds recur); the first step apart.

Prints Markdown tables (docs/benchmarks.md holds a run's output).
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections.abc import Callable

import torch

from gfcr.core import SamplingParams, Step, TokenData, Trajectory
from gfcr.core.messages import Message
from gfcr.core.policy import Request
from gfcr.envs.math import MathEnv, check_answer
from gfcr.filter.entropy import mean_token_entropy, topk_entropy
from gfcr.filter.semantic import semantic_entropy

G, K = 8, 8


def timed(run: Callable[[], object], repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        out.append(time.perf_counter() - started)
    return out


def exact_token_entropy(model: str) -> None:
    from gfcr.agents.policies.hf import HFPolicy

    rows, tokens = 8, 32
    policy = HFPolicy(model)
    vocab = policy.model.config.vocab_size
    scores = torch.randn(rows, vocab)

    def entropy_op() -> None:
        for _ in range(tokens):
            torch.special.entr(torch.softmax(scores, dim=-1)).sum(dim=-1)

    prompt = [Message("user", f"What is {i} + {i + 3}?") for i in range(rows)]
    sampling = SamplingParams(max_tokens=tokens, temperature=1.0, seed=0, stop=())
    requests = [Request((message,), sampling=sampling) for message in prompt]
    policy.generate(requests)  # warm
    generate = statistics.median(timed(lambda: policy.generate(requests), 3))
    op = statistics.median(timed(entropy_op, 5))
    print("| what | seconds | share of generation |")
    print("|---|---|---|")
    print(
        f"| `hf:` generate, {rows} rows × {tokens} tokens (SmolLM2-135M, V = {vocab}) | {generate:.3f} | 1 |"
    )
    print(f"| its exact entropies alone (softmax, entr, sum of ({rows}, {vocab}) × {tokens}) | {op:.4f} | "
          f"{op / generate:.1%} |")  # fmt: skip


def estimated_token_entropy(steps: int) -> None:
    tokens = 256
    generator = torch.Generator().manual_seed(0)
    tops = torch.log_softmax(torch.randn(G * K * tokens, 20, generator=generator), dim=-1).tolist()
    trajectories = []
    for i in range(G * K):
        data = TokenData([1])
        data.append([2] * tokens, sampled=True, logprobs=[0.0] * tokens, entropies=[1.0] * tokens)
        trajectories.append(Trajectory("e", f"t{i // K}", "?", tokens=data))
    topk = statistics.median(timed(lambda: [topk_entropy(top) for top in tops], max(3, steps // 4)))
    mean = statistics.median(timed(lambda: mean_token_entropy(trajectories), steps))
    print("| per step (64 samples × 256 tokens) | ms |")
    print("|---|---|")
    print(f"| `topk_entropy` over 20 logprobs, every token ({G * K * tokens}) | {topk * 1e3:.1f} |")
    print(f"| `mean_token_entropy` (the `generate/entropy_mean` metric) | {mean * 1e3:.2f} |")


def answers_for(gold: str) -> list[str]:
    """Eight answers to a task: two right as written, two equivalent rewrites, three wrong, one non-answer."""
    rewrite = (
        gold.replace("\\frac", "\\dfrac") if "\\frac" in gold else f"{gold}.0" if gold.isdigit() else gold
    )
    return [gold, f" {gold} ", rewrite, rewrite, "17", "\\frac{3}{7}", "2\\sqrt{2}", "no idea"]


def semantic(steps: int) -> None:
    env = MathEnv(dataset="mmath", split="MATH500")
    tasks = [env.tasks[i] for i in range(0, len(env.tasks), max(1, len(env.tasks) // G))][:G]
    groups = []
    for task in tasks:
        group = []
        for answer in answers_for(str(task.gold)):
            boxed = answer != "no idea"
            action = f"so \\boxed{{{answer}}}" if boxed else answer
            step = Step(action, "", 0.0, True, False, {"answer_extracted": boxed})
            group.append(Trajectory("gfcr/Math-v0", task.id, task.prompt, [step]))
        groups.append((task, group))

    def entropy_step() -> None:
        for _, group in groups:
            semantic_entropy(group)

    def verify_step() -> None:
        for task, group in groups:
            for t in group:
                if t.signals["answer_extracted"]:
                    check_answer(task, t.steps[-1].action.split("boxed{", 1)[1][:-1])

    first = timed(entropy_step, 1)[0]
    entropy = statistics.median(timed(entropy_step, steps))
    verify = statistics.median(timed(verify_step, steps))
    values = [round(semantic_entropy(group), 3) for _, group in groups]
    print(f"| per step ({G} groups × {K} answers, MATH-500) | ms |")
    print("|---|---|")
    print(f"| `semantic_entropy` of every group, first step (cold caches) | {first * 1e3:.1f} |")
    print(f"| `semantic_entropy` of every group, median of {steps} steps | {entropy * 1e3:.2f} |")
    print(f"| the env's own verification of the same answers (`check_answer`), median | {verify * 1e3:.2f} |")
    print(f"\nsemantic entropies (nats; ln 8 = {math.log(8):.3f}): {values}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument(
        "--model", default="runs/smollm2", help='an hf: model directory (SmolLM2-135M); "" skips part 1'
    )
    args = parser.parse_args()
    torch.set_num_threads(2)
    if args.model:
        print("### Token entropy, exact (hf:)\n")
        exact_token_entropy(args.model)
    print("\n### Token entropy, estimated over the top 20 (vllm:, openai:)\n")
    estimated_token_entropy(args.steps)
    print("\n### Semantic entropy\n")
    semantic(args.steps)


if __name__ == "__main__":
    main()
