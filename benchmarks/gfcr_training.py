"""GFCR modules inside training, at an equal sample budget: which ones make learning cheaper?

Each variant trains the same config with `gfcr train` for several seeds, every run stopping once RL
has generated `--budget` episodes (dropped groups included: dynamic sampling pays for what it
throws away). Per variant, over seeds (mean ± 95% t-interval):

- held-out eval reward at the end of the budget, and the best one seen;
- samples, policy tokens and seconds until the held-out eval first reaches `--threshold`
  (runs that never reach it count as not reached);
- the share of zero-variance groups that reached the update (no gradient signal);
- the paired difference of the final held-out reward against the baseline variant (`--baseline`,
  default grpo) on the same seeds; an interval that contains zero is called "no difference shown";
- at equal tokens: the held-out reward of each run's last evaluation within the policy tokens the
  thriftiest run spent (a method that samples longer answers or wider trees spends more per sample),
  and its paired difference against the baseline;
- what each method does to the rollouts, its mechanism, as means over steps: the zero-variance
  share (DAPO, GRESO), episodes generated per trained group (dynamic sampling, VCRL, VADE), policy
  tokens per trained sample (trees), response length (ShorterBetter), the mean |advantage| (the
  signal SEC's and VCRL's selection seeks), groups rescued by replay (AR3PO), the importance ratio
  of replayed samples (RePO), the clipped share of the loss (GSPO clips whole sequences), the
  semantic entropy SEED-GRPO scales advantages by, the share of rewarded episodes the verifier
  rejects (TTRL's majority-vote labels, a judge's reward), the episodes a judge could not score and
  the units (lines) a PRM scored or left unscored per step, and the pool's prompts GRESO's filter
  skipped per step; columns no run moved are left out.

`--recipes NAME ...` compares recipes instead: each `examples/methods/NAME.toml` is a variant of
its own (the recipes share their model, task and sizes); with `--task CONFIG`, each recipe's method
(its [loss] and pipeline sections) runs on that config's model, task and sizes instead, e.g.

    python benchmarks/gfcr_training.py --recipes grpo dapo greso --seeds 5 --budget 512 \
        --threshold 0.2 --set threads=1 --runs runs/methods-math-512 --keep docs/bench_methods/math \
        --figure docs/bench_methods_math.png --json docs/bench_methods_math.json
    python benchmarks/gfcr_training.py --recipes grpo dapo --task \
        benchmarks/configs/tooluse_smollm2_from_sft.toml --seeds 5 --budget 256 --threshold 0.6 \
        --runs runs/methods-tooluse-256 --keep docs/bench_methods/tooluse

Two runs at a time on 2 cores: one torch thread each (`--set threads=1`); two threads each
oversubscribe the cores and made every step 1.5-3x slower.

    python benchmarks/gfcr_training.py --config examples/math_smollm2_cpu.toml --seeds 3 \\
        --budget 512 --threshold 0.2 --set log.eval_every=2 --set env.num_tasks=32 \\
        --json docs/bench_gfcr_training.json

(docs/benchmarks.md, "GFCR modules inside training", has the results and each run's metrics.)

Runs go to runs/gfcr-training/<variant>/seed<k>; an existing finished run is read, not re-run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

from gfcr.trainers.config import PIPELINE_SECTIONS, read_toml
from gfcr.trainers.logging import read_metrics

VARIANTS: dict[str, list[str]] = {  # `gfcr train --set` overrides on top of the config
    "grpo": [],
    # GRPO with early stopping's larger effective step on examples/math_smollm2_cpu.toml: leaving the
    # 42% zero-variance groups out of DAPO's token mean scales the step by about 1 / (1 - 0.42)
    "grpo lr 8.5e-4": ["optim.lr=8.5e-4"],
    "dynamic sampling": ["control.dynamic_sampling=true"],
    "thompson selection": ['control.selector="thompson"'],
    "vcrl selection": ['control.selector="vcrl"'],
    "dynamic + thompson": ["control.dynamic_sampling=true", 'control.selector="thompson"'],
    # early stopping that also drops full groups without a spread, refilling nothing (one round):
    # the variant measured in docs/benchmarks.md; early stopping alone keeps full groups
    "early stopping": [
        "control.early_stopping=true",
        "control.dynamic_sampling=true",
        "control.max_rounds=1",
        "control.oversample=1.0",
    ],
    "replay rescue": ["replay.enabled=true", "replay.rescue=true"],
    # a difficulty curriculum: each category's level moves with its success (a pool with levels)
    "curriculum": ['control.curriculum="band"'],
    # the run's skill library, retrieved into the prompts (benchmarks/configs/shop_skills_tiny.toml)
    "skills": ["replay.skills.enabled=true", 'generate.guidance.kind="skills"'],
    # the same library's top procedures offered as callable tools (skill_<name>) instead
    "skill tools": ["replay.skills.enabled=true", "replay.skills.as_tools=true"],
    # asynchronous training: the next steps' rollouts generated while this step's update runs
    "async staleness 1": ["async.max_staleness=1"],
    "async staleness 2": ["async.max_staleness=2"],
}
T_975 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26}  # Student's t


def method_overrides(recipe: str) -> list[str]:
    """A recipe's method as `gfcr train --set` overrides: its [loss] and pipeline sections (what the
    recipes of examples/methods/ differ in), to run that method on another task's config.

    >>> method_overrides("examples/methods/sec.toml")
    ['loss.name="grpo"', 'control.selector="sec"', 'control.sec_temperature=1.0', 'control.sec_step_size=0.5']
    """
    data = read_toml(recipe)

    def leaves(prefix: str, value: Any) -> list[str]:
        if isinstance(value, dict):
            return [o for key, inner in value.items() for o in leaves(f"{prefix}.{key}", inner)]
        return [f"{prefix}={json.dumps(value)}"]  # JSON's scalars and arrays read back as TOML

    return [
        o
        for section in ("loss", *PIPELINE_SECTIONS)
        if section in data
        for o in leaves(section, data[section])
    ]


def finished(out: Path) -> bool:
    """Whether `out` holds a run that spent its budget (one stopped by its time limit did not)."""
    metrics = read_metrics(out) if (out / "metrics.jsonl").exists() else []
    return any(m.get("run/stopped_for") == "sample_budget" for m in metrics)


def run(
    config: str, variant: list[str], seed: int, budget: int, out: Path, base: list[str]
) -> list[dict[str, Any]]:
    """One training run (skipped when `out` already holds a finished one); its metrics."""
    if not finished(out):
        overrides = [
            f"seed={seed}",
            f'out_dir="{out}"',
            f"sample_budget={budget}",
            "steps=100000",
            "log.progress=false",
        ]
        command = [sys.executable, "-m", "gfcr", "train", config, "--no-resume"]
        for override in overrides + variant + base:  # the user's --set last: it wins
            command += ["--set", override]
        print(f"{out}: {' '.join(command[3:])}", flush=True)
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return read_metrics(out)


def summarise(runs: list[list[dict[str, Any]]], threshold: float) -> dict[str, Any]:
    """The variant's figures over its seeds."""
    finals, bests, to_threshold, zero_variance, updates, acted = [], [], [], [], [], []
    for metrics in runs:
        updates.append(sum(m.get("update/skipped") == 0.0 for m in metrics if "rollout/samples_total" in m))
        acted.append(  # what the module did: groups dropped (dynamic sampling, early stopping), rescued
            sum(m.get("rollout/dropped_groups", 0) + m.get("rollout/rescued", 0) for m in metrics)
        )
        evals = [m for m in metrics if "eval/reward_mean" in m]
        finals.append(final_eval(metrics))
        bests.append(max(m["eval/reward_mean"] for m in evals))
        zero_variance.append(
            statistics.mean(
                m["rollout/zero_variance_share"] for m in metrics if "rollout/zero_variance_share" in m
            )
        )
        reached = next((m for m in evals if m["eval/reward_mean"] >= threshold), None)
        if reached is not None:
            state = _state_at(metrics, reached["step"])
            to_threshold.append(state)
    return {
        "updates": interval(updates),
        "groups_dropped_or_rescued": interval(acted),
        "final_eval": interval(finals),
        "best_eval": interval(bests),
        "zero_variance_share": interval(zero_variance),
        "reached_threshold": f"{len(to_threshold)}/{len(runs)}",
        **{
            f"{key}_to_threshold": interval([s[key] for s in to_threshold])
            for key in ("samples", "tokens", "seconds")
        },
    }


