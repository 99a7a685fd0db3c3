"""Plot a run's reward curve (rollout and eval mean reward per step) from its metrics.jsonl.

python examples/plot_reward_curve.py runs/tooluse-tiny-cpu docs/trainer_reward_curve.png
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from gfcr.trainers.logging import read_metrics  # noqa: E402


def main(run_dir: str, out: str, title: str | None = None) -> None:
    metrics = read_metrics(run_dir)
    fig, ax = plt.subplots(figsize=(7, 3.6), dpi=120)
    rollout = [(m["step"], m["rollout/reward_mean"]) for m in metrics if "rollout/reward_mean" in m]
    evals = [(m["step"], m["eval/reward_mean"]) for m in metrics if "eval/reward_mean" in m]
    sft_end = max((m["step"] for m in metrics if "loss/sft_nll" in m), default=0)
    if rollout:
        ax.plot(
            *zip(*rollout, strict=True), color="#9ab", lw=1, label="rollout reward (RL steps, 64 samples)"
        )
    if evals:
        ax.plot(*zip(*evals, strict=True), "o-", color="#c33", ms=3, label="eval reward (64 fixed episodes)")
    if sft_end:
        ax.axvspan(0, sft_end, color="#eee", zorder=0)
        ax.text(sft_end / 2, 1.02, "SFT warm start", ha="center", fontsize=8)
    ax.axhline(0.8, color="#555", ls=":", lw=1)
    ax.set(xlabel="optimizer step", ylabel="mean reward", ylim=(-0.02, 1.08))
    ax.set_title(title or Path(run_dir).name, fontsize=9)
    ax.legend(loc="center right", fontsize=8)
    fig.tight_layout()
    fig.savefig(out)


if __name__ == "__main__":
    main(*sys.argv[1:4])
