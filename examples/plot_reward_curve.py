"""Plot reward curves (rollout and held-out eval mean reward per step) from runs' metrics.jsonl.

One run, or several (seeds of one config: each is drawn, and the eval curves' mean):

python examples/plot_reward_curve.py docs/trainer_reward_curve.png runs/tooluse-tiny-cpu
python examples/plot_reward_curve.py docs/smollm2_reward_curve.png runs/smollm2-demo/seed*
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from gfcr.trainers.logging import read_metrics  # noqa: E402


def series(metrics: list[dict], key: str) -> list[tuple[int, float]]:
    return [(m["step"], m[key]) for m in metrics if key in m]


def main(out: str, *run_dirs: str) -> None:
    fig, ax = plt.subplots(figsize=(7, 3.6), dpi=120)
    evals = []
    for i, run_dir in enumerate(run_dirs):
        metrics = read_metrics(run_dir)
        first = i == 0  # one legend entry per kind of curve
        if rollout := series(metrics, "rollout/reward_mean"):
            label = "rollout reward (each step)" if first else None
            ax.plot(*zip(*rollout, strict=True), color="#9ab", lw=0.8, label=label)
        if held_out := series(metrics, "eval/reward_mean"):
            label = "held-out eval" if first else None
            ax.plot(*zip(*held_out, strict=True), "o-", color="#e99", ms=2, lw=0.8, label=label)
            evals.append(dict(held_out))
        sft_end = max((m["step"] for m in metrics if "loss/sft_nll" in m), default=0)
        if sft_end and first:
            ax.axvspan(0, sft_end, color="#eee", zorder=0)
            ax.text(sft_end / 2, 1.02, "SFT warm start", ha="center", fontsize=8)
    common = sorted(set.intersection(*(set(e) for e in evals))) if len(evals) > 1 else []
    if common:
        mean = [np.mean([e[step] for e in evals]) for step in common]
        label = f"held-out eval, mean of {len(evals)} seeds"
        ax.plot(common, mean, "o-", color="#c33", ms=4, lw=2, label=label)
    ax.set(xlabel="optimizer step", ylabel="mean reward", ylim=(-0.02, 1.05))
    ax.set_title(", ".join(Path(run).name for run in run_dirs), fontsize=9)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(out)


if __name__ == "__main__":
    main(*sys.argv[1:])