MECHANISMS = {  # column -> (numerator, denominator or None): means over a run's RL steps
    "zero-variance share": ("rollout/zero_variance_share", None),
    "episodes per trained group": ("generate/episodes", "rollout/groups"),
    "mean abs advantage": ("credit/advantage_abs_mean", None),
    "tokens per trained sample": ("generate/tokens", "credit/samples"),
    "response tokens": ("rollout/completion_tokens_mean", None),
    "groups rescued": ("keep/rescued", None),
    "replay ratio": ("replay/ratio_mean", None),
    "clipped share": ("loss/clip_frac", None),
    "semantic entropy": ("judge/semantic_entropy_mean", None),
    "rewarded-incorrect share": ("diagnose/rewarded_incorrect_share", None),
    "judge failures per step": ("judge/failures", None),
    "PRM units scored per step": ("judge/process_scored", None),
    "PRM units unscored per step": ("judge/process_unscored", None),
    "prompts skipped (GRESO)": ("choose/greso/skipped", None),
}


def mechanisms(runs: list[list[dict[str, Any]]]) -> dict[str, dict[str, float | int] | None]:
    """Each mechanism's mean over a run's steps that log it, over the runs (None where none does)."""
    figures = {}
    for column, (key, per) in MECHANISMS.items():
        means = []
        for metrics in runs:
            steps = [m for m in metrics if key in m and (per is None or m.get(per))]
            values = [m[key] / m[per] if per else m[key] for m in steps]
            if values:
                means.append(statistics.mean(values))
        figures[column] = interval(means)
    return figures


