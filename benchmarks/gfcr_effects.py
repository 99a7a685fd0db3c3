"""The effect of each GFCR module, measured on synthetic workloads whose truth is known.

BernoulliPrompts: 512 prompts with known success probabilities (30% hopeless, p < 0.02; 25%
solved, p > 0.98; 45% open, p uniform in [0.05, 0.95]), groups of K = 8. ShopTools: a tool-use
family where a procedure learnt on one task solves the others of its kind.

    .venv/bin/python benchmarks/gfcr_effects.py [--seed 0] [--steps 20]

Prints one Markdown table per measurement (docs/benchmarks.md holds a run's output).
"""

from __future__ import annotations

import argparse

import numpy as np

from gfcr.control import (
    BudgetScheduler,
    DynamicSampling,
    EarlyStopping,
    GresoSelector,
    PromptHistory,
    ThompsonSelector,
    UniformSelector,
    VarianceSelector,
    is_informative,
    observe,
)
from gfcr.generate import group_by_task
from gfcr.replay import ReplayBuffer
from gfcr.skills import SkillLibrary, skill_tool
from gfcr.workloads import KINDS, BernoulliPrompts, ShopTools

K, GROUPS = 8, 32


def workload(seed: int, n: int = 512) -> list[float]:
    rng = np.random.default_rng(seed)
    kind = rng.choice(3, size=n, p=[0.30, 0.25, 0.45])
    return [
        float(rng.uniform(0, 0.02) if k == 0 else rng.uniform(0.98, 1) if k == 1 else rng.uniform(0.05, 0.95))
        for k in kind
    ]


def informative(group) -> bool:
    return is_informative([t.total_reward for t in group])


def dynamic_sampling(seed: int, steps: int) -> list[tuple]:
    rows = []
    for name, selector, filtering in [
        ("uniform, no filter (GRPO)", UniformSelector(), False),
        ("DAPO dynamic sampling", UniformSelector(), True),
        ("dynamic sampling + GRESO skip", GresoSelector(), True),
        ("dynamic sampling + Thompson (VADE)", ThompsonSelector(K), True),
    ]:
        env, history, rng = (
            BernoulliPrompts(workload(seed), seed=seed),
            PromptHistory(),
            np.random.default_rng(seed),
        )
        sampler = DynamicSampling(
            GROUPS,
            K,
            oversample=1.0 if not filtering else 1.5,
            max_rounds=50,
            filter_groups=filtering,
            selector=selector,
        )
        delivered = zero = 0
        for _ in range(steps):
            batch = sampler.collect(env.run, env.task_ids, history, rng)
            delivered += len(batch.groups)
            zero += sum(not informative(g) for g in batch.groups.values())
        rows.append(
            (
                name,
                f"{zero / delivered:.1%}",
                f"{env.samples / steps:.0f}",
                f"{(delivered - zero) / env.samples * 1000:.1f}",
            )
        )
    return rows


def selection(seed: int, steps: int) -> list[tuple]:
    rows = []
    probs = workload(seed)
    truth = {f"synthetic/{i}": 1 - p**K - (1 - p) ** K for i, p in enumerate(probs)}
    for name, selector in [
        ("uniform", UniformSelector()),
        ("GRESO", GresoSelector()),
        ("VCRL (variance)", VarianceSelector()),
        ("Thompson (VADE)", ThompsonSelector(K)),
    ]:
        env, history, rng = BernoulliPrompts(probs, seed=seed), PromptHistory(), np.random.default_rng(seed)
        shares = []
        for _ in range(steps):
            chosen = selector.select(env.task_ids, 2 * GROUPS, history, rng)
            groups = group_by_task(env.run(dict.fromkeys(chosen, K)))
            observe(history, groups)
            shares.append(np.mean([informative(g) for g in groups.values()]))
        rows.append((name, f"{np.mean(shares[: steps // 4]):.1%}", f"{np.mean(shares[-steps // 2 :]):.1%}"))
    best = sorted(truth.values(), reverse=True)[: 2 * GROUPS]
    rows.append(("oracle (true p, top by P(informative))", f"{np.mean(best):.1%}", f"{np.mean(best):.1%}"))
    return rows


def early_stopping(seed: int) -> list[tuple]:
    rows = []
    probs = workload(seed)
    for rounds in (2, 8):
        env = BernoulliPrompts(probs, seed=seed)
        history = PromptHistory()
        for _ in range(rounds):  # earlier epochs over the dataset
            observe(history, group_by_task(env.run(dict.fromkeys(env.task_ids, K))))
        env.samples = 0
        stopping = EarlyStopping(K, wave=2, confidence=0.9)
        draw = stopping.sample(env.run, dict.fromkeys(env.task_ids, K), history)
        observe(history, draw.groups)
        # counterfactual: draw the rest of each stopped group; the decision was right if it stays all-equal
        wrong = 0
        for task_id, saved in draw.stopped.items():
            rest = [t.total_reward for t in env.run({task_id: saved})]
            seen = history.get(task_id).last_rewards[-(K - saved) :]
            wrong += is_informative([*seen, *rest])
        full = K * len(probs)
        rows.append(
            (
                f"{rounds} earlier epochs",
                f"{full}",
                f"{draw.samples}",
                f"{1 - draw.samples / full:.1%}",
                f"{1 - wrong / len(probs):.2%}",
                f"{wrong}",
            )
        )
    return rows


def budget(seed: int, steps: int) -> list[tuple]:
    rows = []
    probs = workload(seed)
    for name, allocate in [("uniform K=8", False), ("BudgetScheduler (uncertainty)", True)]:
        env, history, rng = BernoulliPrompts(probs, seed=seed), PromptHistory(), np.random.default_rng(seed)
        useful = 0
        for _ in range(steps):
            chosen = UniformSelector().select(env.task_ids, 2 * GROUPS, history, rng)
            plan = (
                BudgetScheduler(2, 16).allocate(chosen, history, samples=GROUPS * K)
                if allocate
                else dict.fromkeys(chosen[:GROUPS], K)
            )
            groups = group_by_task(env.run(plan))
            observe(history, groups)
            useful += sum(informative(g) for g in groups.values())
        rows.append((name, f"{GROUPS * K}", f"{useful / steps:.1f}"))
    return rows


def replay_rescue(seed: int, epochs: int = 6) -> list[tuple]:
    rng = np.random.default_rng(seed)
    probs = list(rng.uniform(0.02, 0.3, size=256))  # hard prompts: many all-wrong groups
    env, buffer = BernoulliPrompts(probs, seed=seed), ReplayBuffer("sqlite://")
    all_wrong = rescued = 0
    for _ in range(epochs):
        for group in group_by_task(env.run(dict.fromkeys(env.task_ids, K))).values():
            if not any(t.total_reward for t in group):
                all_wrong += 1
                rescued += buffer.rescue(group)[1]
            buffer.store_many(group)
    return [
        (
            f"{epochs} epochs × 256 hard prompts, K=8",
            f"{all_wrong}",
            f"{rescued}",
            f"{rescued / all_wrong:.1%}",
        )
    ]


def skills(seed: int) -> list[tuple]:
    family = ShopTools(seed=seed)
    train, test = family.tasks(40, prefix="train"), family.tasks(400, prefix="test")
    library = SkillLibrary("sqlite://")
    for task in train:
        for _ in range(8):
            trajectory = family.episode(task)
            if trajectory.total_reward:
                library.extract(trajectory)
                break
    guessed = np.mean([family.episode(t).total_reward for t in test])
    solved = []
    for task in test:
        found = library.retrieve(task.prompt, 1)
        if not found:
            solved.append(False)
            continue
        answer = skill_tool(found[0], family.tools)(
            **{p: task.metadata["params"][p] for p in found[0].parameters}
        )
        solved.append(abs(answer - task.gold) < 1e-9)
    return [
        ("no skills (agent guesses the procedure)", "—", f"{guessed:.1%}"),
        ("skill library (BM25 top-1, called as a tool)", f"{len(library)}", f"{np.mean(solved):.1%}"),
    ]


def table(header: tuple, rows: list[tuple]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    print(f"### Dynamic sampling ({GROUPS} groups of K={K} per step, {args.steps} steps)\n")
    print(
        table(
            (
                "sampler",
                "zero-variance share reaching the trainer",
                "samples per step",
                "informative groups per 1,000 samples",
            ),
            dynamic_sampling(args.seed, args.steps),
        )
    )
    print(f"\n### Prompt selection ({2 * GROUPS} prompts per step, no filter, {2 * args.steps} steps)\n")
    print(
        table(
            ("selector", "informative share, first quarter", "informative share, second half"),
            selection(args.seed, 2 * args.steps),
        )
    )
    print("\n### Early stopping (K=8, waves of 2, confidence 0.9, 512 prompts)\n")
    print(
        table(
            (
                "history",
                "samples, full groups",
                "samples, early stopping",
                "saved",
                "equal keep/drop decisions",
                "informative groups lost",
            ),
            early_stopping(args.seed),
        )
    )
    print(f"\n### Budget allocation (same {GROUPS * K} samples per step, {args.steps} steps)\n")
    print(
        table(
            ("allocation", "samples per step", "informative groups per step"), budget(args.seed, args.steps)
        )
    )
    print("\n### Replay rescue (AR3PO response reuse)\n")
    print(
        table(
            ("workload", "all-wrong groups", "rescued from the buffer", "share rescued"),
            replay_rescue(args.seed),
        )
    )
    print(f"\n### Skill transfer (ShopTools: {len(KINDS)} kinds, 40 training tasks, 400 new tasks)\n")
    print(table(("agent", "skills learnt", "new tasks solved"), skills(args.seed)))


if __name__ == "__main__":
    main()