def eval_within(metrics: list[dict[str, Any]], tokens: float) -> float | None:
    """The held-out reward of the run's last evaluation once it had spent at most `tokens` policy
    tokens (None if it evaluated none by then)."""
    spent = 0.0
    within = None
    for m in metrics:
        spent = m.get("rollout/tokens_total", spent)
        if "eval/reward_mean" in m and spent <= tokens:
            within = m["eval/reward_mean"]
    return within


def final_eval(metrics: list[dict[str, Any]]) -> float:
    """The last held-out eval reward of a run."""
    return [m for m in metrics if "eval/reward_mean" in m][-1]["eval/reward_mean"]


def paired(variant: dict[int, float], baseline: dict[int, float]) -> dict[str, float | int] | None:
    """The variant's final held-out reward minus the baseline's, seed by seed (seeds both finished)."""
    return interval([variant[seed] - baseline[seed] for seed in sorted(set(variant) & set(baseline))])


def verdict(difference: dict[str, float | int] | None) -> str:
    """A paired difference in words: its interval, and whether it excludes zero."""
    if difference is None:
        return "—"
    if difference["n"] < 2:
        return f"{difference['mean']:.3f} (one pair: no interval)"
    low, high = difference["mean"] - difference["ci95"], difference["mean"] + difference["ci95"]
    said = "no difference shown" if low <= 0 <= high else "better" if low > 0 else "worse"
    return f"{show(difference, 3)} ({said})"


def _state_at(metrics: list[dict[str, Any]], step: int) -> dict[str, float]:
    """Samples, tokens and RL seconds spent up to `step`."""
    upto = [m for m in metrics if m["step"] <= step and "rollout/samples_total" in m]
    return {
        "samples": upto[-1]["rollout/samples_total"] if upto else 0,
        "tokens": upto[-1]["rollout/tokens_total"] if upto else 0,
        "seconds": sum(m.get("perf/step_s", 0.0) for m in upto),
    }


def interval(values: list[float]) -> dict[str, float | int] | None:
    """Mean and 95% t-interval half-width (None with no value)."""
    if not values:
        return None
    mean = statistics.mean(values)
    half = (
        T_975.get(len(values) - 1, 1.96) * statistics.stdev(values) / len(values) ** 0.5
        if len(values) > 1
        else 0.0
    )
    return {"mean": mean, "ci95": half, "n": len(values)}


def curve(metrics: list[dict[str, Any]], grid: list[float]) -> list[float]:
    """A run's held-out reward at each number of RL samples in `grid`, interpolated linearly between
    its evaluations (a method's steps can differ in samples: dynamic sampling refills)."""
    samples = {m["step"]: m["rollout/samples_total"] for m in metrics if "rollout/samples_total" in m}
    points = [(samples.get(m["step"], 0), m["eval/reward_mean"]) for m in metrics if "eval/reward_mean" in m]
    xs, ys = zip(*sorted(points), strict=True)
    return [float(y) for y in np.interp(grid, xs, ys)]


def plot(
    metrics: dict[str, dict[int, list[dict[str, Any]]]], budget: int, title: str, out: str, baseline: str
) -> None:
    """One figure: held-out reward against RL samples, the mean over seeds with its 95% t-band; one
    panel per variant, each beside the baseline's curve (in grey), so that many methods stay legible."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    grid = list(np.linspace(0, budget, 33))

    def band(ax: Any, variant: str, color: str) -> None:
        curves = np.array([curve(m, grid) for m in metrics[variant].values()])
        mean = curves.mean(axis=0)
        half = (
            T_975.get(len(curves) - 1, 1.96) * curves.std(axis=0, ddof=1) / len(curves) ** 0.5
            if len(curves) > 1
            else np.zeros_like(mean)
        )
        ax.plot(grid, mean, lw=1.6, color=color, label=f"{variant} ({len(curves)} seeds)")
        ax.fill_between(grid, mean - half, mean + half, color=color, alpha=0.15, lw=0)

    panels = [v for v in metrics if v != baseline] or list(metrics)
    cols = min(len(panels), 4)
    rows = -(-len(panels) // cols)
    size = (2.9 * cols + 0.6, 2.4 * rows + 0.7)
    fig, axes = plt.subplots(rows, cols, figsize=size, dpi=120, sharex=True, sharey=True, squeeze=False)
    for ax, variant in zip(axes.flat, panels, strict=False):
        if baseline in metrics and variant != baseline:
            band(ax, baseline, "0.45")
        band(ax, variant, "C0")
        ax.set(xlim=(0, budget))
        ax.legend(fontsize=6, loc="upper left")
    for ax in axes.flat[len(panels) :]:
        ax.set_visible(False)
    for ax in axes.flat[max(len(panels) - cols, 0) : len(panels)]:  # the lowest panel of each column
        ax.xaxis.set_tick_params(labelbottom=True)
        ax.set_xlabel("RL samples (episodes generated)", fontsize=7)
    for ax in axes[:, 0]:
        ax.set_ylabel("held-out reward", fontsize=7)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(out)


def keep(metrics_dirs: dict[str, dict[int, Path]], into: Path) -> None:
    """Copy each finished run's metrics.jsonl to into/VARIANT/seedK/ (the raw record under docs/)."""
    for variant, outs in metrics_dirs.items():
        for seed, out in outs.items():
            if finished(out):
                kept = into / variant.replace(" ", "-") / f"seed{seed}"
                kept.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(out / "metrics.jsonl", kept / "metrics.jsonl")


def show(value: dict[str, float | int] | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value['mean']:.{digits}f} ± {value['ci95']:.{digits}f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="examples/tooluse_tiny_cpu.toml")
    parser.add_argument("--variants", nargs="*", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--recipes", nargs="*", default=[], help="examples/methods/NAME.toml, each a variant")
    parser.add_argument(
        "--task",
        help="with --recipes: run each recipe's method ([loss] and pipeline sections) on this config "
        "(a task's model, env and sizes, no method) instead of the recipes' shared math task",
    )
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--budget", type=int, default=4096, help="RL episodes per run")
    parser.add_argument("--threshold", type=float, default=0.5, help="held-out eval reward to reach")
    parser.add_argument("--runs", default="runs/gfcr-training")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        dest="base",
        help="a `gfcr train --set` for every variant, over its own settings (e.g. a recipe's PRM scorer)",
    )
    parser.add_argument("--baseline", default="grpo", help="the variant paired differences are against")
    parser.add_argument("--json", help="write the summary here")
    parser.add_argument("--figure", help="draw held-out reward against samples, with bands, here")
    parser.add_argument("--keep", help="copy each finished run's metrics.jsonl under this folder")
    parser.add_argument(
        "--finished-only", action="store_true", help="run nothing: summarise the runs that are finished"
    )
    args = parser.parse_args()
    recipes = {name: f"examples/methods/{name}.toml" for name in args.recipes}
    variants = (  # name -> (config, overrides); a kept variant (dapo-before-af15f96) runs nothing
        {
            name: (args.task, [] if args.finished_only else method_overrides(path))
            for name, path in recipes.items()
        }
        if args.task
        else {name: (path, []) for name, path in recipes.items()}
        if recipes
        else {name: (args.config, VARIANTS[name]) for name in args.variants}
    )
    summary, finals, metrics, run_dirs = {}, {}, {}, {}
    for variant, (config, overrides) in variants.items():
        outs = {
            seed: Path(args.runs) / variant.replace(" ", "-") / f"seed{seed}" for seed in range(args.seeds)
        }
        if args.finished_only:
            outs = {seed: out for seed, out in outs.items() if finished(out)}
        run_dirs[variant] = outs
        runs = {seed: run(config, overrides, seed, args.budget, out, args.base) for seed, out in outs.items()}
        if runs:
            summary[variant] = summarise(list(runs.values()), args.threshold)
            summary[variant]["mechanisms"] = mechanisms(list(runs.values()))
            finals[variant] = {seed: final_eval(m) for seed, m in runs.items()}
            metrics[variant] = runs
    for variant, by_seed in finals.items():
        if variant != args.baseline and args.baseline in finals:
            summary[variant]["paired_vs_baseline"] = paired(by_seed, finals[args.baseline])
    spent = [m[-1].get("rollout/tokens_total", 0.0) for runs in metrics.values() for m in runs.values()]
    tokens = min(spent, default=0.0)  # the thriftiest run's policy tokens
    at_tokens = {
        variant: {seed: w for seed, m in runs.items() if (w := eval_within(m, tokens)) is not None}
        for variant, runs in metrics.items()
    }
    for variant, by_seed in at_tokens.items():
        summary[variant]["eval_at_equal_tokens"] = interval(list(by_seed.values()))
        if variant != args.baseline and args.baseline in at_tokens:
            summary[variant]["paired_at_equal_tokens"] = paired(by_seed, at_tokens[args.baseline])
    what = "recipes " + ", ".join(args.recipes) if args.recipes else args.config
    what += f" on {Path(args.task).stem}" if args.task else ""
    print(
        f"\n{what}: {args.budget} RL episodes per run, up to {args.seeds} seeds, threshold {args.threshold}"
    )
    columns = ["variant", "seeds", "updates", "groups dropped/rescued", "final held-out eval", "best"]
    columns += ["zero-variance share", "reached"]
    columns += ["samples to threshold", "tokens", "seconds", f"paired vs {args.baseline}"]
    print("| " + " | ".join(columns) + " |\n" + "|---" * len(columns) + "|")
    for variant, s in summary.items():
        cells = [
            variant,
            str(s["final_eval"]["n"]),
            show(s["updates"], 1),
            show(s["groups_dropped_or_rescued"], 1),
        ]
        cells += [show(s["final_eval"]), show(s["best_eval"]), show(s["zero_variance_share"])]
        cells += [
            s["reached_threshold"],
            *(show(s[f"{k}_to_threshold"], 0) for k in ("samples", "tokens", "seconds")),
            verdict(s.get("paired_vs_baseline")),
        ]
        print("| " + " | ".join(cells) + " |")
    print(
        f"\nAt equal tokens ({tokens:.0f} policy tokens, the thriftiest run's) and each method's mechanism:"
    )
    shown = [  # the mechanisms some run moved (a column of zeros or of nothing says nothing)
        column
        for column in MECHANISMS
        if any((value := s["mechanisms"][column]) is not None and value["mean"] for s in summary.values())
    ]
    columns = ["variant", "held-out at equal tokens", f"paired vs {args.baseline}", *shown]
    print("| " + " | ".join(columns) + " |\n" + "|---" * len(columns) + "|")
    for variant, s in summary.items():
        cells = [variant, show(s["eval_at_equal_tokens"]), verdict(s.get("paired_at_equal_tokens"))]
        cells += [show(s["mechanisms"][column]) for column in shown]
        print("| " + " | ".join(cells) + " |")
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "summary": summary}, indent=2))
    if args.figure:
        shared = "the recipes' math task" if recipes else Path(args.config).stem
        subject = Path(args.task).stem if args.task else shared
        title = f"{subject}: {args.budget} RL episodes per run, 95% bands; grey: {args.baseline}"
        plot(metrics, args.budget, title, args.figure, args.baseline)
    if args.keep:
        keep(run_dirs, Path(args.keep))


if __name__ == "__main__":
    main()
